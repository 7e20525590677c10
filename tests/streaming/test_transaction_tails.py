"""Aborted transactions at the end of a partition are not lag: the tail probe, the heartbeat's ``quiet`` rows, and
what the model makes of them.

What runs against librdkafka's mock cluster (a real Kafka-protocol broker over TCP): reading a tail whose last
offset is a COMMIT marker (the consumer skips it, as against a real broker) and the emitter publishing the quiet
offset it found. The mock cluster falls short of a real broker in two ways that matter here, so two stand-ins are
named where they are used: it never reports an open transaction's last stable offset below the high watermark, and
it does not send the aborted-transaction list, so its ``read_committed`` consumers receive aborted records. Which
records a consumer gets from a real broker is librdkafka's filtering; what is tested here is what groupscope does
with the answer.
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.step import ShardStep, StepConfig
from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange
from streaming.kafka.tail_probe import TailProbe, read_last_offsets
from streaming.model import state_v1
from streaming.model.lag import EndOffsetHistory, EndOffsetSample, offset_lag
from streaming.model.rules import Status
from streaming.schema.heartbeat_format import decode_heartbeat, encode_heartbeats
from streaming.schema.tables import SOURCE

T0 = 1_767_225_600_000


# ---- the model: a quiet tail is not lag --------------------------------------------------------------------------

@pytest.mark.parametrize("committed, hwm, lso, quiet, want", [
    (6, 18, 18, 6, 0),  # read everything before an aborted transaction (11 records and the marker)
    (9, 18, 18, 6, 0),  # committed inside the aborted stretch (a consumer that got them from a read_uncommitted read)
    (5, 18, 18, 6, 13),  # one real record before the quiet stretch is still unread: everything counts
    (6, 18, 18, -1, 12),  # nothing known about the tail
])
def test_a_quiet_tail_counts_as_read(committed, hwm, lso, quiet, want):
    assert offset_lag(committed, hwm, lso, True, quiet)[1] == want


def test_a_quiet_offset_only_speaks_for_the_end_it_was_read_at():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(18, 18, 0, T0, quiet_from=6))
    assert h.lag(6) == (18, 0)
    assert h.time_lag(6, T0 + 60_000) == (0.0, False)
    h.observe(EndOffsetSample(30, 30, 0, T0 + 5_000))  # new records: the probe said nothing about them
    assert h.lag(6) == (30, 24)
    h.observe(EndOffsetSample(40, 35, 0, T0 + 10_000, quiet_from=30))  # a transaction open: nothing is quiet
    assert h.quiet_from == -1 and h.lag(30)[1] == 5
    h.observe(EndOffsetSample(40, 40, 0, T0 + 15_000, quiet_from=40))  # not below the end: says nothing
    assert h.quiet_from == -1


def test_the_quiet_offset_survives_a_state_round_trip_and_old_state_has_none():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(18, 18, 0, T0, quiet_from=6))
    assert EndOffsetHistory.from_state(h.to_state()).lag(6) == (18, 0)
    old = (h.hwm, h.lso, h.lwm, h.time_ms, h.transactional, h.times.tobytes(), h.ends.tobytes(), h.capacity)
    assert state_v1._end_offsets(old).lag(6) == (18, 12)  # a version-1 state written before quiet tails existed


# ---- the heartbeat message ---------------------------------------------------------------------------------------

def test_quiet_rows_travel_with_their_partitions_end_offsets():
    ends = [("a", 0, 10, 10, 0), ("b", 0, 18, 18, 0), ("b", 1, 5, 5, 0)]
    one, two = encode_heartbeats(T0, "e", 1, ends, chunk_size=2, quiet=[("b", 1, 5, 2)])
    assert decode_heartbeat(one).quiet == ()
    assert b'"quiet"' not in one, "messages without quiet tails look as they always did"
    assert decode_heartbeat(two).quiet == (("b", 1, 5, 2),)


def _rows(commit_offset: int, heartbeats: list[bytes]) -> pa.Table:
    key, value = encode_record(new_offset_commit("g", "payments", 0, commit_offset, commit_timestamp=T0))
    rows = [{"key": key, "value": value, "topic": "__consumer_offsets", "partition": 3, "offset": 0,
             "timestamp": T0 * 1000}]
    for i, hb in enumerate(heartbeats):
        rows.append({"key": None, "value": hb, "topic": "groupscope-heartbeat", "partition": 0, "offset": i,
                     "timestamp": decode_heartbeat(hb).timestamp_ms * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


@pytest.mark.parametrize("quiet, status, lag", [(True, Status.OK, 0), (False, Status.STOP, 12)])
def test_a_consumer_that_read_up_to_an_aborted_transaction_is_not_stopped(quiet, status, lag):
    """Ten minutes of heartbeats after the consumer's last commit at 6; the partition ends at 18 (11 aborted
    records and the ABORT marker). With the probe's answer in the heartbeats it is caught up; without, it is what
    every end-offset monitor says: stopped, 12 behind."""
    beats = [encode_heartbeats(T0 + i * 5_000, "e", i, [("__consumer_offsets", 3, 1, 1, 0), ("payments", 0, 18, 18, 0)],
                               quiet=[("payments", 0, 18, 6)] if quiet else ())[0] for i in range(1, 121)]
    step = ShardStep(3, StepConfig())
    tables, _ = step.process(_rows(6, beats), wall_ms=T0 + 600_000)
    snap = step.model.snapshot(T0 + 600_000)
    (group,) = snap.groups
    (part,) = group.partitions
    assert (part.lag, part.status) == (lag, status), part


# ---- which tails are read ----------------------------------------------------------------------------------------

class FakeTailReader:
    """Stands in for a read_committed read of a real broker (the mock cluster delivers aborted records): answers
    with the last offset a consumer would get in each range, from a table of the partitions' visible records."""

    def __init__(self, last_visible: dict[tuple[str, int], int], fail_topics: set[str] = frozenset()):
        self.last_visible = last_visible
        self.fail_topics = fail_topics
        self.calls: list[list[OffsetRange]] = []

    def __call__(self, ranges: list[OffsetRange]) -> dict[tuple[str, int], int]:
        self.calls.append(ranges)
        if any(r.topic in self.fail_topics for r in ranges):
            raise RuntimeError("Broker: Topic authorization failed")
        return {(r.topic, r.partition): self.last_visible[r.topic, r.partition] for r in ranges
                if r.start <= self.last_visible.get((r.topic, r.partition), -1) < r.end}


