"""Measured time lag without Kafka: the heartbeat's ``oldest`` rows, which committed offsets the probe reads at a
tick (budget, order, spreading over ticks, unreadable topics), the step's ``lagging`` list, and what the model makes
of a measured record. The read itself runs against a real broker in ``tests/realkafka/test_measured_lag.py``; here
it is a table of answers, so the choices around it can be checked one by one."""

from __future__ import annotations

import json
import logging

import pytest

from streaming.job.lagging import LAGGING, lagging_of
from streaming.job.step import ShardStep, StepConfig
from streaming.kafka.oldest_probe import FirstRecords, Lagging, OldestProbe
from streaming.kafka.reader import OffsetRange
from streaming.model.lag import EndOffsetHistory, EndOffsetSample
from streaming.schema.heartbeat_format import OldestRecord, decode_heartbeat, encode_heartbeats
from tests.streaming.test_transaction_tails import _rows  # a commit of "g" on payments-0, then the heartbeats

T0 = 1_767_225_600_000


# ---- the heartbeat message ---------------------------------------------------------------------------------------

def test_oldest_records_travel_with_their_partitions_end_offsets():
    ends = [("a", 0, 10, 10, 0), ("b", 0, 18, 18, 0), ("b", 1, 5, 5, 0)]
    rec = OldestRecord("b", 1, 2, 3, T0 - 9_000)
    one, two = encode_heartbeats(T0, "e", 1, ends, chunk_size=2, oldest=[rec])
    assert b'"oldest"' not in one, "messages without oldest records look as they always did"
    assert decode_heartbeat(one).oldest == ()
    assert decode_heartbeat(two).oldest == (rec,)


def test_a_heartbeat_written_before_oldest_records_existed_still_decodes():
    old = json.dumps({"v": 1, "ts": T0, "emitter": "h:1", "seq": 7, "chunk": 0, "chunks": 1,
                      "ends": [["orders", 0, 1500, 1500, 0]], "quiet": [["orders", 0, 1500, 1490]]}).encode()
    hb = decode_heartbeat(old)
    assert (hb.seq, hb.ends, hb.quiet, hb.oldest) == (
        7, (("orders", 0, 1500, 1500, 0),), (("orders", 0, 1500, 1490),), ())


@pytest.mark.parametrize("committed, covered", [(9, False), (10, True), (12, True), (13, False)])
def test_an_oldest_record_speaks_for_every_offset_from_where_it_was_read_up_to_itself(committed, covered):
    assert OldestRecord("t", 0, 10, 12, T0).covers(committed) is covered


# ---- which committed offsets are read at a tick ------------------------------------------------------------------

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


# ---- the step's lagging list and the model's measured figure -----------------------------------------------------

def _beats(count: int, oldest_from: int = -1) -> list[bytes]:
    """Heartbeats every 5 s from T0 + 5 s; the partition's end stays at 100 throughout (the group fell behind
    before the first one); the last ``oldest_from`` ones carry the record at offset 40, written 30 min before T0."""
    ends = [("__consumer_offsets", 3, 1, 1, 0), ("payments", 0, 100, 100, 0)]
    record = OldestRecord("payments", 0, 40, 40, T0 - 1_800_000)
    return [encode_heartbeats(T0 + i * 5_000, "e", i, ends, oldest=[record] if i > count - oldest_from else ())[0]
            for i in range(1, count + 1)]


@pytest.mark.parametrize("measured", [True, False])
def test_the_model_prefers_the_measured_time_lag_and_says_which_it_is(measured):
    step = ShardStep(3, StepConfig())
    now = T0 + 60_000
    tables, health = step.process(_rows(40, _beats(12, 1 if measured else 0)), wall_ms=now)
    (group,) = step.model.snapshot(now).groups
    (part,) = group.partitions
    if measured:
        assert (part.lag_seconds, part.lag_seconds_lower_bound, part.lag_seconds_method) == (1_860.0, False, "measured")
    else:
        assert (part.lag_seconds, part.lag_seconds_lower_bound, part.lag_seconds_method) == (55.0, True, "interpolated")
    assert tables["lag"].column("lag_seconds_method").to_pylist() == [part.lag_seconds_method]
    assert tables["groups"].column("max_lag_seconds_method").to_pylist() == [part.lag_seconds_method]
    # the step lists the lagging offset for the emitter, with the figure it has
    assert health.full_snapshot and health.caught_up
    assert lagging_of(tables[LAGGING], [3]) == {3: [Lagging("payments", 0, 40, 60, part.lag_seconds)]}


def test_a_measured_record_speaks_only_for_the_heartbeat_that_brought_it_and_survives_a_state_round_trip():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(100, 100, 0, T0, oldest=((40, 42, T0 - 10_000),)))
    assert h.measured_lag(41, T0 + 5_000) == 15.0 and h.measured_lag(43, T0) is None
    assert h.measured_lag(40, T0 - 20_000) == 0.0, "a producer clock ahead of the emitter's: never negative"
    assert EndOffsetHistory.from_state(h.to_state()).measured_lag(41, T0) == 10.0
    old = h.to_state()
    del old["oldest"]
    assert EndOffsetHistory.from_state(old).measured_lag(41, T0) is None, "a state written before: interpolated"
    h.observe(EndOffsetSample(100, 100, 0, T0 + 5_000))
    assert h.measured_lag(41, T0 + 5_000) is None
