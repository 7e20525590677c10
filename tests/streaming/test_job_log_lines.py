"""The lines ``groupscope run`` writes for an operator: an outage in two lines, where a start resumes, when it has
caught up, and the JSON log format. How the JVM's output becomes records is in ``tests/spark/test_jvm_output.py``."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from streaming.driver.progress import BatchStallWatch, CatchUpWatch, checkpoint_position, resume_line
from streaming.kafka.client import Reachability
from tests.cli_helpers import REPO
from tests.log_records import Keep


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(keep):
    logger, lines = keep
    now = [1_767_225_600.0]
    r = Reachability("broker-1:9092,broker-2:9092", logger, clock=lambda: now[0])
    r.reached()
    assert lines.messages() == [], "no news while Kafka answers"
    r.failed('list offsets failed: KafkaError{code=_TRANSPORT,val=-195,str="Broker transport failure"}')
    for _ in range(20):
        now[0] += 5
        r.failed("metadata request failed: timed out")
    now[0] += 3
    r.reached()
    r.reached()
    assert lines.messages() == [
        "Kafka unreachable at broker-1:9092,broker-2:9092 since 2026-01-01 00:00:00 UTC "
        "(list offsets failed: Broker transport failure)",
        "Kafka reachable again after 103 s",
    ]
    assert all(rec.levelno == logging.WARNING for rec in lines.records), "both at the same level: they pair"


def test_the_heartbeat_emitter_says_an_outage_of_the_broker_in_two_lines():
    from streaming.kafka.heartbeat import HeartbeatEmitter
    from streaming.kafka.mock_cluster import MockCluster

    handler = Keep()
    logger = logging.getLogger("groupscope.heartbeat")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with MockCluster(1) as mc:
            mc.create_topic("__consumer_offsets", 2)
            mc.create_topic("groupscope-heartbeat", 1)
            emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, interval_s=1.0)
            emitter.access.timeout_s = 2.0
            assert emitter.tick()
            mc.set_broker_down(1)
            failed = [emitter.tick() for _ in range(3)]
            mc.set_broker_up(1)
            deadline = time.monotonic() + 60
            while not emitter.tick():
                assert time.monotonic() < deadline, "the emitter never reached the broker again"
            emitter.stop()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert failed == [False, False, False]
    warnings = [m for m in handler.messages(logging.WARNING) if "configuration" not in m]
    assert len(warnings) == 2, warnings
    assert re.fullmatch(rf"Kafka unreachable at {re.escape(mc.bootstrap_servers)} since "
                        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+\)", warnings[0]), warnings[0]
    assert re.fullmatch(r"Kafka reachable again after \d+ s", warnings[1]), warnings[1]
    assert sum("heartbeat tick failed" in m for m in handler.messages(logging.DEBUG)) >= 2, "the rest at DEBUG"


def _checkpoint(root, committed: list[int], planned: list[int], offsets: dict[int, dict[str, int]]) -> None:
    """A Spark checkpoint's offset and commit logs, in Spark's own format."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch in planned:
        sources = {"__consumer_offsets": offsets[batch], "groupscope-heartbeat": {"0": batch}}
        (root / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n' + json.dumps(sources))
        (root / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_where_a_start_resumes(tmp_path):
    assert checkpoint_position(str(tmp_path / "none"), "__consumer_offsets") is None
    _checkpoint(tmp_path / "cp", committed=[7, 8, 9], planned=[7, 8, 9, 10],
                offsets={b: {"0": 100 * b, "1": 10 * b} for b in (7, 8, 9, 10)})
    position = checkpoint_position(str(tmp_path / "cp"), "__consumer_offsets")
    assert position == (9, {0: 900, 1: 90}), "the last completed batch, not the planned one"
    assert checkpoint_position(f"file:{tmp_path / 'cp'}", "__consumer_offsets") == position
    assert checkpoint_position("s3a://bucket/cp", "__consumer_offsets") is None
    # 1000 - 900 on partition 0; partition 1's log now starts at 95, past the checkpoint's 90: 120 - 95.
    assert resume_line(position, {0: 1000, 1: 120}, {0: 0, 1: 95}, starting_offsets="earliest",
                       offsets_topic="__consumer_offsets") == "resumed from checkpoint at batch 9, 125 records behind"
    assert resume_line(None, {0: 1000, 1: 120}, {0: 0, 1: 95}, starting_offsets="earliest",
                       offsets_topic="__consumer_offsets") == (
        "no checkpoint yet: reading __consumer_offsets from its earliest offsets, 1,025 records behind")
    assert resume_line(None, {0: 1}, {0: 0}, starting_offsets="latest", offsets_topic="__consumer_offsets") == (
        "no checkpoint yet: reading __consumer_offsets from its latest offsets")


class _Health:
    def __init__(self, shard: int, caught_up: bool) -> None:
        self.shard, self.caught_up = shard, caught_up


def test_caught_up_is_said_once_when_every_shard_has_caught_up(keep):
    logger, lines = keep
    watch = CatchUpWatch(3, logger, started=time.monotonic() - 42)
    assert not watch.after_batch([_Health(0, True), _Health(1, True)])
    assert not watch.after_batch([_Health(2, False)])
    assert watch.after_batch([_Health(2, True)])
    assert not watch.after_batch([_Health(0, True), _Health(1, True), _Health(2, True)])
    assert not watch.after_batch([_Health(0, False)]), "falling behind later is the metrics' business"
    assert lines.messages() == ["caught up after 42 s: all 3 partitions of __consumer_offsets read to their last "
                                "stable offset"]


def test_a_query_without_batches_is_said_once_with_what_spark_says_and_once_when_batches_return(keep):
    logger, lines = keep
    asked = []

    def doing() -> str:
        asked.append(1)
        return "Getting offsets from groupscope_kafka"

    watch = BatchStallWatch(300, logger, started=1000.0)
    assert not watch.look(1299.0, doing)
    watch.batch_completed(1299.5)
    assert not watch.look(1599.0, doing) and not asked, "Spark is asked only when the warning is due"
    assert watch.look(1600.0, doing)
    for now in (1601.0, 1700.0, 5000.0):
        assert not watch.look(now, doing), "once per stall"
    watch.batch_completed(5000.5)
    watch.batch_completed(5001.0)
    assert not watch.look(5300.0, doing)
    assert watch.look(5302.0, lambda: 1 / 0), "a status that cannot be read does not stop the warning"
    messages = lines.messages()
    assert messages[:2] == [
        "no micro-batch completed for 300 s (Spark: Getting offsets from groupscope_kafka); /ready says 503. If "
        "this lasts, restart the job (the checkpoint resumes where the last batch ended); a JVM thread dump "
        "(jcmd <pid> Thread.print) shows where it waits",
        "micro-batches complete again after 3701 s without one"]
    assert len(messages) == 3 and "(Spark: status unavailable: division by zero)" in messages[2], messages
    assert [r.levelname for r in lines.records] == ["WARNING", "INFO", "WARNING"]
    assert len(asked) == 1


def test_run_logs_json_objects_with_time_level_logger_and_message(tmp_path):
    """``groupscope run --log-format json`` against an unreachable broker: every line is one JSON object."""
    proc = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "run", "--bootstrap", "127.0.0.1:1",
                           "--metrics-port", "0", "--delta-path", str(tmp_path / "delta"), "--checkpoint",
                           str(tmp_path / "cp"), "--log-format", "json"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1
    lines = (proc.stdout + proc.stderr).splitlines()
    records = [json.loads(line) for line in lines]
    assert all(list(r)[:4] == ["time", "level", "logger", "message"] for r in records), lines
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]) for r in records), lines
    assert records[0]["message"].startswith("starting: cluster default, Kafka at 127.0.0.1:1"), records
    assert records[-1]["level"] == "ERROR" and records[-1]["logger"] == "groupscope.run", records
    assert records[-1]["message"].startswith("cannot reach Kafka at 127.0.0.1:1: connection refused ("), records


