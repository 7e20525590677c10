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
    monkeypatch.setattr(worker_daemon, "prune_import_path", lambda: served.append("prune") or [])
    monkeypatch.setattr(sys, "argv", ["worker_daemon", "pyspark.sql.worker.plan_data_source_read"])
    import pyspark.daemon

    monkeypatch.setattr(pyspark.daemon, "manager", lambda: served.append("manager"))
    worker_daemon.main()
    assert served == ["prune", "manager"]

