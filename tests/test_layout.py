"""The layout is a map: no import circles (between modules, and between ``streaming``'s parts, its sub-packages and
the modules directly under it, which import each other only down the layers of ``LAYERS``), each part uses only
what its package docstring allows, and the README's Layout section names the folders that exist.

Imports are read with ``ast`` (not by importing), so every import counts: module level, inside functions and under
``TYPE_CHECKING`` alike. A circle hidden in a function is still a circle a reader has to untangle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "streaming")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules that ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    # A package's own __init__ re-exporting its modules is not a circle with those modules.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    assert _circles(_graph()) == []


def test_circle_detector_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _part(module: str) -> str | None:
    """The part of ``streaming`` that ``module`` belongs to, or None outside it: its sub-package
    (``streaming.job.step`` -> ``streaming.job``), itself for a module directly under ``streaming``
    (``streaming.config``), and ``streaming.__init__`` for the package's own ``__init__``.

    Modules directly under ``streaming`` are parts of their own: left out, a circle through one of them (the
    configuration, read by the Kafka clients and the sinks) would pass unseen between the packages it joins."""
    parts = module.split(".")
    if parts[0] != "streaming":
        return None
    return ".".join(parts[:2]) if len(parts) > 1 else "streaming.__init__"


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto ``streaming``'s parts: A -> B when any module of A imports one of B."""
    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        source = _part(name)
        if source is None:
            continue
        out.setdefault(source, set()).update(t for t in map(_part, targets) if t not in (None, source))
    return out


# The parts of ``streaming`` (sub-packages, and the modules directly under it) in layers, top first: a part may
# import those of the rows below its own, never one of its row or above. A circle between two parts means neither
# can be read, tested or shipped to Spark's workers without the other.
LAYERS = (
    ("commands",),  # the command line: nothing imports it
    ("driver",),  # runs on the driver and starts Spark: the runner and its supervisor, backfill, the metrics feed
    ("spark",),  # Spark glue: session, sources, applyInPandasWithState, the query
    ("offline",),  # segment files and recordings, replayed through job.step
    ("job",),  # what Spark's Python workers run: the shard step, packed rows, the batch hand-off
    ("api", "simulator"),  # the HTTP API over the metrics state; the workload simulator
    ("kafka", "sinks"),  # Kafka clients; Delta tables and the Prometheus endpoint
    ("config",),  # the settings file, read by every part above; its model: section comes from the model's knobs
    ("schema",),  # table schemas, the heartbeat message
    # the plain-Python group model; how far long work is (a leaf); the package's own __init__, which Python runs
    # before any module of the package, so whatever it imported every part would import
    ("model", "progress", "__init__"),
)


