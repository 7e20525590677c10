"""The oldest-record probe (``streaming.kafka.oldest_probe``): which committed offsets it reads at a heartbeat tick
to measure time lag (budget, order, spreading over ticks, unreadable topics) and what it keeps to send.

The choices are checked against a table of answers, one by one; the read itself runs once against librdkafka's
mock cluster here, and against a real broker in ``tests/realkafka/test_measured_lag.py``.
"""

from __future__ import annotations

import logging

from confluent_kafka import Producer

from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.oldest_probe import FirstRecords, Lagging, OldestProbe, read_first_records
from streaming.kafka.reader import OffsetRange
from streaming.schema.heartbeat_format import OldestRecord
from tests.kafka.transactions import transactional_tail

T0 = 1_767_225_600_000


class Answers:
    """Stands in for a read_committed read: the first delivered record at or after each offset, from a table of
    the partitions' delivered records ``{(topic, partition): {offset: timestamp}}``."""

    def __init__(self, records: dict[tuple[str, int], dict[int, int]], *, silent: set = frozenset(),
                 refused: set[str] = frozenset()):
        self.records = records
        self.silent = silent  # partitions whose answer does not come within the budget
        self.refused = refused  # topics this monitor may not read
        self.calls: list[list[OffsetRange]] = []

    def __call__(self, ranges: list[OffsetRange], timeout_s: float) -> FirstRecords:
        self.calls.append(ranges)
        found, exhausted = {}, set()
        for r in ranges:
            tp = (r.topic, r.partition)
            if tp in self.silent or r.topic in self.refused:
                continue
            after = [o for o in self.records.get(tp, {}) if r.start <= o < r.end]
            if after:
                found[tp] = (min(after), self.records[tp][min(after)])
            else:
                exhausted.add(tp)
        refused = {t: "Broker: Topic authorization failed" for t in self.refused if any(r.topic == t for r in ranges)}
        return FirstRecords(found, frozenset(exhausted), refused)


def _ends(*tps, hw=100, lso=100, low=0):
    return {tp: (hw, lso, low) for tp in tps}


def test_the_oldest_are_read_first_at_most_max_partitions_a_tick_and_each_offset_once():
    tps = [("t", p) for p in range(5)]
    answers = Answers({tp: {o: T0 + o for o in range(100)} for tp in tps})
    probe = OldestProbe(answers, max_partitions=2)
    probe.want(0, [Lagging("t", 0, 50, 50, 10.0), Lagging("t", 1, 50, 50, 300.0), Lagging("t", 2, 50, 80, None),
                   Lagging("t", 3, 50, 90, 300.0), Lagging("t", 4, 50, 50, 60.0)])
    ends = _ends(*tps)
    first = probe.due(ends)
    assert [(r.partition, r.start, r.end) for r in first] == [(3, 50, 100), (1, 50, 100)], \
        "largest lag in seconds first, then largest lag; two a tick"
    probe.probe(first)
    assert [r.partition for r in probe.due(ends)] == [4, 0], "the rest at the next ticks; measured ones not again"
    probe.probe(probe.due(ends))
    probe.probe(probe.due(ends))
    assert probe.due(ends) == []
    assert len(answers.calls) == 3
    assert probe.oldest() == [OldestRecord("t", p, 50, 50, T0 + 50) for p in range(5)]


def test_what_is_kept_and_sent_in_every_heartbeat_is_bounded():
    answers = Answers({("t", p): {50: T0} for p in range(3)})
    probe = OldestProbe(answers, max_kept=2)
    probe.want(0, [Lagging("t", p, 50, 50, float(p)) for p in range(3)])
    ends = _ends(*[("t", p) for p in range(3)])
    probe.probe(probe.due(ends))
    assert [o.partition for o in probe.oldest()] == [1, 2] and probe.due(ends) == []
    probe.want(0, [Lagging("t", p, 50, 50, float(p)) for p in range(2)])  # partition 2's group caught up
    assert probe.due(ends) == [OffsetRange("t", 0, 50, 100)]


def test_a_group_that_moves_on_is_measured_at_its_new_offset_and_its_old_one_is_forgotten():
    answers = Answers({("t", 0): {o: T0 + o for o in range(100)}})
    probe = OldestProbe(answers)
    probe.want(0, [Lagging("t", 0, 40, 60, 5.0)])
    probe.probe(probe.due(_ends(("t", 0))))
    probe.want(0, [Lagging("t", 0, 70, 30, 5.0)])
    assert probe.oldest() == [], "what the group no longer waits on is not sent"
    assert probe.due(_ends(("t", 0))) == [OffsetRange("t", 0, 70, 100)]
    probe.want(0, [])
    assert probe.due(_ends(("t", 0))) == [], "a shard's full refresh without rows: nothing of it is behind"


def test_shards_lists_are_kept_apart_and_the_same_offset_is_read_once():
    answers = Answers({("t", 0): {40: T0}})
    probe = OldestProbe(answers)
    probe.want(0, [Lagging("t", 0, 40, 60, 5.0)])
    probe.want(7, [Lagging("t", 0, 40, 60, 9.0)])
    assert probe.due(_ends(("t", 0))) == [OffsetRange("t", 0, 40, 100)]
    probe.want(0, [])
    assert probe.due(_ends(("t", 0))) == [OffsetRange("t", 0, 40, 100)], "shard 7's group still waits on it"


