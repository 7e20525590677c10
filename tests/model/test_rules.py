"""Status rules, Burrow style: a numbered table of offset histories with the expected status and the rule.

How to add a case: append a tuple ``(id, commits, ends, current_lag, now, low_watermark, expected status, rule)``
with a comment saying why that answer is right. Times are seconds (converted to ms); commits are
``(time, offset)``; ends are ``(time, end offset)`` heartbeat samples.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from streaming.model.rules import RULES, Ownership, Status, Thresholds, evaluate_partition, group_status

TH = Thresholds()  # defaults: STOP floor 30 s or 5 commit intervals, WARN from 10 s behind, trend over 30 s
S = 1000
ALONE = Ownership(membership_known=False)  # a simple group: commits are all there is
OWNED = Ownership(True, False, "m1", "c1@h", None)  # owner present, its last commit filled in per case
EMPTY = Ownership(True, True)


def owned(last_commit_s: float) -> Ownership:
    return Ownership(True, False, "m1", "c1@h", int(last_commit_s * S))


def every(step: float, until: float, start: float = 0, offset0: int = 0, rate: float = 10):
    """Commits every ``step`` s from ``start`` to ``until``, keeping pace with a producer at ``rate``/s."""
    out, t = [], start
    while t <= until:
        out.append((t, offset0 + int(t * rate)))
        t += step
    return out[-8:]


def produced(until: float, rate: float = 10, start: float = 0, offset0: int = 0, step: float = 1):
    out, t = [], start
    while t <= until:
        out.append((t, offset0 + int(t * rate)))
        t += step
    return out[-64:]


CASES = [
    # (id, commits, ends, lag, now, low watermark, ownership, previous, expected status, rule)
    # 1. Idle partition: producer silent for hours, consumer caught up: OK although the last commit is old.
    (1, [(0, 100)], [(0, 100), (7200, 100)], 0, 7200, -1, ALONE, None, Status.OK, "caught_up"),
    # 2. Healthy consumer committing every second while the producer writes 10/s: a few records behind, OK.
    (2, every(1, 100), produced(100.5), 5, 100.5, -1, owned(100), Status.OK, Status.OK, "progressing"),
    # 3. Falling behind: consumes 5/s of 10/s for 100 s: 50 s behind and lag growing.
    (3, every(1, 100, rate=5), produced(100), 500, 100, -1, owned(100), Status.OK, Status.WARN, "falling_behind"),
    # 4. Same lag, but it was WARN and is not catching up (lag flat): WARN holds (no flapping).
    (4, [(t, 10 * t) for t in range(93, 101)], [(t, 10 * t + 500) for t in range(40, 101)], 500,
     100, -1, owned(100), Status.WARN, Status.WARN, "falling_behind"),
    # 4b. WARN holds through the saw-tooth of a 5 s committer: 8 s behind right after a commit (over half of the
    #     15 s threshold) while lag still grows.
    (4.5, [(t, 6 * t) for t in range(60, 101, 5)], [(t, 10 * t - 200) for t in range(40, 101)], 240, 100, -1,
     owned(100), Status.WARN, Status.WARN, "falling_behind"),
    # 5. ... and the same flat lag from OK does not enter WARN: only growth does.
    (5, [(t, 10 * t) for t in range(93, 101)], [(t, 10 * t + 500) for t in range(40, 101)], 500,
     100, -1, owned(100), Status.OK, Status.OK, "progressing"),
    # 6. Catching up after a backlog: lag halves over the horizon, OK although far behind.
    (6, [(t, 20 * t) for t in range(65, 101, 5)], [(t, 10 * t + 2000) for t in range(40, 101)], 1000, 100, -1,
     owned(100), Status.WARN, Status.OK, "progressing"),
    # 7. Stalled: the same offset committed every 5 s while the producer moves on.
    (7, [(80, 500), (85, 500), (90, 500), (95, 500), (100, 500)], produced(100), 500, 100, -1, owned(100), None,
     Status.STALL, "stalled"),
    # 8. Idle partition re-committed every 5 s (caught up at every commit): OK, not a stall.
    (8, [(80, 500), (85, 500), (90, 500), (95, 500)], [(0, 500), (95, 500), (96, 510)], 10, 96.5, -1,
     owned(95), None, Status.OK, "progressing"),
    # 9. Stuck: the owner is in the group and committed nothing for 40 s (cadence 1 s: STOP after 30 s).
    (9, every(1, 60), produced(100), 400, 100, -1, owned(60), Status.OK, Status.STOP, "stuck_member"),
    # 9b. The same owner, a consumer-protocol member that has not followed the group's epoch for 25 s: it stopped
    #     heartbeating (killed), not stuck in its application, and holds the partition until its session expires.
    (9.5, every(1, 60), produced(100), 400, 100, -1,
     Ownership(True, False, "m1", "c1@h", 60_000, owner_silent_ms=25_000), Status.OK, Status.STOP, "silent_member"),
    # 10. Busy elsewhere: this partition has no commit for 40 s but its owner committed another partition 1 s
    #     ago (it drains one partition at a time): lagging, not stopped.
    (10, every(1, 60), produced(100), 400, 100, -1, owned(99), Status.OK, Status.WARN, "owner_busy_elsewhere"),
    # 10b. ... but an owner that moved another partition forward 1 s ago and is 1 s behind there keeps that one
    #      current: this one is held (paused, or stuck on a record), STOP.
    (10.5, every(1, 60), produced(100), 400, 100, -1,
     Ownership(True, False, "m1", "c1@h", 99 * S, owner_windows=(tuple((int(t * S), o) for t, o in every(1, 99)),), owner_behind_ms=(1_000.0,)),
     Status.OK, Status.STOP, "partition_held"),
    # 10c. ... unless the group rebalanced 5 s ago: the partition may have just moved to this owner (its previous one
    #      left after hanging), which has not had 30 s with it yet.
    (10.7, every(1, 60), produced(100), 400, 100, -1,
     Ownership(True, False, "m1", "c1@h", 99 * S, owner_windows=(tuple((int(t * S), o) for t, o in every(1, 99)),),
               owner_behind_ms=(1_000.0,), assigned_since_ms=95 * S),
     Status.WARN, Status.WARN, "owner_busy_elsewhere"),
    # 11. Nobody in the group and new data for 15 s: STOP at once (after the 10 s grace).
    (11, every(1, 60), produced(75), 150, 75, -1, EMPTY, Status.OK, Status.STOP, "no_members"),
    # 12. ... but within the grace (a one-member group restarting) it is not STOP yet.
    (12, every(1, 60), produced(66), 60, 66, -1, EMPTY, Status.OK, Status.OK, "progressing"),
    # 13. A simple group (no membership in the log): no commit for 40 s while behind is STOP.
    (13, every(1, 60), produced(100), 400, 100, -1, ALONE, Status.OK, Status.STOP, "stopped"),
    # 14. A batch job committing every 600 s: 300 s since its last commit is within 5 intervals: not STOP, and
    #     300 s behind is less than 3 intervals: not WARN either.
    (14, [(t, 10 * t) for t in range(0, 3601, 600)], produced(3900, step=60), 3000, 3900, -1, owned(3600),
     Status.OK, Status.OK, "progressing"),
    # 15. Unowned: the group has members but none holds this partition, no commit for 40 s.
    (15, every(1, 60), produced(100), 400, 100, -1, Ownership(True, False, None), Status.OK, Status.STOP,
     "unowned"),
    # 15a. The same, but no member subscribes to the topic any more: offsets left from an earlier subscription.
    (15.2, every(1, 60), produced(100), 400, 100, -1, Ownership(True, False, None, topic_subscribed=False),
     Status.OK, Status.STOP, "unsubscribed"),
    # 15b. The same, but the log cannot say who holds what (an undecodable classic protocol, a streams group's
    #      tasks): judged by commits alone, like a simple group.
    (15.5, every(1, 60), produced(100), 400, 100, -1, Ownership(True, False, None, assignment_known=False),
     Status.OK, Status.STOP, "stopped"),
    # 16. Rewind: the offset went from 500 back to 100 (reset to earliest) and has not recovered.
    (16, [(0, 400), (60, 500), (120, 100), (180, 150)], [(0, 500), (180, 600)], 450, 190, -1, owned(180), None,
     Status.REWIND, "rewind"),
    # 17. Recovered rewind: back above the pre-rewind peak, so no longer a rewind.
    (17, [(0, 400), (60, 500), (120, 100), (180, 520)], [(0, 500), (180, 530)], 10, 190, -1, owned(180), None,
     Status.OK, "progressing"),
    # 18. Data loss: retention deleted records below offset 1000; the group committed 900.
    (18, [(0, 900)], [(0, 2000)], 1100, 10, 1000, ALONE, None, Status.ERR, "data_loss"),
    # 19. No end offsets yet (no heartbeat): cannot judge, OK.
    (19, [(0, 10), (60, 20), (120, 30)], [], None, 120, -1, ALONE, None, Status.OK, "no_end_offsets"),
    # 20. One commit so far (cadence unknown): a member gets its max.poll.interval (300 s here) before STOP;
    #     100 s without a commit while falling behind is WARN meanwhile.
    (20, [(0, 10)], produced(100), 990, 100, -1, Ownership(True, False, "m1", "c1@h", 0, 300_000), None,
     Status.WARN, "falling_behind"),
    # 20b. A simple group (assign() and commit, as stream processors do on their checkpoints) with one commit so far,
    #      120 s ago, behind since: a job that commits every few minutes is not STOP before its second commit.
    (20.2, [(0, 10)], produced(120), 1190, 120, -1, ALONE, None, Status.WARN, "falling_behind"),
    # 20c. ... but with no second commit after stop_first_interval (300 s) it is STOP.
    (20.5, [(0, 10)], produced(310, step=5), 3090, 310, -1, ALONE, Status.WARN, Status.STOP, "stopped"),
    # 20d. A member whose max.poll.interval is longer than that gets its own before STOP (stuck in its first poll
    #      interval: STOP only once Kafka itself would have given up on it).
    (20.7, [(0, 10)], produced(500, step=10), 4990, 500, -1, Ownership(True, False, "m1", "c1@h", 0, 600_000), Status.WARN,
     Status.WARN, "falling_behind"),
    (20.8, [(0, 10)], produced(620, step=10), 6190, 620, -1, Ownership(True, False, "m1", "c1@h", 0, 600_000), Status.WARN,
     Status.STOP, "stuck_member"),
    # 21. Waiting its turn: the same offset committed every 5 s while lag grows (as in 7), but the owner moved another
    #     of its partitions forward 3 s ago and is 40 s behind there (a slow consumer draining one partition's fetched
    #     records after another, committing every assigned position): lagging, not stalled.
    (21, [(80, 500), (85, 500), (90, 500), (95, 500), (100, 500)], produced(100), 500, 100, -1,
     Ownership(True, False, "m1", "c1@h", 100_000, owner_windows=(((92_000, 400), (97_000, 600)),),
               owner_behind_ms=(40_000.0,)), None,
     Status.WARN, "waiting_turn"),
    # 21c. ... but an owner 2 s behind on the partition it moved is keeping that one current: this partition is held
    #      (paused, a poison record retried) beside it, stalled.
    (21.7, [(80, 500), (85, 500), (90, 500), (95, 500), (100, 500)], produced(100), 500, 100, -1,
     Ownership(True, False, "m1", "c1@h", 100_000, owner_windows=(((92_000, 400), (97_000, 600)),),
               owner_behind_ms=(2_000.0,)), None,
     Status.STALL, "stalled"),
    # 21b. ... but an owner whose last forward move is the one this partition made with it (all its partitions
    #      paused together, committed in one request) is stalled.
    (21.5, [(75, 400), (80, 500), (85, 500), (90, 500), (95, 500), (100, 500)], produced(100), 500, 100, -1,
     Ownership(True, False, "m1", "c1@h", 100_000, owner_windows=(((75_000, 400), (80_000, 500), (100_000, 500)),)),
     None, Status.STALL, "stalled"),
    # 22. A stream processor committing on its checkpoints every 60 s while it works off a backlog: lag drops by
    #     600 at every commit (20/s consumed, 10/s produced), but 30 s after a commit it is higher than 30 s before
    #     (no commit in between). Over whole commit intervals it is catching up: OK, and a WARN it held is left.
    (22, [(t, 20 * t) for t in range(0, 421, 60)], [(t, 10 * t + 6000) for t in range(330, 451, 2)], 2100,
     450, -1, owned(420), Status.WARN, Status.OK, "progressing"),
    # 23. A burst absorbed: caught up until a burst of 3,000 records at 70 s, then committing every 5 s and gaining
    #     100/s on the end. Lag is higher than 30 s ago (before the burst) and 20 s behind, but it falls at every
    #     commit: OK.
    (23, [(t, 10 * t if t < 70 else 700 + 110 * (t - 70)) for t in range(55, 91, 5)],
     [(t, 10 * t + 3000 * (t >= 70)) for t in range(27, 91)], 1000, 90, -1, owned(90), Status.OK, Status.OK,
     "progressing"),
    # 24. One commit so far, 40 s ago, far behind (a consumer back from an outage that commits every minute): its
    #     lag grows only because there is no second commit yet; no WARN before a minute without one.
    (24, [(0, 10)], produced(40, offset0=5000), 5390, 40, -1, Ownership(True, False, "m1", "c1@h", 0, 300_000),
     None, Status.OK, "progressing"),
    # 25. Kafka's Java consumer too slow for its input (5 of 10 records/s), auto-committing at each poll, 20 s
    #     apart: 43 s behind (over two commit intervals) and lag growing is WARN.
    (25, [(t, 5 * t) for t in range(6, 87, 20)], produced(86), 430, 86, -1, owned(86), Status.OK, Status.WARN,
     "falling_behind"),
    # 26. Kafka away from 40 s to 100 s: the first heartbeat after it moves the clock 60 s on. At 105 s the member
    #     last committed 65 s ago, but Kafka has been back for 5 s only: the status before (OK) is kept, not STOP.
    (26, [(t, 10 * t) for t in range(0, 41, 2)], [(t, 10 * t) for t in range(0, 42)] + [(105, 1050)], 650, 105, -1,
     replace(owned(40), kafka_outage=(40_000, 100_000)), Status.OK, Status.OK, "kafka_returning"),
    # 27. The same member still silent 35 s after Kafka is back (more than its STOP time of 30 s): stuck, STOP.
    (27, [(t, 10 * t) for t in range(0, 41, 2)], [(t, 10 * t) for t in range(0, 42)] + [(135, 1350)], 950, 135, -1,
     replace(owned(40), kafka_outage=(40_000, 100_000)), Status.OK, Status.STOP, "stuck_member"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_rules(case):
    _, commits, ends, lag, now, lwm, ownership, previous, status, rule = case
    verdict = evaluate_partition([(int(t * S), o) for t, o in commits], [(int(t * S), e) for t, e in ends], lag,
                                 int(now * S), TH, lwm, ownership, previous)
    assert (verdict.status, verdict.rule) == (status, rule), verdict.reason
    assert verdict.reason, "every verdict says why"


def test_every_rule_is_exercised():
    assert {c[-1] for c in CASES} == {rule.name for rule in RULES}


def test_status_order_harmless_to_worst():
    assert [s.name for s in sorted(Status)] == ["OK", "WARN", "STALL", "STOP", "REWIND", "ERR"]
    assert group_status([Status.OK, Status.STALL, Status.WARN]) == Status.STALL
    assert group_status([]) == Status.OK


@pytest.mark.parametrize("kwargs", [dict(allowed_lag=-1), dict(min_window=1), dict(window=1),
                                    dict(stop_after_ms=0), dict(catching_up_ratio=1.5),
                                    dict(stop_first_interval_ms=0)])
def test_thresholds_validate(kwargs):
    with pytest.raises(ValueError):
        Thresholds(**kwargs)


def test_a_short_window_and_a_low_ceiling_give_way():
    """The stall count is at most the window and the STOP ceiling at least its floor, so a user setting one of a
    pair (``commit_window: 2``, ``stop_after_seconds: 7200``) need not set the other."""
    th = Thresholds(window=2, stop_after_ms=7_200_000)
    assert (th.min_window, th.stop_max_ms) == (2, 7_200_000)


def test_empty_window_is_a_caller_error():
    with pytest.raises(ValueError):
        evaluate_partition([], [], 0, 0)


def test_the_time_the_end_passed_a_committed_offset():
    """The first end sample beyond the committed offset (the ends never go down), as a plain scan finds it."""
    from streaming.model.rules import _passed_at

    ends = [(1000, 10), (2000, 10), (3000, 25), (4000, 25), (5000, 40)]

    def scan(committed):
        return next((t for t, e in ends if e > committed), None)

    for committed in range(-1, 45):
        assert _passed_at(ends, committed) == scan(committed), committed
    assert _passed_at([], 5) is None