def test_a_partition_whose_last_offset_is_a_record_is_looked_at_once():
    reader = FakeTailReader({("plain", 0): 99})
    probe = TailProbe(reader)
    ends = {("plain", 0): (100, 100, 0)}
    assert probe.due(ends) == [], "the end has not stayed put for a tick yet"
    first = probe.due(ends)
    assert first == [OffsetRange("plain", 0, 99, 100)], "a first look reads the last offset only"
    probe.probe(first)
    assert probe.quiet(ends) == []
    assert probe.due({("plain", 0): (150, 150, 0)}) == [] and probe.due({("plain", 0): (150, 150, 0)}) == []
    assert len(reader.calls) == 1


def test_an_aborted_tail_already_there_at_the_start_is_found_by_the_first_look():
    reader = FakeTailReader({("tx", 0): 5})  # 0-5 records, 6 COMMIT marker, 7-16 aborted, 17 ABORT marker
    probe = TailProbe(reader, window=1000)
    ends = {("tx", 0): (18, 18, 0)}
    probe.due(ends)
    probe.probe(probe.due(ends))
    assert reader.calls == [[OffsetRange("tx", 0, 17, 18)], [OffsetRange("tx", 0, 0, 18)]], \
        "nothing delivered at the last offset: the window is read at once"
    assert probe.quiet(ends) == [("tx", 0, 18, 6)]
    assert probe.due(ends) == [], "read once per end offset"
    # New records end the quiet stretch: nothing is said until the new end has settled and been read.
    moved = {("tx", 0): (25, 25, 0)}
    assert probe.quiet(moved) == [] and probe.due(moved) == []
    reader.last_visible[("tx", 0)] = 24
    assert probe.due(moved) == [OffsetRange("tx", 0, 0, 25)], "a transactional partition: the whole window"
    probe.probe(probe.due(moved) or [OffsetRange("tx", 0, 0, 25)])
    assert probe.quiet(moved) == [], "its last offset is a record: nothing is quiet"


