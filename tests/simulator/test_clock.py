"""The simulator's clock: callbacks run in time order, ties in the order they were scheduled, nothing runs in the
past, and the clock ends exactly where it was asked to. Seeded runs are reproducible only if all of this holds."""

from __future__ import annotations

from streaming.simulator.clock import DEFAULT_START_MS, Scheduler


def test_the_default_start_is_new_year_2026_utc():
    # 2026-01-01T00:00:00Z: 56 years of 365 days plus the 14 leap days of 1972..2024, in ms since the epoch.
    days = 56 * 365 + len(range(1972, 2025, 4))
    assert DEFAULT_START_MS == days * 86_400_000
    assert Scheduler().now_ms == Scheduler().start_ms == DEFAULT_START_MS


def test_callbacks_run_in_time_order_and_ties_in_scheduling_order():
    s = Scheduler(1_000)
    ran: list[tuple[str, int]] = []
    for name, at in (("c", 1_030), ("a", 1_010), ("b1", 1_020), ("b2", 1_020), ("b3", 1_020)):
        s.at(at, lambda name=name: ran.append((name, s.now_ms)))
    assert s.next_time() == 1_010
    assert s.run_until(1_100) == 5
    assert ran == [("a", 1_010), ("b1", 1_020), ("b2", 1_020), ("b3", 1_020), ("c", 1_030)]
    assert s.now_ms == 1_100 and s.next_time() is None


def test_a_time_in_the_past_runs_now_not_before():
    s = Scheduler(5_000)
    s.run_until(6_000)
    seen: list[int] = []
    s.at(5_500, lambda: seen.append(s.now_ms))  # already past: runs at the current instant
    s.after(-200, lambda: seen.append(s.now_ms))
    assert s.next_time() == 6_000
    s.run_until(6_000)
    assert seen == [6_000, 6_000]


def test_run_until_stops_at_the_limit_inclusive_and_leaves_later_callbacks():
    s = Scheduler(0)
    ran: list[int] = []
    for t in (10, 20, 30):
        s.at(t, lambda t=t: ran.append(t))
    assert s.run_until(20) == 2  # a callback due exactly at the limit runs
    assert (ran, s.now_ms, s.next_time()) == ([10, 20], 20, 30)
    assert s.run_until(25) == 0 and s.now_ms == 25
    assert s.run_until(15) == 0 and s.now_ms == 25, "the clock never goes back"


def test_a_callback_can_schedule_more_work_that_runs_in_the_same_call():
    s = Scheduler(0)
    ticks: list[int] = []

    def tick() -> None:
        ticks.append(s.now_ms)
        s.after(1_000, tick)

    s.at(0, tick)
    assert s.run_until(3_500) == 4
    assert ticks == [0, 1_000, 2_000, 3_000]
    assert s.next_time() == 4_000


def test_fractional_delays_are_whole_milliseconds():
    s = Scheduler(0)
    s.after(2.9, lambda: None)  # truncated, as the simulator schedules in integer ms
    assert s.next_time() == 2
