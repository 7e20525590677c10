"""The SparkSession's plain-Python parts (``streaming.spark.session``): the settings every session starts with, the
log4j configuration file, whether spark-submit started this process, and the JVM launched with SIGTERM ignored.
No session is built: the JVM's launch is stood in for by a shell."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from streaming.spark import session
from streaming.spark.session import DEFAULT_CONF, launched_by_spark_submit, mark_stopping


def test_every_session_runs_in_utc_without_its_ui_and_forks_workers_from_the_preloaded_daemon():
    assert DEFAULT_CONF["spark.sql.session.timeZone"] == "UTC"
    assert DEFAULT_CONF["spark.ui.enabled"] == "false"
    assert DEFAULT_CONF["spark.python.daemon.module"] == "streaming.spark.worker_daemon"
    assert DEFAULT_CONF["spark.driver.maxResultSize"] == "0", "the driver collects every batch's outputs"
    assert all(isinstance(v, str) for v in DEFAULT_CONF.values()), "Spark takes its settings as strings"


def test_the_log4j_file_holds_the_error_only_configuration_and_is_rewritten_when_it_differs():
    path = Path(session._log4j2_file())
    assert path.read_text() == session._LOG4J2
    assert "rootLogger.level = error" in session._LOG4J2
    path.write_text("rootLogger.level = debug\n")
    assert Path(session._log4j2_file()).read_text() == session._LOG4J2


def test_spark_submit_is_recognised_by_the_gateway_port_it_hands_down(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not launched_by_spark_submit()
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "41234")
    assert launched_by_spark_submit()


def test_marking_no_session_as_stopping_is_harmless():
    mark_stopping(None)


def test_the_jvm_is_launched_with_sigterm_ignored_and_the_launcher_is_put_back():
    from pyspark import java_gateway

    assert java_gateway.Popen is subprocess.Popen
    restore = session._jvm_ignores_sigterm()
    try:
        assert java_gateway.Popen is not subprocess.Popen
        assert session._jvm_ignores_sigterm()() is None, "a nested start leaves the wrapper in place"
        assert java_gateway.Popen is not subprocess.Popen
        # The child sends itself SIGTERM: ignored, it goes on to say so; with the default it would die first.
        child = java_gateway.Popen(["/bin/sh", "-c", "kill -TERM $$; echo survived"], stdout=subprocess.PIPE,
                                   text=True)
        out, _ = child.communicate(timeout=10)
        assert (child.returncode, out) == (0, "survived\n")
    finally:
        restore()
    assert java_gateway.Popen is subprocess.Popen
    plain = subprocess.Popen(["/bin/sh", "-c", "kill -TERM $$; echo survived"], stdout=subprocess.PIPE, text=True)
    out, _ = plain.communicate(timeout=10)
    assert plain.returncode == -signal.SIGTERM and out == "", "only the launch's child ignores it"


def test_the_callers_own_preexec_still_runs_in_the_launched_child(tmp_path):
    from pyspark import java_gateway

    marker = tmp_path / "ran"
    restore = session._jvm_ignores_sigterm()
    try:
        child = java_gateway.Popen(["/bin/true"], preexec_fn=lambda: marker.write_text("yes"))
        child.wait(10)
    finally:
        restore()
    assert marker.read_text() == "yes"
