"""Status rules, Burrow style: a numbered table of offset histories with the expected status and the rule.

How to add a case: append a tuple ``(id, commits, ends, current_lag, now, low_watermark, expected status, rule)``
with a comment saying why that answer is right. Times are seconds (converted to ms); commits are
``(time, offset)``; ends are ``(time, end offset)`` heartbeat samples.
"""

from __future__ import annotations

import pytest

from streaming.model.rules import Status, Thresholds, evaluate_partition, group_status

TH = Thresholds(allowed_lag=0, min_window=3, window=8, stop_after_ms=300_000, stall_recent_ms=300_000)
S = 1000

CASES = [
    # 1. Idle partition: producer silent for hours, consumer caught up: OK although the last commit is old.
    (1, [(0, 100)], [(0, 100), (7200, 100)], 0, 7200, -1, Status.OK, "caught_up"),
    # 2. Healthy consumer: lag goes up and down between commits.
    (2, [(0, 10), (60, 20), (120, 35), (180, 40)], [(0, 12), (60, 25), (120, 36), (180, 45)], 5, 180, -1,
     Status.OK, "progressing"),
    # 3. Falling behind: lag grows at every commit (2, 5, 9, 14).
    (3, [(0, 10), (60, 20), (120, 30), (180, 40)], [(0, 12), (60, 25), (120, 39), (180, 54)], 14, 180, -1,
     Status.WARN, "lag_growing"),
    # 4. Stalled: commits keep coming with the same offset while the producer moves on.
    (4, [(0, 50), (60, 50), (120, 50), (180, 50)], [(0, 60), (60, 70), (120, 80), (180, 90)], 40, 200, -1,
     Status.STALL, "stalled"),
    # 5. Stopped: no commit for 10 minutes, the log end passed the committed offset 10 minutes ago.
    (5, [(0, 10), (60, 20), (120, 30)], [(0, 10), (60, 20), (120, 35), (700, 90)], 60, 720, -1,
     Status.STOP, "stopped"),
    # 6. Not stopped: the consumer was caught up until 30 s ago, when the producer resumed after an idle hour;
    #    its last commit is an hour old only because nothing changed (librdkafka does not re-commit).
    (6, [(0, 100)], [(0, 100), (3600, 100), (3630, 110)], 10, 3640, -1, Status.OK, "window_incomplete"),
    # 7. Rewind: the offset went from 500 back to 100 (reset to earliest) and has not recovered.
    (7, [(0, 400), (60, 500), (120, 100), (180, 150)], [(0, 500), (180, 600)], 450, 190, -1,
     Status.REWIND, "rewind"),
    # 8. Recovered rewind: back above the pre-rewind peak, so no longer a rewind.
    (8, [(0, 400), (60, 500), (120, 100), (180, 520)], [(0, 500), (180, 530)], 10, 190, -1,
     Status.OK, "progressing"),
    # 9. Data loss: retention deleted records below offset 1000; the group committed 900.
    (9, [(0, 900)], [(0, 2000)], 1100, 10, 1000, Status.ERR, "data_loss"),
    # 10. Window not yet complete (2 commits < min_window 3): OK even though lag grew.
    (10, [(0, 10), (60, 20)], [(0, 15), (60, 30)], 10, 60, -1, Status.OK, "window_incomplete"),
    # 11. No end offsets yet (no heartbeat): cannot judge, OK.
    (11, [(0, 10), (60, 20), (120, 30)], [], None, 120, -1, Status.OK, "no_end_offsets"),
    # 12. Stall needs recent commits: same offsets but the last commit is 20 minutes old -> STOP, not STALL.
    (12, [(0, 50), (60, 50), (120, 50)], [(0, 60), (1320, 90)], 40, 1320, -1, Status.STOP, "stopped"),
    # 13. Within allowed lag (allowed_lag 0, lag 0) after a transaction marker: caught up.
    (13, [(0, 99)], [(0, 100)], 0, 600, -1, Status.OK, "caught_up"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{c[0]}" for c in CASES])
def test_rules(case):
    _, commits, ends, lag, now, lwm, status, rule = case
    verdict = evaluate_partition([(t * S, o) for t, o in commits], [(t * S, e) for t, e in ends], lag, now * S, TH,
                                 lwm)
    assert (verdict.status, verdict.rule) == (status, rule)


def test_status_order_harmless_to_worst():
    assert [s.name for s in sorted(Status)] == ["OK", "WARN", "STALL", "STOP", "REWIND", "ERR"]
    assert group_status([Status.OK, Status.STALL, Status.WARN]) == Status.STALL
    assert group_status([]) == Status.OK


@pytest.mark.parametrize("kwargs", [dict(allowed_lag=-1), dict(min_window=0), dict(window=2, min_window=3),
                                    dict(stop_after_ms=0)])
def test_thresholds_validate(kwargs):
    with pytest.raises(ValueError):
        Thresholds(**kwargs)


def test_empty_window_is_a_caller_error():
    with pytest.raises(ValueError):
        evaluate_partition([], [], 0, 0)
