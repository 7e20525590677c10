"""The task workers' daemon preloads their imports only while the process stays single-threaded (safe to fork)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from streaming.spark import worker_daemon


def run_python(code: str) -> str:
    """Runs ``code`` in a fresh interpreter (preloading is about what a new process imports) and returns stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_preload_imports_the_workers_modules_and_stays_single_threaded():
    out = run_python("""
        import os, sys
        from streaming.spark import worker_daemon as d
        safe = d.preload()
        threads = len(os.listdir("/proc/self/task"))
        missing = [m for m in d.PRELOADED_MODULES if m not in sys.modules]
        print(safe, threads, missing)
    """)
    assert out == "True 1 []", "numpy's BLAS pool or Arrow's jemalloc thread started: forking would be unsafe"


def test_preload_refuses_once_a_thread_runs():
    out = run_python("""
        import threading, time
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        from streaming.spark import worker_daemon as d
        print(d.preload())
    """)
    assert out == "False"


def test_an_unsafe_preload_becomes_pysparks_own_daemon(monkeypatch):
    calls = []

    def fake_execv(path, argv):
        calls.append(argv)
        raise SystemExit(0)

    monkeypatch.setattr(worker_daemon, "preload", lambda: False)
    monkeypatch.setattr(worker_daemon.os, "execv", fake_execv)
    monkeypatch.setattr(sys, "argv", ["worker_daemon", "pyspark.worker"])
    with pytest.raises(SystemExit):
        worker_daemon.main()
    assert calls == [[sys.executable, "-m", "pyspark.daemon", "pyspark.worker"]]


def test_planning_daemons_do_not_preload(monkeypatch):
    """Daemons for a data source's planning serve a call or two per query: preloading there only costs memory."""
    served = []
    monkeypatch.setattr(worker_daemon, "preload", lambda: served.append("preload") or True)
    monkeypatch.setattr(sys, "argv", ["worker_daemon", "pyspark.sql.worker.plan_data_source_read"])
    import pyspark.daemon

    monkeypatch.setattr(pyspark.daemon, "manager", lambda: served.append("manager"))
    worker_daemon.main()
    assert served == ["manager"]


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
    assert worker_daemon.prune_import_path(path) == [zipped, jar]
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
    assert worker_daemon.prune_import_path(path) == []
    assert path == [other_version, not_installed, loose_module, str(broken), site]


def test_a_pip_installed_pyspark_is_imported_from_its_folder_in_the_daemon():
    """The path Spark gives the workers: PySpark's own zip, py4j's and the spark-core jar before site-packages."""
    import glob
    import os

    import pyspark

    home = os.path.dirname(pyspark.__file__)
    archives = sorted(glob.glob(os.path.join(home, "python", "lib", "*.zip"))) + \
        sorted(glob.glob(os.path.join(home, "jars", "spark-core_*.jar")))
    assert len(archives) == 3, archives
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import importlib, sys
            from streaming.spark import worker_daemon as d
            removed = d.prune_import_path()
            d.preload()
            import pyspark
            importlib.invalidate_caches()
            print(len(removed), pyspark.__file__.endswith("site-packages/pyspark/__init__.py"),
                  sum(type(f).__name__ == "zipimporter" for f in sys.path_importer_cache.values()))
        """)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(archives)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "True", "0"]