def test_markers_aborted_and_compacted_offsets_give_the_next_delivered_record_and_nothing_delivered_waits():
    # 10 is a marker, 11-12 aborted or compacted away: 13 is the first record delivered; 20-29 only markers.
    answers = Answers({("t", 0): {13: T0 + 13}})
    probe = OldestProbe(answers)
    probe.want(0, [Lagging("t", 0, 10, 20, 5.0), Lagging("t", 0, 20, 10, 1.0)])
    ends = _ends(("t", 0), hw=30, lso=30)
    assert probe.due(ends) == [OffsetRange("t", 0, 10, 30)], "one offset of a partition a tick, the oldest first"
    probe.probe(probe.due(ends))
    assert probe.oldest() == [OldestRecord("t", 0, 10, 13, T0 + 13)]
    probe.probe(probe.due(ends))
    assert probe.oldest() == [OldestRecord("t", 0, 10, 13, T0 + 13)]
    assert probe.due(ends) == [], "nothing delivered up to the end: not read again"
    answers.records[("t", 0)][31] = T0 + 31
    assert probe.due(_ends(("t", 0), hw=32, lso=32)) == [OffsetRange("t", 0, 20, 32)], "until the end moves"


def test_offsets_below_the_log_start_or_at_the_end_are_not_read_and_an_open_transaction_bounds_the_read():
    probe = OldestProbe(Answers({}))
    probe.want(0, [Lagging("t", 0, 5, 95, 5.0), Lagging("t", 1, 100, 1, 5.0), Lagging("t", 2, 50, 50, 5.0)])
    due = probe.due({("t", 0): (100, 100, 10), ("t", 1): (101, 100, 0), ("t", 2): (100, 70, 0)})
    assert due == [OffsetRange("t", 2, 50, 70)]


def test_a_read_that_does_not_finish_in_time_lets_the_others_go_first():
    now = [0.0]
    answers = Answers({("t", 0): {50: T0}, ("t", 1): {50: T0}}, silent={("t", 0)})
    probe = OldestProbe(answers, max_partitions=1, budget_s=1.0, clock=lambda: now[0])
    probe.want(0, [Lagging("t", 0, 50, 50, 100.0), Lagging("t", 1, 50, 50, 1.0)])
    ends = _ends(("t", 0), ("t", 1))
    probe.probe(probe.due(ends))
    assert [r.partition for r in probe.due(ends)] == [1]
    probe.probe(probe.due(ends))
    now[0] = 11.0
    assert [r.partition for r in probe.due(ends)] == [0], "tried again a few ticks later"


def test_a_failed_read_never_stops_the_heartbeat_and_a_group_that_moved_on_meanwhile_is_not_kept():
    now = [0.0]
    answers = Answers({("t", 0): {50: T0}})
    probe = OldestProbe(lambda ranges, timeout_s: (_ for _ in ()).throw(RuntimeError("broker gone")),
                        clock=lambda: now[0])
    probe.want(0, [Lagging("t", 0, 50, 50, 1.0)])
    probe.probe(probe.due(_ends(("t", 0))))
    assert probe.oldest() == [] and probe.due(_ends(("t", 0))) == []
    now[0] = 11.0
    due = probe.due(_ends(("t", 0)))
    probe.read = answers
    probe.want(0, [Lagging("t", 0, 60, 40, 1.0)])  # the batch thread: the group committed again during the read
    probe.probe(due)
    assert probe.oldest() == []


def test_a_topic_it_may_not_read_is_said_once_and_left_to_interpolation(caplog):
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    now = [0.0]
    answers = Answers({("ok", 0): {50: T0}, ("secret", 0): {50: T0}}, refused={"secret"})
    probe = OldestProbe(answers, retry_after_s=600, clock=lambda: now[0])
    probe.want(0, [Lagging("secret", 0, 50, 50, 100.0), Lagging("secret", 0, 60, 40, 90.0),
                   Lagging("ok", 0, 50, 50, 1.0)])
    ends = _ends(("ok", 0), ("secret", 0))
    probe.probe(probe.due(ends))
    assert probe.oldest() == [OldestRecord("ok", 0, 50, 50, T0)], "the readable topic is not held back"
    assert probe.due(ends) == []
    now[0] = 601.0
    probe.probe(probe.due(ends))
    said = [r.getMessage() for r in caplog.records if "to measure time lag" in r.getMessage()]
    assert len(said) == 1 and "secret" in said[0] and "interpolated" in said[0]


# ---- the read itself, against a real Kafka-protocol broker -------------------------------------------------------

def test_the_first_record_at_or_after_a_committed_offset_is_read_and_a_tail_of_markers_is_exhausted():
    """Offsets 0-5 records, the COMMIT marker at 6 (librdkafka's mock cluster over TCP): from 2 the first record
    delivered is 2 itself; from 6 nothing is delivered up to the end, 7."""
    with MockCluster(1) as mc:
        mc.create_topic("payments", 1)
        mc.create_topic("plain", 1)
        end = transactional_tail(mc.bootstrap_servers)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        p.produce("plain", value=b"x", partition=0, timestamp=T0)
        p.flush(10)
        kafka = {"bootstrap.servers": mc.bootstrap_servers}
        got = read_first_records(kafka, [OffsetRange("payments", 0, 2, end), OffsetRange("plain", 0, 0, 1)], 10.0)
        assert set(got.found) == {("payments", 0), ("plain", 0)}
        assert got.found[("payments", 0)][0] == 2 and got.found[("plain", 0)] == (0, T0)
        tail = read_first_records(kafka, [OffsetRange("payments", 0, 6, end)], 10.0)
        assert tail.found == {} and tail.exhausted == {("payments", 0)}
        assert read_first_records(kafka, [], 10.0).found == {}