def test_a_failed_query_is_one_line():
    from streaming.driver.progress import query_error_line

    error = ("[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach batch "
             "sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback (most recent call "
             "last):\n  File \"batch_sink.py\", line 94, in handle\n    result = collect_outputs(batch_id, rows)\n"
             "ValueError: Target schema's field names are not matching\n\n=== Streaming Query ===\n"
             "Identifier: groupscope [id = 1]\nCurrent Committed Offsets: {}\n")
    assert query_error_line(error) == "ValueError: Target schema's field names are not matching"
    assert query_error_line("Job aborted.\nplan line") == "Job aborted."
    assert len(query_error_line("x" * 1000)) == 300


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_stop_signal_to_the_whole_process_group_is_a_quiet_stop(tmp_path):
    """A service manager stops a service with SIGTERM to every process of it (systemd's default, ``kill -- -PGID``),
    Spark's JVM included. The JVM leaves that signal to the driver, which stops the query after its batch and then
    Spark: exit 0, and not one warning, error or stack trace in the log (before, the JVM shut itself down under the
    job and stopping it logged Java traces)."""
    import signal
    import urllib.request

    from streaming.kafka.mock_cluster import MockCluster

    broker = MockCluster(1)
    broker.create_topics([("__consumer_offsets", 50), ("groupscope-heartbeat", 1)])
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--bootstrap",
                             broker.bootstrap_servers, "--metrics-port", str(port), "--delta-path",
                             str(tmp_path / "delta"), "--checkpoint", str(tmp_path / "cp")], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            # the mock broker cannot describe topic configurations: its warning after the 10 s
                            # DescribeConfigs timeout is not what this test is about (the demo turns it off too)
                            env={**os.environ, "GROUPSCOPE_HEARTBEAT__CHECK_TOPIC_CONFIG": "false"})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2).status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[0]
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == 0, out
    assert "caught up" in out, out
    noisy = [line for line in out.splitlines() if re.search(r" (WARNING|ERROR) |Traceback|Exception", line)]
    assert noisy == [], out
    # the stop is said when it begins, with the signal that asked for it, and when it is done
    said = [line.split(" groupscope.run: ", 1)[1] for line in out.splitlines() if " groupscope.run: stop" in line]
    assert len(said) == 2 and said[0] == "stopping (SIGTERM): finishing the batch in flight, then the services", out
    assert re.fullmatch(r"stopped in \d+\.\d s", said[1]), out


def test_ctrl_c_while_waiting_for_kafka_at_start_is_one_line_and_status_130(tmp_path):
    """Ctrl-C before the job has started (here: while it waits for an unreachable broker) stops it like Ctrl-C
    later does: no "Aborted!", no traceback, the status a shell gives an interrupted command."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--bootstrap", "127.0.0.1:1",
                             "--metrics-port", "0", "--delta-path", str(tmp_path / "delta"), "--checkpoint",
                             str(tmp_path / "cp")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any("groupscope.run: starting:" in line for line in lines):
        time.sleep(0.1)  # the run has read its settings and is starting
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=30)
    reader.join(10)
    out = "".join(lines)
    assert proc.returncode == 130, out
    assert "Aborted" not in out and "Traceback" not in out, out
    assert out.splitlines()[-1].endswith("interrupted while starting; stopping"), out
