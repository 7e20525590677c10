"""Spark's Python processes take PySpark's archives off their path where the same release is installed as folders."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from streaming.spark.import_path import prune_import_path, site_dir


def _archive(path, files: dict[str, str]) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


def _install(folder, files: dict[str, str]) -> str:
    for name, text in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return str(folder)


def test_archives_a_worker_has_no_need_of_leave_the_path(tmp_path):
    """An archive whose packages are installed as folders at the same version, and a jar without Python, go; so a
    fresh worker's ``importlib.invalidate_caches()`` no longer re-reads them."""
    same = {"pkg/__init__.py": "", "pkg/version.py": "__version__ = '4.2.0'\n"}
    site = _install(tmp_path / "site", same)
    zipped = _archive(tmp_path / "pkg.zip", same)
    jar = _archive(tmp_path / "core.jar", {"org/Thing.class": "x", "google/protobuf/Any.class": "y"})
    path = [zipped, jar, site]
    assert prune_import_path(path) == [zipped, jar]
    assert path == [site]


def test_archives_that_differ_from_what_is_installed_stay(tmp_path):
    site = _install(tmp_path / "site", {"pkg/__init__.py": "", "pkg/version.py": "__version__ = '4.1.0'\n"})
    other_version = _archive(tmp_path / "pkg.zip", {"pkg/__init__.py": "", "pkg/version.py": "__version__ = '4.2.0'\n"})
    not_installed = _archive(tmp_path / "other.zip", {"other/__init__.py": ""})
    loose_module = _archive(tmp_path / "loose.zip", {"pkg/__init__.py": "", "pkg/version.py": "__version__ = '4.1.0'\n",
                                                     "helper.py": ""})
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    path = [other_version, not_installed, loose_module, str(broken), site]
    assert prune_import_path(path) == []
    assert path == [other_version, not_installed, loose_module, str(broken), site]


def test_a_pip_installed_pyspark_is_imported_from_its_folder_in_the_daemon():
    """The path Spark gives the workers: PySpark's own zip, py4j's and the spark-core jar before site-packages."""
    archives = _spark_archives()
    assert len(archives) == 3, archives
    done = _start_python("""
        import importlib, sys
        from streaming.spark import worker_daemon as d
        from streaming.spark.import_path import prune_import_path
        removed = prune_import_path()
        d.preload()
        import pyspark
        importlib.invalidate_caches()
        print(len(removed), pyspark.__file__.endswith("site-packages/pyspark/__init__.py"),
              sum(type(f).__name__ == "zipimporter" for f in sys.path_importer_cache.values()))
    """, archives)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "True", "0"]


def _spark_archives() -> list[str]:
    """PySpark's zip, py4j's zip and the spark-core jar, as Spark puts them on its Python processes' path."""
    import glob

    import pyspark

    home = os.path.dirname(pyspark.__file__)
    return sorted(glob.glob(os.path.join(home, "python", "lib", "*.zip"))) + \
        sorted(glob.glob(os.path.join(home, "jars", "spark-core_*.jar")))


def _start_python(code: str, pythonpath: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)})


def test_the_site_hook_takes_the_archives_off_a_new_processs_path():
    """What the session arranges in local mode: Spark's archives first, then groupscope's sitecustomize folder."""
    archives = _spark_archives()
    done = _start_python("""
        import os, sys
        import pyspark
        archives = sum(p.endswith((".zip", ".jar")) and os.path.isfile(p) for p in sys.path)
        print(archives, pyspark.__file__.endswith("site-packages/pyspark/__init__.py"),
              any("worker_site" in p for p in sys.path))
    """, archives + [site_dir()])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "False"]
    assert done.stderr == ""


def test_the_site_hook_hands_over_to_the_sitecustomize_it_hides(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIR_HOOK_RAN'] = 'yes'\n")
    done = _start_python("""
        import os, sys
        print(os.environ.get("THEIR_HOOK_RAN"), sys.modules["sitecustomize"].__file__)
    """, [site_dir(), str(theirs)])
    assert done.returncode == 0, done.stderr
    ran, module = done.stdout.split()
    assert ran == "yes" and module == str(theirs / "sitecustomize.py")
    assert done.stderr == ""
