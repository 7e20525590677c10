"""What the job says when Spark's JVM dies under it: the exit described in words, py4j's own tracebacks kept out of
the log below debug, the JVM's exit read from its process (a real child process stands in for the JVM here; the
whole path, with a real JVM killed under ``groupscope run``, is in tests/spark/test_resilience.py)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

from streaming.spark.jvm_exit import BridgeNoise, describe_exit, jvm_exit_status, jvm_exited_error


def test_exits_are_described_in_words():
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL (the out-of-memory killer or kill -9)"
    assert describe_exit(-signal.SIGSEGV) == "killed by SIGSEGV"
    assert describe_exit(1) == "exit status 1"
    assert describe_exit(-200) == "killed by signal 200"
    error = jvm_exited_error(-9)
    assert error.status == -9 and str(error).startswith("Spark's JVM exited: killed by SIGKILL")
    assert "resumes from its checkpoint" in str(error)


def _spark_with_jvm(proc) -> SimpleNamespace:
    return SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(proc=proc)))


def test_the_exit_is_read_from_the_jvm_process():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert jvm_exit_status(_spark_with_jvm(proc)) is None, "running"
        assert jvm_exit_status(_spark_with_jvm(proc), wait_s=0.2) is None, "still running after the wait"
        os.kill(proc.pid, signal.SIGKILL)
        assert jvm_exit_status(_spark_with_jvm(proc), wait_s=10) == -signal.SIGKILL, "waited for"
        assert jvm_exit_status(_spark_with_jvm(proc)) == -signal.SIGKILL
    finally:
        proc.kill()
    assert jvm_exit_status(_spark_with_jvm(None)) is None, "no process of ours (a remote JVM): nothing to tell"
    assert jvm_exit_status(SimpleNamespace()) is None


def _record(pathname: str) -> logging.LogRecord:
    return logging.LogRecord("root", logging.ERROR, pathname, 1, "Exception while sending command.", None, None)


def test_py4j_records_only_at_debug():
    noise = BridgeNoise()
    root = logging.getLogger()
    level = root.level
    py4j_file = os.path.join(os.sep, "venv", "site-packages", "py4j", "clientserver.py")
    try:
        root.setLevel(logging.INFO)
        assert not noise.filter(_record(py4j_file)), "py4j's traceback is dropped"
        assert noise.filter(_record(os.path.join(os.sep, "repo", "streaming", "job", "runner.py")))
        assert noise.filter(_record(os.path.join(os.sep, "repo", "py4jish", "thing.py")))
        root.setLevel(logging.DEBUG)
        assert noise.filter(_record(py4j_file)), "kept with --log-level debug"
    finally:
        root.setLevel(level)
