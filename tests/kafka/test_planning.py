"""The Spark source's offset bookkeeping (``streaming.kafka.planning``): checkpointed offsets as JSON, how far a
batch reads under ``maxOffsetsPerTrigger``, which ranges that makes, and how they are dealt out to read tasks.

The rate limit follows Spark's own Kafka source: a batch reads at most the limit, shared across partitions in
proportion to what each has waiting; the small heartbeat topic is never limited, so the model's clock keeps up."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.kafka.planning import from_json_offsets, limit_offsets, plan_ranges, split_tasks, to_json_offsets
from streaming.kafka.reader import OffsetRange


# ---- offsets as Spark checkpoints them ---------------------------------------------------------------------------

def test_offsets_are_written_as_spark_checkpoints_them_and_read_back():
    offsets = {("t", 10): 5, ("t", 2): 7, ("a", 0): 0}
    written = to_json_offsets(offsets)
    assert written == {"a": {"0": 0}, "t": {"2": 7, "10": 5}}, "JSON keys are strings"
    assert list(written) == ["a", "t"] and list(written["t"]) == ["2", "10"], "sorted by topic, then partition number"
    assert from_json_offsets(written) == offsets


def test_offsets_read_from_a_checkpoint_are_integers_whatever_json_gave():
    assert from_json_offsets({"t": {"3": "42"}}) == {("t", 3): 42}


# ---- how far a batch reads ---------------------------------------------------------------------------------------

def test_without_a_limit_everything_available_is_read():
    assert limit_offsets({("t", 0): 5}, {("t", 0): 900, ("t", 1): 3}, None) == {("t", 0): 900, ("t", 1): 3}


def test_a_limit_is_shared_in_proportion_to_what_each_partition_has_waiting():
    # 300 and 100 waiting (400 in all), 100 allowed: 3/4 and 1/4 of the budget
    assert limit_offsets({("t", 0): 0, ("t", 1): 1000}, {("t", 0): 300, ("t", 1): 1100}, 100) == \
        {("t", 0): 75, ("t", 1): 1025}


def test_a_batch_within_the_limit_reads_everything():
    assert limit_offsets({("t", 0): 0}, {("t", 0): 100}, 100) == {("t", 0): 100}


def test_the_heartbeat_topic_is_read_in_full_and_does_not_count_against_the_limit():
    got = limit_offsets({}, {("hb", 0): 500, ("t", 0): 1000}, 10, unlimited_topics=frozenset({"hb"}))
    assert got == {("hb", 0): 500, ("t", 0): 10}


def test_an_end_below_the_start_never_moves_a_partition_back():
    """A partition truncated under the job (an unclean leader election): the next batch starts where it was."""
    assert limit_offsets({("t", 0): 50}, {("t", 0): 20}, None) == {("t", 0): 50}
    assert plan_ranges({("t", 0): 50}, {("t", 0): 50}) == []


def test_a_limit_smaller_than_the_partitions_still_makes_progress():
    """Every share rounds down to nothing (2 rows among 5 partitions of 10): one row each until the budget is spent,
    never a batch that reads nothing while records wait."""
    start = {("t", p): 0 for p in range(5)}
    got = limit_offsets(start, {("t", p): 10 for p in range(5)}, 2)
    assert sum(got.values()) == 2 and max(got.values()) == 1


_TPS = st.tuples(st.sampled_from(["hb", "t", "u"]), st.integers(0, 5))


@given(st.dictionaries(_TPS, st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), min_size=1),
       st.integers(1, 20_000))
def test_a_limited_batch_reads_at_most_the_limit_moves_forward_and_never_stalls(offsets, max_rows):
    start = {tp: s for tp, (s, _) in offsets.items()}
    end = {tp: e for tp, (_, e) in offsets.items()}
    got = limit_offsets(start, end, max_rows, unlimited_topics=frozenset({"hb"}))
    assert set(got) == set(end)
    for tp, offset in got.items():
        assert start[tp] <= offset <= max(start[tp], end[tp])
        if tp[0] == "hb":
            assert offset == max(start[tp], end[tp])
    limited = [tp for tp in got if tp[0] != "hb"]
    read = sum(got[tp] - start[tp] for tp in limited)
    waiting = sum(max(0, end[tp] - start[tp]) for tp in limited)
    assert read <= max_rows
    assert read == waiting if waiting <= max_rows else read > 0


# ---- ranges and read tasks ---------------------------------------------------------------------------------------

def test_ranges_cover_what_the_batch_reads_and_skip_partitions_with_nothing_new():
    got = plan_ranges({("t", 0): 10, ("t", 1): 7}, {("t", 1): 7, ("t", 0): 25, ("u", 3): 4})
    assert got == [OffsetRange("t", 0, 10, 25), OffsetRange("u", 3, 0, 4)], "a partition seen first starts at 0"


def test_ranges_go_largest_first_onto_the_lightest_task():
    ranges = [OffsetRange("t", p, 0, size) for p, size in enumerate([10, 50, 20, 40, 30])]
    # By hand: 50 -> A; 40 -> B; 30 -> B (40 < 50); 20 -> A (50 < 70); 10 -> A (70 = 70: the first).
    assert split_tasks(ranges, 2) == [[ranges[1], ranges[2], ranges[0]], [ranges[3], ranges[4]]]


@pytest.mark.parametrize("tasks, want", [(0, 1), (1, 1), (3, 3), (10, 4)])
def test_there_are_never_more_tasks_than_asked_or_than_ranges(tasks, want):
    ranges = [OffsetRange("t", p, 0, 5) for p in range(4)]
    got = split_tasks(ranges, tasks)
    assert len(got) == want
    assert sorted(r.partition for task in got for r in task) == [0, 1, 2, 3]


def test_no_ranges_make_no_tasks():
    assert split_tasks([], 4) == []


@given(st.lists(st.integers(0, 1000), max_size=30), st.integers(1, 8))
def test_every_range_is_read_once_and_no_task_is_heavier_than_the_lightest_by_more_than_a_range(sizes, tasks):
    ranges = [OffsetRange("t", p, 0, size) for p, size in enumerate(sizes)]
    got = split_tasks(ranges, tasks)
    assert sorted(r.partition for task in got for r in task) == list(range(len(sizes)))
    assert len(got) <= tasks
    if len(got) > 1:
        loads = [sum(r.size for r in task) for task in got]
        assert max(loads) - min(loads) <= max(sizes), loads


def test_named_ranges_ride_with_the_first_task_and_weigh_nothing():
    named = [OffsetRange("offsets", p, 0, 1_000_000) for p in range(3)]
    read = [OffsetRange("hb", 0, 0, 5), OffsetRange("hb", 1, 0, 3)]
    assert split_tasks(named + read, 2, frozenset({"offsets"})) == [named + [read[0]], [read[1]]]
    assert split_tasks(named, 2, frozenset({"offsets"})) == [named], "names alone are one task"
    assert split_tasks([], 2, frozenset({"offsets"})) == []