def test_transactional_partitions_come_first_a_long_stretch_is_reported_from_the_window_and_reads_are_capped():
    reader = FakeTailReader({("tx", p): 10 for p in range(5)} | {("plain", 0): 4_999})
    probe = TailProbe(reader, window=100, max_partitions=2)
    ends = {("plain", 0): (5_000, 5_000, 0)} | {("tx", p): (5_000, 5_000, 0) for p in range(5)}
    probe.due({tp: (5_000, 4_000, 0) if tp[0] == "tx" else e for tp, e in ends.items()})  # transactions open
    probe.due(ends)
    first = probe.due(ends)
    assert [(r.topic, r.partition) for r in first] == [("tx", 0), ("tx", 1)]
    assert first[0] == OffsetRange("tx", 0, 4_900, 5_000)
    probe.probe(first)
    assert probe.quiet(ends) == [("tx", 0, 5_000, 4_900), ("tx", 1, 5_000, 4_900)]
    assert [(r.topic, r.partition) for r in probe.due(ends)] == [("tx", 2), ("tx", 3)], "the rest in later ticks"


def test_a_topic_it_may_not_read_is_said_once_left_alone_a_while_and_counts_as_before(caplog):
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    now = [0.0]
    reader = FakeTailReader({("tx", 0): 5, ("secret", 0): 5}, fail_topics={"secret"})
    probe = TailProbe(reader, retry_after_s=600, clock=lambda: now[0])
    ends = {("tx", 0): (18, 18, 0), ("secret", 0): (18, 18, 0)}
    probe.due(ends)
    probe.probe(probe.due(ends))
    assert probe.quiet(ends) == [("tx", 0, 18, 6)], "the readable topic is not held back by the other"
    moved = {("tx", 0): (30, 30, 0), ("secret", 0): (30, 30, 0)}
    probe.due(moved)
    due = probe.due(moved)
    assert [r.topic for r in due] == ["tx"], "the unreadable topic is left alone"
    probe.probe(due)
    now[0] = 601.0
    again = probe.due(moved)
    assert [r.topic for r in again] == ["secret"]
    probe.probe(again)
    said = [r.getMessage() for r in caplog.records if "cannot read the end of topic" in r.getMessage()]
    assert len(said) == 1 and "secret" in said[0] and "authorization" in said[0]


# ---- against a real Kafka-protocol broker -------------------------------------------------------------------------

def _transactional_tail(bootstrap: str) -> int:
    """One plain record, then a committed transaction of 5 records: offsets 0-5, the COMMIT marker at 6."""
    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    plain.produce("payments", b"p", partition=0)
    plain.flush(10)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tails", "log_level": 3})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce("payments", b"t%d" % i, partition=0)
    txn.commit_transaction(30)
    return 7


def test_reading_a_tail_that_ends_on_a_marker_over_tcp():
    with MockCluster(1) as mc:
        mc.create_topic("payments", 1)
        end = _transactional_tail(mc.bootstrap_servers)
        kafka = {"bootstrap.servers": mc.bootstrap_servers}
        assert read_last_offsets(kafka, [OffsetRange("payments", 0, 0, end)]) == {("payments", 0): 5}
        assert read_last_offsets(kafka, [OffsetRange("payments", 0, 6, end)]) == {}, "only the marker"


def test_the_emitter_publishes_the_quiet_offset_it_read():
    with MockCluster(1) as mc:
        mc.create_topic("payments", 1)
        mc.create_topic("plain", 1)
        mc.create_topic("groupscope-heartbeat", 1)  # the mock cluster cannot answer CreateTopics
        end = _transactional_tail(mc.bootstrap_servers)
        fill = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(3):
            fill.produce("plain", b"r%d" % i, partition=0)
        fill.flush(10)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, include="^(payments|plain)$",
                                   check_topic_config=False)
        for _ in range(3):  # the ends are seen; they stayed put for a tick: first looks; nothing new
            assert emitter.tick(), emitter.status.last_error
        emitter.stop()
        consumer = Consumer({"bootstrap.servers": mc.bootstrap_servers, "group.id": "t", "log_level": 3})
        consumer.assign([TopicPartition("groupscope-heartbeat", 0, 0)])
        beats = []
        while len(beats) < 3:
            m = consumer.poll(10)
            assert m is not None, f"only {len(beats)} heartbeats"
            beats.append(decode_heartbeat(m.value()))
        consumer.close()
        quiet = (("payments", 0, end, 6),)  # the COMMIT marker at 6: a consumer committed at 6 read everything
        assert [hb.quiet for hb in beats] == [(), quiet, quiet]
