"""Capturing a recording (``streaming.kafka.capture``) from a real Kafka-protocol broker (librdkafka's mock cluster):
the ``__consumer_offsets`` records of the watched groups, a sample of end offsets a second, the manifest, and why the
capture ended. What ``groupscope record`` makes of it on the command line is in the command's own tests."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.kafka.capture import (OFFSETS_TOPIC, CaptureError, CaptureOptions, CaptureSummary, capture,
                                     check_out_dir)
from streaming.kafka.client import KafkaAccess
from streaming.kafka.mock_cluster import MockCluster
from streaming.offline.recording import load_recording

T0 = 1_767_225_600_000


@pytest.fixture(scope="module")
def cluster():
    """Commits of orders-app (on orders) and billing (on invoices) in __consumer_offsets; orders has 3 partitions."""
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS_TOPIC, 2)
        mc.create_topic("orders", 3)
        mc.create_topic("invoices", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for n in range(4):
            for group, topic in (("orders-app", "orders"), ("billing", "invoices")):
                key, value = encode_record(new_offset_commit(group, topic, 0, 10 * n, commit_timestamp=T0 + n))
                p.produce(OFFSETS_TOPIC, key=key, value=value, partition=0 if group == "billing" else 1)
        p.produce("orders", value=b"x", partition=2)
        p.flush(30)
        yield mc.bootstrap_servers


def _capture(bootstrap: str, out: Path, **options) -> CaptureSummary:
    access = KafkaAccess({"bootstrap.servers": bootstrap})
    return capture(access, CaptureOptions(out_dir=out, **options), threading.Event())


def test_a_capture_of_one_group_holds_its_records_its_topics_end_offsets_and_a_manifest(cluster, tmp_path):
    out = tmp_path / "rec"
    summary = _capture(cluster, out, groups=(re.compile("orders-.*"),), duration_s=3.5, from_beginning=True)
    assert summary.reason == "duration" and summary.records == 4 and summary.groups == {"orders-app"}
    assert summary.topics == {"orders"}, "the topics the kept records name"
    lines = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert [(r["partition"], r["offset"]) for r in lines] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    samples = [json.loads(line) for line in (out / "end_offsets.jsonl").read_text().splitlines()]
    assert 2 <= len(samples) == summary.samples <= 5, "a sample a second, on a grid (a slow answer skips one)"
    last = samples[-1]["offsets"]
    assert last["orders:2"] == {"high": 1, "stable": 1, "low": 0}
    assert last["__consumer_offsets:1"]["high"] == 4 and set(last) == {
        "orders:0", "orders:1", "orders:2", "__consumer_offsets:0", "__consumer_offsets:1"}
    manifest = json.loads((out / "recording.json").read_text())
    assert (manifest["stopped_by"], manifest["groups"], manifest["recorded_groups"]) == (
        "duration", ["orders-.*"], ["orders-app"])
    recording = load_recording(out)
    assert len(recording.records) == 4 and len(recording.samples) == summary.samples


def test_without_from_beginning_only_what_is_written_during_the_capture_is_kept(cluster, tmp_path):
    summary = _capture(cluster, tmp_path / "rec", duration_s=0.6)
    assert summary.records == 0 and (tmp_path / "rec" / "records.jsonl").read_text() == ""


def test_the_size_limit_ends_the_capture_before_a_line_would_pass_it(cluster, tmp_path):
    out = tmp_path / "rec"
    summary = _capture(cluster, out, duration_s=5, from_beginning=True, max_bytes=700)
    assert summary.reason == "max_bytes"
    written = sum(p.stat().st_size for p in (out / "records.jsonl", out / "end_offsets.jsonl"))
    assert written == summary.bytes_written <= 700
    assert json.loads((out / "recording.json").read_text())["stopped_by"] == "max_bytes"


def test_a_stop_ends_the_capture_at_once(cluster, tmp_path):
    stop = threading.Event()
    stop.set()
    access = KafkaAccess({"bootstrap.servers": cluster})
    summary = capture(access, CaptureOptions(out_dir=tmp_path / "rec"), stop)
    assert (summary.reason, summary.records, summary.samples) == ("stopped", 0, 0)


def test_a_recording_goes_into_a_new_or_empty_folder(tmp_path):
    check_out_dir(tmp_path / "new")
    check_out_dir(tmp_path)
    (tmp_path / "old.jsonl").write_text("{}\n")
    with pytest.raises(CaptureError, match="is not empty: a recording goes into a new or empty folder"):
        check_out_dir(tmp_path)
    with pytest.raises(CaptureError, match="exists and is not a folder"):
        check_out_dir(tmp_path / "old.jsonl")


def test_the_summary_is_one_line_saying_why_it_ended_and_what_it_wrote():
    summary = CaptureSummary(records=12, samples=30, groups={"a", "b"}, topics={"t"}, bytes_written=4096,
                             started_ms=T0, ended_ms=T0 + 30_400, reason="max_bytes", missed_samples=2)
    assert summary.line(Path("rec")) == ("groupscope record: size limit reached (--max-bytes) after 30 s: 12 records "
                                         "of 2 groups, 30 end-offset samples of 1 topics, 2 s without end offsets, "
                                         "4096 bytes in rec")
