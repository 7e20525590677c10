"""``MetricsState``, the driver's store of the read model: each batch's rows replace what they describe, deleted
groups and partitions leave with every series, a view taken by a scrape does not change under it, only the event
kinds it lists act on it, a re-run batch counts once, and each group's recent activity is kept only as long as it is
recent (a job that runs for months must not hold a rebalance time for every rebalance it ever saw)."""

from __future__ import annotations

from typing import Any

import pytest

from streaming.sinks.monitor_health import MonitorHealth
from streaming.sinks.state_store import MetricsState
from tests.sinks.replay_rows import ScenarioReplay
from tests.sinks.scrape import (PARTITION_METRICS, event, g1_partitions, group_row, names_for_group, partition_row,
                                scrape, value)

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


def test_state_without_partitions_holds_none():
    # With partition-level series off the driver need not hold a row per partition of every group.
    state = MetricsState(keep_partitions=False)
    state.apply_batch([group_row()], g1_partitions())
    assert state.view().partitions == {}
    assert not [k for k in scrape(state, partition_metrics=True) if k[0] == "kafka_consumergroup_lag"]


def test_deleted_group_row_removes_every_series_of_the_group():
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")], g1_partitions(),
                      [event("RebalanceStorm"), event("Rebalance", causes=["member_left"], partitions_moved=2)])
    assert names_for_group(scrape(state, partition_metrics=True), "g1") >= PARTITION_METRICS - {
        "kafka_partition_latest_offset"}
    state.apply_batch([{"group_id": "g1", "deleted": True, "state": "DEAD"}])
    series = scrape(state, partition_metrics=True)
    assert names_for_group(series, "g1") == set()
    assert not [k for k in series if k[0] == "kafka_partition_latest_offset"], "only g1 committed to orders"
    assert value(series, "kafka_consumergroup_members", group="g2") == 2
    # Re-created later: counters start again from 0 (a counter reset Prometheus handles).
    state.apply_batch([group_row("g1")])
    assert value(scrape(state), "kafka_consumergroup_rebalance_storms_total", group="g1") == 0


def test_group_deleted_event_without_a_row_removes_the_group():
    state = MetricsState()
    state.apply_batch([group_row("g1")], g1_partitions())
    state.apply_batch(event_rows=[event("GroupDeleted")])
    assert names_for_group(scrape(state, partition_metrics=True), "g1") == set()


def test_group_deleted_with_a_live_row_keeps_the_group():
    # Kafka converts a classic group to a consumer group by tombstoning it and writing KIP-848 records: the
    # batch has the GroupDeleted event and a live row. The real capture (c_consumer_protocol, gen2) does this.
    replay = ScenarioReplay("c_consumer_protocol")
    state = MetricsState()
    replay.advance("gen1")
    b = replay.batch()
    state.apply_batch(b.groups, b.partitions, b.events)
    replay.advance("gen2-joined-and-migrated-to-consumer")
    b = replay.batch()
    assert ("GroupDeleted", "sc-migrate") in {(e["kind"], e["group_id"]) for e in b.events}
    state.apply_batch(b.groups, b.partitions, b.events)
    series = scrape(state)
    assert value(series, "kafka_consumergroup_state", group="sc-migrate", type="CONSUMER", state="STABLE") == 1
    assert value(series, "kafka_consumergroup_state", group="sc-migrate", type="CLASSIC", state="STABLE") is None


