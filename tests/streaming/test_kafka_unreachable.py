"""An unreachable Kafka is one clear line within seconds, not a flood of librdkafka's own log lines. The client
filter and configuration behind it are checked in ``tests/kafka/test_client.py``."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.cli_helpers import REPO

EXPECTED = "cannot reach Kafka at 127.0.0.1:1: connection refused ("


def _run(*args: str, tmp_path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "streaming.commands.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    return proc, time.monotonic() - started


def test_run_against_an_unreachable_broker_says_so_in_one_line(tmp_path):
    proc, elapsed = _run("run", "--bootstrap", "127.0.0.1:1", "--metrics-port", "0", "--delta-path",
                         str(tmp_path / "delta"), "--checkpoint", str(tmp_path / "checkpoint"), tmp_path=tmp_path)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode != 0
    assert len(lines) < 5, lines
    assert any(EXPECTED in line and "attempts in" in line for line in lines), lines
    assert elapsed < 12, elapsed  # the interpreter's start-up on top of the 10 s
    assert not any("FAIL" in line or "Traceback" in line for line in lines), lines


@pytest.mark.parametrize("args", [("heartbeat", "--once")], ids=["heartbeat-once"])
def test_heartbeat_against_an_unreachable_broker_says_so_in_one_line(tmp_path, args):
    proc, elapsed = _run(*args, "--bootstrap", "127.0.0.1:1", tmp_path=tmp_path)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1 and EXPECTED in lines[0], lines
    assert elapsed < 12, elapsed


def test_a_server_name_that_does_not_resolve_is_named_in_one_line(tmp_path):
    """``.invalid`` never resolves (RFC 6761): librdkafka's raw FAIL line stays out, groupscope's says why."""
    proc, _ = _run("heartbeat", "--once", "--bootstrap", "kafka.invalid:9092", tmp_path=tmp_path)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith("groupscope heartbeat: cannot reach Kafka at kafka.invalid:9092: cannot resolve "
                               "kafka.invalid:9092: "), lines


def test_run_names_the_metrics_port_in_use(tmp_path):
    import socket

    from streaming.kafka.mock_cluster import MockCluster

    with socket.socket() as taken, MockCluster(1) as cluster:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster.create_topic("__consumer_offsets", 2)
        proc, _ = _run("run", "--bootstrap", cluster.bootstrap_servers, "--metrics-port", str(port), "--delta-path",
                       str(tmp_path / "delta"), "--checkpoint", str(tmp_path / "checkpoint"), "--duration", "1",
                       tmp_path=tmp_path)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode != 0
    assert lines == [f"groupscope run: metrics port 0.0.0.0:{port} is already in use (set --metrics-port or "
                     "metrics.port)"], lines


def test_the_job_log_keeps_py4j_quiet():
    import logging

    from streaming.commands.run import LOG_HANDLER, configure_logging

    root = logging.getLogger()
    level = root.level
    try:
        configure_logging("info")
        assert logging.getLogger("py4j.clientserver").getEffectiveLevel() == logging.WARNING
        configure_logging("error", "json")
        assert logging.getLogger("py4j").getEffectiveLevel() == logging.ERROR
        assert [h.get_name() for h in root.handlers].count(LOG_HANDLER) == 1, "a second call replaces the handler"
    finally:
        for handler in [h for h in root.handlers if h.get_name() == LOG_HANDLER]:
            root.removeHandler(handler)
        root.setLevel(level)
        logging.captureWarnings(False)
        logging.getLogger("py4j").setLevel(logging.NOTSET)


