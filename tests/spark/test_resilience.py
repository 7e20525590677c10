"""Bad input and an unreachable broker: the query never stops; garbage is quarantined with its reason; a broker
outage is survived and processing resumes."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Producer

from protocol import partition_for
from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.kafka.mock_cluster import MockCluster
from streaming.job.runner import GroupscopeJob
from streaming.sinks.delta import DeltaSink

from .harness import HEARTBEAT, OFFSETS, job_settings

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
            health = job.status.last_batch.health
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
            del health
        finally:
            job.request_stop()
            runner.join(60)
            job.stop()