def test_offset_deleted_removes_the_partition_and_a_group_left_without_a_row():
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")], g1_partitions() + [partition_row("g2", "orders", 0, 1)])
    # g1 still exists (its row comes with the batch): only the partition goes.
    state.apply_batch([group_row("g1", partition_count=2)],
                      event_rows=[event("OffsetDeleted", topic="orders", partition=1)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_lag", group="g1", topic="orders", partition="1") is None
    assert value(series, "kafka_consumergroup_lag", group="g1", topic="orders", partition="0") == 30
    # g2's last offset expires (a simple group): the model forgets it and the step sends no row for it.
    state.apply_batch(event_rows=[event("OffsetDeleted", "g2", topic="orders", partition=0)])
    assert names_for_group(scrape(state, partition_metrics=True), "g2") == set()


def test_a_view_taken_by_a_scrape_does_not_change_under_it():
    # A scrape builds its families from a view outside the lock; batches applied meanwhile must not alter it.
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    view = state.view()
    state.apply_batch([group_row(partition_count=2)], event_rows=[event("OffsetDeleted", topic="orders", partition=1)])
    state.apply_batch([group_row("g1", sum_lag=0)], [partition_row("g1", "orders", 0, 0)])
    assert len(view.partitions["g1"]) == 3 and view.groups["g1"].sum_lag == 45
    assert len(state.view().partitions["g1"]) == 1


def test_partition_rows_replace_the_groups_previous_partitions():
    # A group snapshot lists all its partitions: one missing from the next snapshot is gone.
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    state.apply_batch(partition_rows=[partition_row("g1", "orders", 0, 3)])
    lag = {dict(k[1])["partition"] + "/" + dict(k[1])["topic"]: v
           for k, v in scrape(state, partition_metrics=True).items() if k[0] == "kafka_consumergroup_lag"}
    assert lag == {"0/orders": 3}


def test_group_row_without_partitions_clears_them():
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    state.apply_batch([group_row(partition_count=0, topics=[], sum_lag=0, max_lag=0)])
    series = scrape(state, partition_metrics=True)
    assert not [k for k in series if k[0] == "kafka_consumergroup_lag"]
    assert value(series, "kafka_consumergroup_partitions", group="g1") == 0


def test_state_change_replaces_the_state_series():
    state = MetricsState()
    state.apply_batch([group_row()])
    state.apply_batch([group_row(state="EMPTY", member_count=0, members=[])])
    states = {dict(k[1])["state"] for k in scrape(state) if k[0] == "kafka_consumergroup_state"}
    assert states == {"EMPTY"}


def test_rows_without_group_id_are_rejected():
    with pytest.raises(ValueError, match="group_id"):
        MetricsState().apply_batch([{"state": "STABLE"}])
    with pytest.raises(ValueError, match="topic/partition"):
        MetricsState().apply_batch(partition_rows=[{"group_id": "g1", "topic": None, "partition": 0}])


def _event_kinds() -> list[str]:
    from streaming.model import events as ev

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    return sorted({c.__name__ for c in subclasses(ev.Event) if not c.__name__.startswith("_")})


@pytest.mark.parametrize("kind", _event_kinds())
def test_only_the_listed_event_kinds_change_the_metrics(kind):
    """The job converts only METRIC_EVENT_KINDS rows for the metrics (a cold start's first batch has a status event
    per group-partition): any kind the state acts on must be in that list, or the job would drop it."""
    from streaming.sinks.state_store import METRIC_EVENT_KINDS

    def after(events):
        state = MetricsState(keep_partitions=True)
        state.apply_batch([group_row("g1"), group_row("g2")], g1_partitions(), batch_id=0)
        state.apply_batch(event_rows=events, batch_id=1)
        return scrape(state, partition_metrics=True)

    changed = after([event(kind, "g1", topic="orders", partition=0)]) != after([])
    assert changed == (kind in METRIC_EVENT_KINDS), \
        f"{kind} {'changes' if changed else 'does not change'} the metrics; METRIC_EVENT_KINDS says otherwise"


def test_a_rerun_batch_does_not_count_its_anomalies_twice():
    # Spark re-runs a micro-batch after a failure with the same batch id: rows are idempotent, counts are not.
    state = MetricsState()
    batch: dict[str, Any] = {"group_rows": [group_row()], "event_rows": [event("Anomaly")]}
    state.apply_batch(**batch, batch_id=7)
    state.apply_batch(**batch, batch_id=7)
    assert value(scrape(state), "groupscope_model_anomalies_total") == 1
    state.apply_batch(**batch, batch_id=8)
    assert value(scrape(state), "groupscope_model_anomalies_total") == 2


def test_the_view_version_counts_applied_batches_and_nothing_else():
    """``/metrics`` keeps the state's series while the version is unchanged: every apply must change it, a
    health update (read on every scrape anyway) need not."""
    state = MetricsState()
    assert state.view().version == 0
    state.apply_batch([])
    state.apply_batch([group_row("g1")], batch_id=7)
    state.apply_batch([group_row("g1")], batch_id=7)  # a re-run batch changes the groups it carries too
    assert state.view().version == 3
    state.set_health(MonitorHealth())
    assert state.view().version == 3
