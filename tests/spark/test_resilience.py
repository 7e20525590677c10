"""Bad input and an unreachable broker: the query never stops; garbage is quarantined with its reason; a broker
outage is survived and processing resumes; ``groupscope run`` says an outage in two lines and /ready follows it."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from protocol import partition_for
from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.kafka.mock_cluster import MockCluster
from streaming.driver.runner import GroupscopeJob
from streaming.sinks.delta import DeltaSink

from tests.cli_helpers import stop_job

from .harness import HEARTBEAT, OFFSETS, job_settings

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.spark

GARBAGE = [
    (b"\x00", b"\x00\x03"),  # key too short for a record type
    (b"\x00\x01\x00\x05ab", b"\x00\x03"),  # truncated group name
    (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x03\x00\x00"),  # truncated offset-commit value
    (b"\x00\x02\x00\x01g", b"\x00\x03\xff\xff"),  # group metadata cut short
    (None, b"\x00\x03"),  # no key at all
]
UNKNOWN = [
    (struct.pack(">h", 99) + b"\x00\x01g", b"\x00\x00zz"),  # a record type from the future
    (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x02", b"\x00\x09stuff"),  # an offset-commit value version from the future
]


def produce(bootstrap: str, pairs, partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for key, value in pairs:
        p.produce(OFFSETS, key=key, value=value, partition=partition)
    p.flush(30)


def good_commit(i: int) -> tuple[bytes, bytes]:
    return encode_record(new_offset_commit("resilient", "events", 0, i, commit_timestamp=1_767_225_600_000 + i))


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_garbage_is_quarantined_and_an_outage_is_survived(tmp_path):
    shard = partition_for("resilient", 50)
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        mc.create_topic("events", 1)
        produce(mc.bootstrap_servers, [good_commit(1)] + GARBAGE + UNKNOWN + [good_commit(2)], shard)
        settings = job_settings(mc.bootstrap_servers, tmp_path, metrics={"enabled": False},
                                source={"read_timeout_seconds": 20})
        delta = DeltaSink(settings.delta.path, app_id="groupscope-test")
        job = GroupscopeJob(settings, install_signal_handlers=False)
        job.start()
        runner = __import__("threading").Thread(target=job.run, daemon=True)
        runner.start()
        try:
            wait_for(lambda: delta.read("quarantine").num_rows >= len(GARBAGE), 120, "quarantine rows")
            q = delta.read("quarantine").to_pylist()
            assert len(q) == len(GARBAGE)
            assert all(r["reason"] and r["topic"] == OFFSETS and r["partition"] == shard for r in q)
            assert {r["value"] for r in q} == {v for _, v in GARBAGE}, "the raw bytes are kept"
            assert any("OffsetCommitValue" in r["reason"] for r in q)
            assert any("null key" in r["reason"] for r in q)
            wait_for(lambda: delta.read("commits").num_rows >= 2, 60, "good commits around the garbage")
            # A batch writes its tables before the job records it as its last: the status follows within a batch.
            wait_for(lambda: job.status.last_batch is not None, 30, "the job to record its batch")
            assert job.query.isActive

            # The broker goes away for a while: the job keeps running and says so, then resumes.
            mc.set_broker_down(1)
            wait_for(lambda: job.emitter.status.kafka_up is False, 60, "the outage to be reported")
            time.sleep(10)
            assert not job.stop_requested.is_set()
            mc.set_broker_up(1)
            produce(mc.bootstrap_servers, [good_commit(3)], shard)
            wait_for(lambda: delta.read("commits").num_rows >= 3, 120, "processing after the outage")
            wait_for(lambda: job.emitter.status.kafka_up, 30, "the emitter to see Kafka again")
            assert job.query is not None and job.query.isActive
            commits = delta.read("commits").to_pylist()
            assert sorted(c["committed_offset"] for c in commits if c["group_id"] == "resilient") == [1, 2, 3]
        finally:
            job.request_stop()
            runner.join(60)
            job.stop()


class _Kept(__import__("logging").Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records = []

    def emit(self, record) -> None:
        self.records.append(record)


def test_a_query_that_completes_no_batch_for_too_long_is_said_in_the_log(tmp_path):
    """The supervisor's stall line, on a real query: with triggers 15 s apart and a batch age limit of 4 s, the gap
    after a batch is a stall as far as the job can tell. It is said once, with what Spark says the query is doing,
    and the next batch is said to have come."""
    import logging

    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        produce(mc.bootstrap_servers, [good_commit(1)], partition_for("resilient", 50))
        settings = job_settings(mc.bootstrap_servers, tmp_path, metrics={"enabled": False,
                                                                         "ready_max_batch_age_seconds": 4},
                                spark={"trigger_seconds": 15})
        kept = _Kept()
        logger = logging.getLogger("groupscope.run")
        level = logger.level
        logger.setLevel(logging.INFO)  # as `groupscope run` configures it
        logger.addHandler(kept)
        job = GroupscopeJob(settings, install_signal_handlers=False)
        runner = __import__("threading").Thread(target=lambda: job.run(poll_s=0.2), daemon=True)
        try:
            job.start()
            runner.start()
            def said() -> list[str]:
                return [r.getMessage() for r in kept.records
                        if r.getMessage().startswith(("no micro-batch completed", "micro-batches complete again"))]

            wait_for(lambda: any(m.startswith("micro-batches") for m in said()), 120, "a stall said and its end")
            stall, again = said()[:2]  # each gap between two batches is one stall: one line as it starts, one after
            assert re.fullmatch(r"no micro-batch completed for [45] s \(Spark: [^)]+\); /ready says 503\. .+",
                                stall), stall
            assert "(Spark: no status)" not in stall
            assert 4 <= float(re.fullmatch(r"micro-batches complete again after (\d+) s without one",
                                            again).group(1)) <= 30, again
        finally:
            logger.removeHandler(kept)
            logger.setLevel(level)
            job.request_stop()
            runner.join(30)
            job.stop()


def ready_status(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0  # not listening (yet)


OUTAGE_S = 30
READY_MAX_HEARTBEAT_AGE_S = 10


def test_a_30_s_outage_is_two_lines_and_a_503_that_clears(tmp_path):
    """``groupscope run`` as an operator runs it (JSON logs); the broker goes down for 30 s. /ready turns 503 within
    its configured heartbeat age (plus a heartbeat's timeout and a batch), the job writes fewer than 20 lines for the
    whole outage, one when Kafka goes and one when it is back, and /ready is 200 again afterwards. Every line the
    job wrote, from start to stop, is one JSON object with time, level, logger and message."""
    shard = partition_for("resilient", 50)
    port = free_port()
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        mc.create_topic("events", 1)
        produce(mc.bootstrap_servers, [good_commit(1)], shard)
        config = tmp_path / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "outage",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "spark": {"checkpoint": str(tmp_path / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
            "delta": {"path": str(tmp_path / "delta")},
            "metrics": {"host": "127.0.0.1", "port": port,
                        "ready_max_heartbeat_age_seconds": READY_MAX_HEARTBEAT_AGE_S},
            "heartbeat": {"interval_seconds": 1.0},
            "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 1.0},
        }))
        log = tmp_path / "job.log"
        job = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--config", str(config),
                                "--log-format", "json"],
                               cwd=REPO, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: job.poll() is None and ready_status(port) == 200, 180, "/ready 200 before the outage")
            time.sleep(3)  # whatever the start says is said by now
            before = len(log.read_text().splitlines())

            mc.set_broker_down(1)
            down_at = time.monotonic()
            wait_for(lambda: ready_status(port) == 503, READY_MAX_HEARTBEAT_AGE_S + 15, "/ready 503 in the outage")
            to_503 = time.monotonic() - down_at
            time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))
            mc.set_broker_up(1)
            wait_for(lambda: ready_status(port) == 200, 90, "/ready 200 after the outage")
            time.sleep(5)  # late words about the outage would come now
            assert job.poll() is None, "the job must ride out the outage"
        finally:
            stop_job(job)
        lines = log.read_text().splitlines()
        records = []
        for line in lines:
            record = json.loads(line)  # fails the test on any line that is not JSON
            assert set(record) >= {"time", "level", "logger", "message"}, line
            records.append(record)
        messages = [r["message"] for r in records]
        during = messages[before:]
        shown = "\n".join(lines[before:])
        assert to_503 <= READY_MAX_HEARTBEAT_AGE_S + 15, to_503
        assert len(during) < 20, f"{len(during)} lines during the outage:\n{shown}"
        down = [m for m in during if m.startswith("Kafka unreachable at")]
        up = [m for m in during if m.startswith("Kafka reachable again after")]
        assert len(down) == 1 and len(up) == 1, shown
        assert re.fullmatch(rf"Kafka unreachable at {re.escape(mc.bootstrap_servers)} since "
                            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(.+\)", down[0]), down[0]
        outage = float(re.fullmatch(r"Kafka reachable again after (\d+) s", up[0]).group(1))
        assert OUTAGE_S - 12 <= outage <= OUTAGE_S + 15, up[0]
        assert any(m.startswith("starting: cluster outage") for m in messages), messages
        assert any(m.startswith("caught up after") for m in messages), messages
        assert not any("Traceback" in line for line in lines), shown
        assert not any("incubator" in m for m in messages), "the JVM's start-up warning stays off the terminal"


def test_a_jvm_killed_under_the_job_is_one_line_and_exit_status_1(tmp_path):
    """The out-of-memory killer (or kill -9) takes Spark's JVM while ``groupscope run`` runs: the job says so in
    one line within seconds and exits with status 1 for its service manager, with no traceback from Spark's Python
    bridge, the accumulator server or the supervisor."""
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        produce(mc.bootstrap_servers, [good_commit(1)], partition_for("resilient", 50))
        log = tmp_path / "job.log"
        job = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--bootstrap",
                                mc.bootstrap_servers, "--checkpoint", str(tmp_path / "cp"), "--delta-path",
                                str(tmp_path / "delta"), "--metrics-port", "0"],
                               cwd=REPO, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
                               # the mock broker cannot describe topic configurations: the warning after that
                               # request's 10 s timeout would fall among the lines counted below on a slow run
                               env={**os.environ, "GROUPSCOPE_HEARTBEAT__CHECK_TOPIC_CONFIG": "false"})
        try:
            wait_for(lambda: "caught up after" in log.read_text() or job.poll() is not None, 180, "the job to run")
            jvms = subprocess.run(["pgrep", "-P", str(job.pid), "java"], capture_output=True, text=True).stdout.split()
            assert len(jvms) == 1, jvms
            time.sleep(2)  # batches in flight: the callback and the supervisor are both talking to the JVM
            os.kill(int(jvms[0]), signal.SIGKILL)
            killed = time.monotonic()
            job.wait(60)
            took = time.monotonic() - killed
        finally:
            stop_job(job)
    lines = log.read_text().splitlines()
    shown = "\n".join(lines[-20:])
    assert job.returncode == 1, shown
    assert took < 15, took
    assert re.search(r" ERROR groupscope\.run: Spark's JVM exited: killed by SIGKILL \(the out-of-memory killer or "
                     r"kill -9\); the job stops\. Start it again: it resumes from its checkpoint", lines[-1]), shown
    after = lines[next(i for i, line in enumerate(lines) if "caught up after" in line) + 1:]
    assert not any("Traceback" in line or "py4j" in line or line.startswith(" ") for line in after), shown
    assert len(after) <= 3, shown


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
