"""Offset lag and time lag from heartbeat end offsets, each rule of streaming/model/lag.py on numbers worked out
by hand: clamping, the LSO/HWM choice, the trailing-marker and quiet-tail rules, interpolation between samples,
the lower bound past the history, measured lag, flat-line compression and thinning."""

from __future__ import annotations

import pytest

from streaming.model.lag import EndOffsetHistory, EndOffsetSample, offset_lag


@pytest.mark.parametrize(
    "committed, hwm, lso, transactional, quiet_from, expected",
    [
        (40, 100, -1, False, -1, (100, 60)),  # no LSO reported: the high watermark is the end
        (40, 100, 90, False, -1, (90, 50)),  # read_committed stops at the LSO
        (40, 100, 120, False, -1, (100, 60)),  # a racing sample with LSO > HWM does not inflate lag
        (150, 100, -1, False, -1, (100, 0)),  # committed past the end (timing skew): never negative
        (99, 100, 100, True, -1, (100, 0)),  # on the final marker of a transactional partition
        (99, 100, 100, False, -1, (100, 1)),  # ... but not on a partition without transactions
        (98, 100, 100, True, -1, (100, 2)),  # two left is a record, not just a marker
        (99, 100, 99, True, -1, (99, 0)),  # an open transaction: the LSO is the end
        (80, 100, -1, False, 75, (100, 0)),  # committed inside a quiet tail
        (70, 100, -1, False, 75, (100, 30)),  # committed before it
    ],
)
def test_offset_lag(committed, hwm, lso, transactional, quiet_from, expected):
    assert offset_lag(committed, hwm, lso, transactional, quiet_from) == expected


def test_offset_lag_refuses_a_negative_high_watermark():
    with pytest.raises(ValueError, match="high watermark"):
        offset_lag(0, -1)


def _history(*samples: tuple[int, int], capacity: int = 64) -> EndOffsetHistory:
    h = EndOffsetHistory(capacity)
    for t, end in samples:
        h.observe(EndOffsetSample(high_watermark=end, time_ms=t))
    return h


def test_time_lag_interpolates_when_the_end_passed_the_committed_offset():
    """End 0 at t=0 s and 100 at t=10 s: the record at offset 49 was appended when the end went 49 → 50, at 5 s;
    at t=20 s it has waited 15 s."""
    h = _history((0, 0), (10_000, 100))
    assert h.time_lag(49, now_ms=20_000) == (15.0, False)
    assert h.time_lag(99, now_ms=20_000) == (10.0, False)


def test_time_lag_before_the_history_is_a_lower_bound():
    h = _history((10_000, 100), (20_000, 200))
    assert h.time_lag(50, now_ms=30_000) == (20.0, True)  # now - oldest sample, flagged


def test_time_lag_is_zero_when_caught_up_and_none_without_history():
    h = _history((0, 0), (10_000, 100))
    assert h.time_lag(100, now_ms=99_000) == (0.0, False)
    assert EndOffsetHistory().time_lag(5, now_ms=1) == (None, False)


def test_time_lag_never_negative_with_a_clock_behind():
    h = _history((0, 0), (10_000, 100))
    assert h.time_lag(49, now_ms=1_000) == (0.0, False)


def test_flat_line_moves_the_newest_time_instead_of_appending():
    h = _history((0, 10), (1_000, 10), (2_000, 10), (3_000, 10), (4_000, 12))
    assert h.samples() == ((0, 10), (3_000, 10), (4_000, 12))


def test_out_of_order_samples_are_ignored():
    h = _history((5_000, 10), (4_000, 50), (5_000, 60))
    assert (h.hwm, h.samples()) == (10, ((5_000, 10),))


def test_an_end_that_goes_backwards_drops_the_history():
    """A recreated topic or an unclean truncation: the old samples say nothing about the new log."""
    h = _history((0, 100), (1_000, 200), (2_000, 5))
    assert h.samples() == ((2_000, 5),)


def test_open_transaction_marks_the_partition_transactional_and_voids_quiet_from():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(high_watermark=100, last_stable_offset=90, time_ms=1, quiet_from=95))
    assert h.transactional and h.quiet_from == -1 and h.end == 90
    h.observe(EndOffsetSample(high_watermark=100, last_stable_offset=100, time_ms=2, quiet_from=95))
    assert h.quiet_from == 95 and h.lag(96) == (100, 0)
    h.observe(EndOffsetSample(high_watermark=100, time_ms=3, transactional=False))
    assert not h.transactional  # an explicit report wins over the inference


def test_measured_lag_uses_the_oldest_record_covering_the_offset():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(high_watermark=100, time_ms=60_000, oldest=((10, 20, 30_000), (50, 50, 59_000))))
    assert h.measured_lag(10, now_ms=60_000) == 30.0
    assert h.measured_lag(20, now_ms=60_000) == 30.0
    assert h.measured_lag(21, now_ms=60_000) is None
    assert h.measured_lag(50, now_ms=58_000) == 0.0  # a producer clock ahead: not from the future


def test_thinning_keeps_oldest_and_newest_and_bounds_the_size():
    h = _history(*((i * 5_000, i * 10) for i in range(200)), capacity=16)
    samples = h.samples()
    assert len(samples) <= 16
    assert samples[0] == (0, 0) and samples[-1] == (199 * 5_000, 1990)
    times = [t for t, _ in samples]
    assert times == sorted(times)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[0] > gaps[-1]  # older samples are sparser than the newest


def test_state_round_trip_keeps_every_answer():
    h = _history((0, 0), (10_000, 100), (20_000, 150))
    h.observe(EndOffsetSample(high_watermark=160, last_stable_offset=155, time_ms=30_000, oldest=((1, 2, 3),)))
    back = EndOffsetHistory.from_state(h.to_state())
    assert back.samples() == h.samples()
    assert (back.hwm, back.lso, back.transactional, back.oldest) == (160, 155, True, ((1, 2, 3),))
    assert back.time_lag(49, 40_000) == h.time_lag(49, 40_000)
