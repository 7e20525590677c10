"""Time to catch up from the commit window and the end-offset history (plain Python, no Spark)."""

from __future__ import annotations

import pytest

from streaming.model.catch_up import (CAUGHT_UP, NOT_CATCHING_UP, UNKNOWN, CatchUp, group_catch_up,
                                      partition_catch_up)

# Production of 10 records/s for a minute: the end offset every 5 s.
ENDS = [(t, 1000 + t // 100) for t in range(0, 60_001, 5_000)]


def test_consumer_faster_than_producer_catches_up_at_the_net_rate():
    # 30 records/s consumed over the last 20 s, 10/s produced: the lag of 400 goes at 20/s, in 20 s.
    commits = [(40_000, 1000), (50_000, 1300), (60_000, 1600)]
    c = partition_catch_up(400, commits, ENDS, 60_000)
    assert c.catching_up is True
    assert c.seconds == pytest.approx(20.0)


def test_consumer_slower_than_producer_is_not_catching_up():
    commits = [(40_000, 1000), (50_000, 1050), (60_000, 1100)]  # 5/s against 10/s
    assert partition_catch_up(500, commits, ENDS, 60_000) == NOT_CATCHING_UP


def test_a_consumer_that_stopped_committing_slows_down_until_it_is_not_catching_up():
    commits = [(20_000, 1000), (30_000, 1300)]  # 30/s, then nothing since 30 s
    assert partition_catch_up(500, commits, ENDS, 30_000).catching_up is True
    assert partition_catch_up(500, commits, ENDS, 60_000) == NOT_CATCHING_UP  # 300 in 40 s < 400 produced


def test_a_consumer_keeping_up_has_caught_up_though_its_lag_is_not_zero():
    # Commits every 5 s of where the log ended 2 s before: consumption equals production, and the 20 records
    # that arrived since the last commit are no backlog. By the rates alone it would never catch up.
    commits = [(50_000, 1480), (55_000, 1530), (60_000, 1580)]
    assert partition_catch_up(20, commits, ENDS, 60_000) == CAUGHT_UP
    # The same commits a minute later, nothing committed since: a backlog now, not catching up.
    assert partition_catch_up(620, commits, ENDS + [(t, 1000 + t // 100) for t in range(65_000, 120_001, 5_000)],
                              120_000) == NOT_CATCHING_UP


def test_no_lag_is_caught_up_and_too_little_data_is_unknown():
    assert partition_catch_up(0, [], [], 0) == CAUGHT_UP
    assert partition_catch_up(None, [(0, 1), (9_000, 9)], ENDS, 10_000) == UNKNOWN
    assert partition_catch_up(5, [(50_000, 1)], ENDS, 60_000) == UNKNOWN  # one commit: no rate
    assert partition_catch_up(5, [(50_000, 1), (51_000, 9)], [], 60_000) == UNKNOWN  # no end history
    assert partition_catch_up(5, [(59_000, 1), (59_500, 9)], ENDS, 60_000) == UNKNOWN  # span too short
    late = [(30_000, 100), (60_000, 100)]
    assert partition_catch_up(5, [(10_000, 1), (20_000, 9)], late, 60_000) == UNKNOWN  # history starts later
    # commits before the history's first sample are left out: the span starts at the first one it covers
    assert partition_catch_up(300, [(20_000, 0), (40_000, 600), (60_000, 1200)], [(30_000, 100), (60_000, 400)],
                              60_000) == CatchUp(True, pytest.approx(15.0))


def test_idle_producer_catches_up_at_the_consumption_rate():
    ends = [(0, 2000), (60_000, 2000)]
    c = partition_catch_up(600, [(0, 800), (60_000, 1400)], ends, 60_000)  # 10/s, nothing produced
    assert c == CatchUp(True, pytest.approx(60.0))


def test_group_is_its_slowest_partition_and_not_catching_up_wins():
    assert group_catch_up([CAUGHT_UP, CatchUp(True, 30.0), CatchUp(True, 12.0)]) == CatchUp(True, 30.0)
    assert group_catch_up([CatchUp(True, 30.0), UNKNOWN]) == UNKNOWN
    assert group_catch_up([UNKNOWN, NOT_CATCHING_UP, CatchUp(True, 1.0)]) == NOT_CATCHING_UP
    assert group_catch_up([]) == CatchUp(True, 0.0)


def test_the_shard_reports_each_partitions_and_its_groups_catch_up():
    # Wiring through the model: heartbeats every 5 s with 10 records/s produced, a fast consumer (30/s) on
    # partition 0 and a slow one (5/s) on partition 1 of the same group; a snapshot carries both figures.
    from streaming.model.shard import GroupCoordinatorShard

    shard = GroupCoordinatorShard(0)
    offset = 0
    for t in range(0, 60_001, 5_000):
        shard.apply_heartbeat(t, {("orders", 0): 2000 + t // 100, ("orders", 1): 2000 + t // 100})
        if t >= 30_000:
            for partition, rate in ((0, 30), (1, 5)):
                shard.replay_offset_commit(offset, "g", "orders", partition, 1000 + rate * (t - 30_000) // 1000,
                                           0, "", t, t)
                offset += 1
    g = next(x for x in shard.snapshot(60_000).groups if x.group_id == "g")
    fast, slow = sorted(g.partitions, key=lambda p: p.partition)
    # fast: lag 2600 - 1900 = 700, consuming 900 and producing 300 over 30 s: 20/s net, 35 s
    assert fast.catch_up.catching_up is True and fast.catch_up.seconds == pytest.approx(35.0)
    assert slow.catch_up == NOT_CATCHING_UP
    assert g.catch_up == NOT_CATCHING_UP
