"""The driver's state store keeps each group's recent activity only as long as it is recent: a job that runs for
months must not hold a rebalance time for every rebalance it ever saw."""

from __future__ import annotations

from streaming.sinks.state_store import MetricsState

T0 = 1_800_000_000_000
HOUR = 3_600_000


def _rebalance(group: str, at_ms: int) -> dict:
    return {"kind": "Rebalance", "group_id": group, "event_time": at_ms}


def test_activity_older_than_the_window_is_forgotten():
    state = MetricsState()
    state.apply_batch(event_rows=[_rebalance("old", T0), _rebalance("both", T0)], batch_id=0)
    state.apply_batch(event_rows=[_rebalance("both", T0 + HOUR // 2)], batch_id=1)
    assert {g: a.rebalance_ms for g, a in state.view().activity.items()} == {
        "old": (T0,), "both": (T0, T0 + HOUR // 2)}
    # An hour and a half in: what came before the last hour (of the newest event) is gone, a group with nothing
    # left entirely.
    state.apply_batch(event_rows=[_rebalance("new", T0 + 3 * HOUR // 2)], batch_id=2)
    assert {g: a.rebalance_ms for g, a in state.view().activity.items()} == {
        "both": (T0 + HOUR // 2,), "new": (T0 + 3 * HOUR // 2,)}


def test_a_view_keeps_the_activity_it_was_taken_with():
    state = MetricsState()
    state.apply_batch(event_rows=[_rebalance("g", T0)], batch_id=0)
    view = state.view()
    state.apply_batch(event_rows=[_rebalance("g", T0 + 1)], batch_id=1)
    assert view.activity["g"].rebalance_ms == (T0,)
    assert state.view().activity["g"].rebalance_ms == (T0, T0 + 1)