def _downward_violations(packages: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Package imports that do not go down ``layers`` (or involve a package missing from it)."""
    row = {f"streaming.{name}": i for i, names in enumerate(layers) for name in names}
    wrong = [f"{p} is in no layer" for p in sorted(set(packages) | set().union(*packages.values())) if p not in row]
    wrong += [f"{p} imports {t}" for p, targets in sorted(packages.items()) for t in sorted(targets)
              if p in row and t in row and row[t] <= row[p]]
    return wrong


def test_subpackages_and_top_level_modules_import_down_the_layers() -> None:
    packages = _package_graph(_graph())
    assert _circles(packages) == []
    assert _downward_violations(packages, LAYERS) == []


def test_every_layer_names_a_part_that_exists() -> None:
    """A row naming a part that is gone (renamed, merged) would keep a stale place in the order."""
    parts = {_part(name) for name in _modules()} - {None}
    assert sorted(f"streaming.{name}" for names in LAYERS for name in names
                  if f"streaming.{name}" not in parts) == []


def test_package_graph_keeps_a_circle_between_packages() -> None:
    """Folding modules onto packages must not lose a circle that only shows at package level."""
    graph = {"streaming.job.step": {"streaming.spark.session"}, "streaming.spark.job": {"streaming.job.packed"},
             "streaming.job.packed": set(), "streaming.spark.session": set(), "streaming.config": {"streaming.job"}}
    assert _circles(graph) == []
    assert _circles(_package_graph(graph)) == [["streaming.job", "streaming.spark"]]
    assert _downward_violations(_package_graph(graph), (("spark",), ("config",), ("job",))) == [
        "streaming.job imports streaming.spark"]
    assert _downward_violations({"streaming.new": set()}, (("job",),)) == ["streaming.new is in no layer"]


def test_package_graph_keeps_a_circle_through_a_top_level_module() -> None:
    """The circle the configuration once closed: ``config`` read the step's knobs from ``job.step``, the step wrote
    its data files with ``sinks``, and ``sinks`` read its settings from ``config``. No module imports itself back,
    so only the fold shows it, and only with ``config`` counted as a part of its own."""
    graph = {"streaming.config": {"streaming.job.step", "streaming.model.knobs"},
             "streaming.job.step": {"streaming.job.bulk_files", "streaming.model.knobs"},
             "streaming.job.bulk_files": {"streaming.sinks.delta_files"},
             "streaming.sinks.delta_files": set(), "streaming.sinks.delta_maintenance": {"streaming.config"},
             "streaming.model.knobs": set()}
    assert _circles(graph) == []
    assert _circles(_package_graph(graph)) == [["streaming.config", "streaming.job", "streaming.sinks"]]
    assert _downward_violations(_package_graph(graph), LAYERS) == ["streaming.config imports streaming.job"]
    # without the top-level module the same packages are in order: the circle is the configuration's
    del graph["streaming.config"]
    graph["streaming.sinks.delta_maintenance"] = set()
    assert _circles(_package_graph(graph)) == []
    assert _downward_violations(_package_graph(graph), LAYERS) == []


def test_a_top_level_module_missing_from_the_layers_fails() -> None:
    graph = {"streaming.settings": {"streaming.model.knobs"}, "streaming.model.knobs": set(), "streaming": set()}
    assert _package_graph(graph) == {"streaming.settings": {"streaming.model"}, "streaming.model": set(),
                                     "streaming.__init__": set()}
    assert _downward_violations(_package_graph(graph), LAYERS) == ["streaming.settings is in no layer"]


def _third_party(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


# What each part may import from the project (prefixes) and which outside libraries it must not use.
ALLOWED = {
    "protocol": ({"protocol"}, {"pyspark", "confluent_kafka", "deltalake", "delta", "prometheus_client", "streaming"}),
    "streaming.model": ({"protocol", "streaming.model"}, {"pyspark", "confluent_kafka", "deltalake", "delta",
                                                           "prometheus_client"}),
    "streaming.schema": ({"protocol", "streaming.model", "streaming.schema"}, {"pyspark", "confluent_kafka"}),
    # streaming.progress: how far long work is (a leaf module: it imports nothing of the project)
    "streaming.offline": ({"protocol", "streaming.model", "streaming.schema", "streaming.offline",
                           "streaming.job.step", "streaming.config", "streaming.progress"},
                          {"pyspark", "confluent_kafka"}),
    "streaming.progress": (set(), {"pyspark", "confluent_kafka", "deltalake", "delta", "prometheus_client"}),
    # what Spark's workers run imports nothing that starts or glues Spark; the glue never reaches the driver's side
    "streaming.job": ({"protocol", "streaming.model", "streaming.schema", "streaming.kafka", "streaming.sinks",
                       "streaming.job"}, set()),
    "streaming.spark": ({"streaming.config", "streaming.model", "streaming.schema", "streaming.kafka",
                         "streaming.offline", "streaming.job", "streaming.spark"}, set()),
}


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_uses_only_what_it_may(part: str) -> None:
    graph = _graph()
    modules = _modules()
    allowed, banned = ALLOWED[part]
    wrong = []
    for name, targets in graph.items():
        if name != part and not name.startswith(part + "."):
            continue
        for t in targets:
            if not any(t == a or t.startswith(a + ".") for a in allowed):
                wrong.append(f"{name} imports {t}")
        for lib in _third_party(modules[name]) & banned:
            wrong.append(f"{name} uses {lib}")
    assert wrong == []


def test_nothing_outside_the_commands_imports_them() -> None:
    wrong = [f"{name} imports {t}" for name, targets in _graph().items() if not name.startswith("streaming.commands")
             for t in targets if t.startswith("streaming.commands")]
    assert wrong == []


def test_readme_layout_names_the_folders_that_exist() -> None:
    text = (REPO / "README.md").read_text()
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    named = set(re.findall(r"^\s*([\w.-]+/)\s", block, flags=re.M))
    wanted = {f"{p.name}/" for p in REPO.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
              and p.name not in {"groupscope.egg-info", "build", "dist"} and (REPO / ".git").exists()
              and _tracked(p)}
    wanted |= {f"{p.relative_to(REPO / 'streaming')}/" for p in (REPO / "streaming").iterdir()
               if (p / "__init__.py").exists()}
    assert wanted - named == set(), "folders missing from the README's Layout section"
    assert named - wanted == set(), "the Layout section names folders that are gone"


def _tracked(path: Path) -> bool:
    import subprocess

    out = subprocess.run(["git", "ls-files", "--", str(path.relative_to(REPO))], cwd=REPO, capture_output=True,
                         text=True)
    return bool(out.stdout.strip())


def test_the_slow_tier_names_modules_that_exist() -> None:
    from tests.conftest import SLOW_MODULES

    assert sorted(m for m in SLOW_MODULES if not (REPO / m).is_file()) == []
