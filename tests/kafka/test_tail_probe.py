"""The tail probe (``streaming.kafka.tail_probe``): which partition ends it reads, and when, to find aborted
transactions at the end of a partition (a quiet tail is not lag).

The choices are checked against a table of answers standing in for a ``read_committed`` read of a real broker: the
mock cluster never reports an open transaction's last stable offset below the high watermark, and it does not send
the aborted-transaction list, so its ``read_committed`` consumers receive aborted records. The read itself
(``read_last_offsets``) runs against librdkafka's mock cluster over TCP: a tail whose last offset is a COMMIT marker,
which the consumer skips as against a real broker.
"""

from __future__ import annotations

import logging

from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange
from streaming.kafka.tail_probe import TailProbe, read_last_offsets
from tests.kafka.transactions import transactional_tail


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


def test_reading_a_tail_that_ends_on_a_marker_over_tcp():
    with MockCluster(1) as mc:
        mc.create_topic("payments", 1)
        end = transactional_tail(mc.bootstrap_servers)
        kafka = {"bootstrap.servers": mc.bootstrap_servers}
        assert read_last_offsets(kafka, [OffsetRange("payments", 0, 0, end)]) == {("payments", 0): 5}
        assert read_last_offsets(kafka, [OffsetRange("payments", 0, 6, end)]) == {}, "only the marker"

