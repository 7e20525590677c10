"""The tests mirror the tree: a module's own tests are found at a path its name gives, without searching.

``protocol/<mod>.py`` is tested in ``tests/protocol/test_<mod>.py``, ``streaming/<part>/<mod>.py`` in
``tests/<part>/test_<mod>.py`` (deeper folders alike) and ``streaming/<mod>.py`` in ``tests/streaming/test_<mod>.py``;
a leading underscore is dropped (``protocol/_crc.py`` → ``tests/protocol/test_crc.py``). Feature suites that cross
modules (``tests/realkafka``, ``tests/verdicts``, ``tests/dashboards``, ``tests/docs``, the Spark end-to-end files)
sit beside them under names of their own.

A mirrored file must import the module it is named after (or a name the module defines, through the package that
re-exports it): a file of that name that tests something else would send the reader to the wrong place.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "streaming")

#: Modules with no test file of their own, and why.
NO_OWN_TESTS = {
    # Python imports it by itself when a Spark worker starts (it is on the workers' path under that name); what it
    # sets up is checked where it matters, in the worker daemon's and the workers' import tests (tests/spark).
    "streaming/spark/worker_site/sitecustomize.py",
}


def mirrored_test(module: Path) -> Path:
    """Where the tests of ``module`` (a path relative to the repository) live."""
    parts = module.parts
    name = f"test_{module.stem.lstrip('_')}.py"
    if parts[0] == "protocol":
        folder = Path("tests", *parts[:-1])
    elif len(parts) == 2:  # streaming/<mod>.py
        folder = Path("tests", "streaming")
    else:  # streaming/<part>/.../<mod>.py
        folder = Path("tests", *parts[1:-1])
    return folder / name


def _modules() -> list[Path]:
    return sorted(p.relative_to(REPO) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
                  if p.name != "__init__.py")


def _dotted(module: Path) -> str:
    return ".".join(module.with_suffix("").parts)


def _imports(test_file: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(test_file.read_text(), str(test_file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _defines(module: Path) -> set[str]:
    """Names a module defines at its top level (functions, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse((REPO / module).read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _imports_module(test_file: Path, module: Path) -> bool:
    imported = _imports(test_file)
    dotted = _dotted(module)
    if dotted in imported:
        return True
    package = dotted.rpartition(".")[0]
    return any(f"{package}.{name}" in imported for name in _defines(module))


def test_the_rule_maps_each_kind_of_path():
    assert mirrored_test(Path("protocol/_crc.py")) == Path("tests/protocol/test_crc.py")
    assert mirrored_test(Path("protocol/fetch.py")) == Path("tests/protocol/test_fetch.py")
    assert mirrored_test(Path("streaming/config.py")) == Path("tests/streaming/test_config.py")
    assert mirrored_test(Path("streaming/kafka/fetcher.py")) == Path("tests/kafka/test_fetcher.py")
    assert mirrored_test(Path("streaming/offline/recording/replay.py")) == \
        Path("tests/offline/recording/test_replay.py")


def test_every_module_has_its_test_file():
    missing = [f"{m} -> {mirrored_test(m)}" for m in _modules()
               if m.as_posix() not in NO_OWN_TESTS and not (REPO / mirrored_test(m)).is_file()]
    assert not missing, "modules without their mirrored test file:\n" + "\n".join(missing)


def test_every_mirrored_test_file_imports_its_module():
    strays = []
    for m in _modules():
        test_file = REPO / mirrored_test(m)
        if test_file.is_file() and not _imports_module(test_file, m):
            strays.append(f"{mirrored_test(m)} does not import {_dotted(m)}")
    assert not strays, "\n".join(strays)


def test_the_exemptions_name_modules_that_exist():
    assert all((REPO / m).is_file() for m in NO_OWN_TESTS), NO_OWN_TESTS


def test_every_test_folder_is_a_package():
    """Same file names in two folders (``test_replay.py``) need each folder to be a package of its own."""
    loose = [d.relative_to(REPO).as_posix() for d in (REPO / "tests").rglob("*")
             if d.is_dir() and any(d.glob("test_*.py")) and not (d / "__init__.py").is_file()]
    assert not loose, loose
