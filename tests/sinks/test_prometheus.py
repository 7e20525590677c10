"""The Prometheus sink without Spark: exact values, series that disappear, opt-in series, health, the endpoint.

Inputs are either small hand-made rows (each case says why its expectation is right) or the real Kafka 4.0
captures replayed through the model (``replay_rows``), so the rows have exactly the shape the job produces.
"""

from __future__ import annotations

import datetime as dt
import math
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from streaming.model.verdicts import RebalanceConfig
from streaming.model.rules import Status
from streaming.model.shard import ModelConfig
from streaming.sinks.prometheus import (
    METRICS,
    GroupscopeCollector,
    MetricsServer,
    MetricsState,
    MonitorHealth,
    OffsetsPartitionHealth,
)
from streaming.job.step import StepHealth
from tests.dashboards.promtools import require, run
from tests.model.replay import truth
from tests.sinks.replay_rows import ScenarioReplay

Series = dict[tuple[str, frozenset], float]

NOW = 1_795_311_000.0  # a fixed "now" for the injected clock (Unix seconds)


def scrape(state: MetricsState, *, partition_metrics: bool = False, clock=lambda: NOW) -> Series:
    """Every sample of one scrape, parsed back from the text format Prometheus reads."""
    server = MetricsServer(state, cluster="c1", partition_metrics=partition_metrics, process_metrics=False,
                           clock=clock)
    text = generate_latest(server.registry).decode()
    out: Series = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def value(series: Series, name: str, **labels: str) -> float | None:
    return series.get((name, frozenset({"cluster": "c1", **labels}.items())))


def names_for_group(series: Series, group: str) -> set[str]:
    return {name for name, labels in series if ("group", group) in labels}


def group_row(group_id: str = "g1", **over: Any) -> dict[str, Any]:
    """A GROUPS row as ``tables.group_row`` builds it (times in epoch ms)."""
    row = {
        "group_id": group_id, "shard": 3, "group_type": "CLASSIC", "state": "STABLE", "protocol_type": "consumer",
        "assignor": "range", "generation": 7, "assignment_epoch": None, "leader": "m-1", "member_count": 2,
        "members": [
            {"member_id": "m-1", "client_id": "app", "host": "/10.0.0.1", "instance_id": None, "partitions": 2,
             "member_epoch": None, "state": None},
            {"member_id": "m-2", "client_id": "app", "host": "/10.0.0.2", "instance_id": None, "partitions": 1,
             "member_epoch": None, "state": None},
        ],
        "partition_count": 3,
        "topics": [{"topic": "orders", "sum_lag": 40, "max_lag": 30, "max_lag_seconds": 12.5},
                   {"topic": "payments", "sum_lag": 5, "max_lag": 5, "max_lag_seconds": None}],
        "sum_lag": 45, "max_lag": 30, "max_lag_seconds": 12.5, "status": "WARN", "data_loss_partitions": 0,
        "rebalances": 6, "last_rebalance_time": 1_795_310_000_000, "last_commit_time": 1_795_310_990_500,
        "state_time": None, "is_simple": False, "deleted": False, "updated_time": 1_795_311_000_000,
        "catch_up_seconds": 90.0, "catching_up": True, "max_lag_seconds_method": "interpolated",
    }
    row.update(over)
    return row


def partition_row(group_id: str, topic: str, partition: int, lag: int, **over: Any) -> dict[str, Any]:
    row = {"snapshot_time": 1_795_311_000_000, "shard": 3, "group_id": group_id, "topic": topic,
           "partition": partition, "committed_offset": 100, "log_end_offset": 100 + lag, "lag": lag,
           "lag_seconds_method": "interpolated",
           "lag_seconds": float(lag), "lag_seconds_lower_bound": False, "data_loss_risk": False, "status": "OK",
           "owner": "m-1", "commit_time": 1_795_310_990_500, "snapshot_date": None,
           "catch_up_seconds": 3.0 * lag, "catching_up": True}
    row.update(over)
    return row


def event(kind: str, group_id: str = "g1", **fields: Any) -> dict[str, Any]:
    """A GROUP_EVENTS row (only the columns the sink reads matter)."""
    return {"kind": kind, "group_id": group_id, "shard": 3, "offset": 1, **fields}


def g1_partitions() -> list[dict[str, Any]]:
    return [partition_row("g1", "orders", 0, 30), partition_row("g1", "orders", 1, 10),
            partition_row("g1", "payments", 0, 5)]


# ------------------------------------------------------------------------------------------------------------
# Exact values from hand-made rows

# (metric, labels beyond cluster/group, expected, why)
GROUP_CASES = [
    ("kafka_consumergroup_group_sum_lag", {}, 45, "row sum_lag"),
    ("kafka_consumergroup_group_max_lag", {}, 30, "row max_lag"),
    ("kafka_consumergroup_group_max_lag_seconds", {}, 12.5, "row max_lag_seconds"),
    ("kafka_consumergroup_topic_sum_lag", {"topic": "orders"}, 40, "topics[orders].sum_lag"),
    ("kafka_consumergroup_topic_max_lag", {"topic": "payments"}, 5, "topics[payments].max_lag"),
    ("kafka_consumergroup_topic_max_lag_seconds", {"topic": "orders"}, 12.5, "topics[orders].max_lag_seconds"),
    ("kafka_consumergroup_catch_up_seconds", {}, 90.0, "catch_up_seconds while catching up"),
    ("kafka_consumergroup_members", {}, 2, "member_count"),
    ("kafka_consumergroup_partitions", {}, 3, "partition_count"),
    ("kafka_consumergroup_generation", {}, 7, "classic generation"),
    ("kafka_consumergroup_state", {"type": "CLASSIC", "state": "STABLE"}, 1, "one series for the current state"),
    ("kafka_consumergroup_info", {"type": "CLASSIC", "protocol_type": "consumer", "assignor": "range",
                                  "simple": "false"}, 1, "info labels from the row"),
    ("kafka_consumergroup_status", {}, 1, "WARN is 1 in Status (OK=0 ... ERR=5)"),
    ("kafka_consumergroup_data_loss_partitions", {}, 0, "data_loss_partitions"),
    ("kafka_consumergroup_last_commit_timestamp_seconds", {}, 1_795_310_990.5, "ms -> s"),
    ("kafka_consumergroup_last_rebalance_timestamp_seconds", {}, 1_795_310_000, "ms -> s"),
    ("kafka_consumergroup_rebalances_total", {}, 6, "the model's own rebalance count"),
    ("kafka_consumergroup_rebalance_storms_total", {}, 0, "exported at 0 before any storm, so rate() sees the 1st"),
    ("kafka_consumergroup_rolling_restarts_total", {}, 0, "same"),
    ("kafka_consumergroup_rebalance_partitions_moved_total", {}, 0, "no Rebalance event yet"),
]


@pytest.mark.parametrize("metric,labels,expected,why", GROUP_CASES, ids=[c[0] + ":" + c[3] for c in GROUP_CASES])
def test_group_values_are_the_row_values(metric, labels, expected, why):
    state = MetricsState()
    state.apply_batch([group_row()])
    assert value(scrape(state), metric, group="g1", **labels) == expected, why


def test_unknown_values_are_absent_not_zero():
    # A time lag without end-offset history, a classic group's assignment epoch, an unknown status: absent series
    # say "unknown"; 0 would claim "caught up" or "epoch 0".
    state = MetricsState()
    state.apply_batch([group_row(max_lag_seconds=None, status="SOMETHING_NEW", last_commit_time=None)])
    series = scrape(state)
    for metric in ("kafka_consumergroup_group_max_lag_seconds", "kafka_consumergroup_assignment_epoch",
                   "kafka_consumergroup_status", "kafka_consumergroup_last_commit_timestamp_seconds"):
        assert value(series, metric, group="g1") is None, metric
    assert value(series, "kafka_consumergroup_topic_max_lag_seconds", group="g1", topic="payments") is None


def test_not_catching_up_is_inf_and_unknown_is_absent():
    state = MetricsState()
    state.apply_batch([group_row("g1", catch_up_seconds=None, catching_up=False),
                       group_row("g2", catch_up_seconds=None, catching_up=None)],
                      [partition_row("g1", "orders", 0, 7, catch_up_seconds=None, catching_up=False)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_catch_up_seconds", group="g1") == math.inf
    assert value(series, "kafka_consumergroup_partition_catch_up_seconds", group="g1", topic="orders",
                 partition="0") == math.inf
    assert value(series, "kafka_consumergroup_catch_up_seconds", group="g2") is None


@pytest.mark.parametrize("status", list(Status), ids=[s.name for s in Status])
def test_status_numbers_follow_the_enum(status):
    state = MetricsState()
    state.apply_batch([group_row(status=status.name)], [partition_row("g1", "orders", 0, 1, status=status.name)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_status", group="g1") == status.value
    assert value(series, "kafka_consumergroup_partition_status", group="g1", topic="orders", partition="0") \
        == status.value


def test_rows_read_back_from_arrow_give_the_same_values():
    # The driver gets rows from Arrow (to_pylist): times are datetimes, not epoch ms.
    utc = dt.timezone.utc
    state = MetricsState()
    state.apply_batch([group_row(last_commit_time=dt.datetime(2026, 11, 22, 1, 0, 0, 500_000, tzinfo=utc),
                                 last_rebalance_time=dt.datetime(2026, 11, 22, 1, 0, 0))])
    series = scrape(state)
    assert value(series, "kafka_consumergroup_last_commit_timestamp_seconds", group="g1") == \
        dt.datetime(2026, 11, 22, 1, 0, 0, 500_000, tzinfo=utc).timestamp()
    assert value(series, "kafka_consumergroup_last_rebalance_timestamp_seconds", group="g1") == \
        dt.datetime(2026, 11, 22, 1, 0, 0, tzinfo=utc).timestamp()  # naive means UTC (Arrow's TS is UTC)


def test_kip848_group_reports_its_epochs():
    state = MetricsState()
    state.apply_batch([group_row(group_type="CONSUMER", state="ASSIGNING", protocol_type=None, assignor="uniform",
                                 generation=12, assignment_epoch=11)])
    series = scrape(state)
    assert value(series, "kafka_consumergroup_generation", group="g1") == 12
    assert value(series, "kafka_consumergroup_assignment_epoch", group="g1") == 11
    assert value(series, "kafka_consumergroup_state", group="g1", type="CONSUMER", state="ASSIGNING") == 1
    assert value(series, "kafka_consumergroup_info", group="g1", type="CONSUMER", protocol_type="",
                 assignor="uniform", simple="false") == 1


def test_partition_series_are_the_partition_rows():
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_lag", group="g1", topic="orders", partition="0") == 30
    assert value(series, "kafka_consumergroup_lag_seconds", group="g1", topic="orders", partition="1") == 10.0
    assert value(series, "kafka_consumergroup_current_offset", group="g1", topic="payments", partition="0") == 100
    assert value(series, "kafka_consumergroup_partition_catch_up_seconds", group="g1", topic="orders",
                 partition="1") == 30.0
    assert value(series, "kafka_partition_latest_offset", topic="orders", partition="0") == 130
    assert value(series, "kafka_consumergroup_member_assigned_partitions", group="g1", member_id="m-2",
                 client_id="app", host="/10.0.0.2") == 1


def test_latest_offset_is_shared_by_groups_and_takes_the_newest():
    # Two groups on the same partition, snapshotted at slightly different times: one series, the larger end
    # (g1's, although g2 comes later).
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")],
                      [partition_row("g1", "orders", 0, 30), partition_row("g2", "orders", 0, 2, log_end_offset=125)])
    series = scrape(state, partition_metrics=True)
    latest = {k: v for k, v in series.items() if k[0] == "kafka_partition_latest_offset"}
    assert list(latest.values()) == [130]


# ------------------------------------------------------------------------------------------------------------
# Opt-in partition-level series

PARTITION_METRICS = {s.name for s in METRICS if s.scope == "partition"}


def test_partition_level_series_are_opt_in():
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    off = {name for name, _ in scrape(state)}
    on = {name for name, _ in scrape(state, partition_metrics=True)}
    families = {f.name for f in GroupscopeCollector(state, cluster="c1").collect()}
    assert not families & {s.family_name for s in METRICS if s.scope == "partition"}, "not even empty families"
    assert not off & PARTITION_METRICS
    assert PARTITION_METRICS <= on
    assert off <= on


def test_state_without_partitions_holds_none():
    # With partition-level series off the driver need not hold a row per partition of every group.
    state = MetricsState(keep_partitions=False)
    state.apply_batch([group_row()], g1_partitions())
    assert state.view().partitions == {}
    assert not [k for k in scrape(state, partition_metrics=True) if k[0] == "kafka_consumergroup_lag"]


@pytest.mark.parametrize("partition_metrics", [False, True], ids=["default", "partition_metrics"])
def test_describe_announces_exactly_the_collected_families(partition_metrics):
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions(), [event("Rebalance", causes=["member_joined"],
                                                             partitions_moved=1)])
    collector = GroupscopeCollector(state, cluster="c1", partition_metrics=partition_metrics)
    described = [m.name for m in collector.describe()]
    collected = [m.name for m in collector.collect()]
    assert described == collected
    assert all(m.samples == [] for m in collector.describe())


def test_collector_needs_a_cluster():
    with pytest.raises(ValueError, match="cluster"):
        GroupscopeCollector(MetricsState(), cluster="")


# ------------------------------------------------------------------------------------------------------------
# Series disappear


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


# ------------------------------------------------------------------------------------------------------------
# Counters from events


def test_counters_come_from_the_row_and_anomalies_from_events():
    state = MetricsState()
    state.apply_batch([group_row(partitions_moved=5, last_partitions_moved=1,
                                 rebalance_causes=[{"cause": "leader_changed", "rebalances": 1},
                                                   {"cause": "member_joined", "rebalances": 2}])], event_rows=[
        event("Rebalance", causes=["member_joined"], partitions_moved=4),
        event("RebalanceStorm"), event("RollingRestart"),
        event("Anomaly", group_id=""), event("Anomaly"), event("StatusChanged"), event("MemberJoined"),
    ])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_partitions_moved_total", group="g1") == 5
    assert value(s, "kafka_consumergroup_last_rebalance_partitions_moved", group="g1") == 1
    assert value(s, "kafka_consumergroup_rebalance_causes_total", group="g1", cause="member_joined") == 2
    assert value(s, "kafka_consumergroup_rebalance_causes_total", group="g1", cause="leader_changed") == 1
    # no counter is counted from events (a restarted job would start again at 0): the row carries them
    assert value(s, "kafka_consumergroup_rebalance_storms_total", group="g1") == 0
    assert value(s, "groupscope_model_anomalies_total") == 2


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
    from streaming.sinks.prometheus import METRIC_EVENT_KINDS

    def after(events):
        state = MetricsState(keep_partitions=True)
        state.apply_batch([group_row("g1"), group_row("g2")], g1_partitions(), batch_id=0)
        state.apply_batch(event_rows=events, batch_id=1)
        return scrape(state, partition_metrics=True)

    changed = after([event(kind, "g1", topic="orders", partition=0)]) != after([])
    assert changed == (kind in METRIC_EVENT_KINDS), \
        f"{kind} {'changes' if changed else 'does not change'} the metrics; METRIC_EVENT_KINDS says otherwise"


def test_the_feed_hands_the_metrics_only_the_events_they_act_on():
    import pyarrow as pa

    from streaming.config import load_settings
    from streaming.job.batch_sink import BatchResult
    from streaming.driver.metrics_feed import MetricsFeed
    from streaming.driver.runner import JobStatus
    from streaming.schema.tables import GROUP_EVENTS

    feed = MetricsFeed(load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1"}}), JobStatus())
    feed.state.apply_batch([group_row("g1"), group_row("gone")], batch_id=0)
    rows = [dict.fromkeys(GROUP_EVENTS.names) | {"kind": "StatusChanged", "group_id": "g1", "shard": 3, "offset": i,
                                                  "topic": "orders", "partition": i % 3} for i in range(2000)]
    rows += [dict.fromkeys(GROUP_EVENTS.names) | {"kind": "GroupDeleted", "group_id": "gone", "shard": 3,
                                                   "offset": 2000},
             dict.fromkeys(GROUP_EVENTS.names) | {"kind": "Anomaly", "group_id": "g1", "shard": 3, "offset": 2001}]
    feed.apply(BatchResult(1, tables={"group_events": pa.Table.from_pylist(rows, schema=GROUP_EVENTS)},
                           health=[step(0)]))
    s = scrape(feed.state)
    assert not names_for_group(s, "gone"), "GroupDeleted reached the metrics"
    assert names_for_group(s, "g1")
    assert value(s, "groupscope_model_anomalies_total") == 1, "Anomaly reached the metrics"


def test_verdict_series_come_from_the_group_row():
    """Counters and the storm gauge are the model's (checkpointed) totals, so a job restart does not reset them."""
    state = MetricsState()
    state.apply_batch([group_row(storms=3, rolling_restarts=2, scale_outs=1, scale_ins=4, storm_active=True,
                                 verdict="storm", verdict_reason="flapping")])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_storms_total", group="g1") == 3
    assert value(s, "kafka_consumergroup_rolling_restarts_total", group="g1") == 2
    assert value(s, "kafka_consumergroup_scale_outs_total", group="g1") == 1
    assert value(s, "kafka_consumergroup_scale_ins_total", group="g1") == 4
    assert value(s, "kafka_consumergroup_rebalance_storm_active", group="g1") == 1
    assert value(s, "kafka_consumergroup_rebalance_verdict", group="g1", verdict="storm") == 1
    state.apply_batch([group_row(storms=3, storm_active=False, verdict="storm_ended")])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_storm_active", group="g1") == 0
    assert value(s, "kafka_consumergroup_rebalance_verdict", group="g1", verdict="storm_ended") == 1
    assert ("kafka_consumergroup_rebalance_verdict",
            frozenset({("cluster", "c1"), ("group", "g1"), ("verdict", "storm")})) not in s


def test_a_rerun_batch_does_not_count_its_anomalies_twice():
    # Spark re-runs a micro-batch after a failure with the same batch id: rows are idempotent, counts are not.
    state = MetricsState()
    batch: dict[str, Any] = {"group_rows": [group_row()], "event_rows": [event("Anomaly")]}
    state.apply_batch(**batch, batch_id=7)
    state.apply_batch(**batch, batch_id=7)
    assert value(scrape(state), "groupscope_model_anomalies_total") == 1
    state.apply_batch(**batch, batch_id=8)
    assert value(scrape(state), "groupscope_model_anomalies_total") == 2


# ------------------------------------------------------------------------------------------------------------
# Real captures through the model


def _storm_prone() -> ModelConfig:
    # 3 rebalances in 60 s: the a_classic capture's groups go through 3 generations in ~20 s, so the model
    # reports real RebalanceStorm events.
    return ModelConfig(rebalance=RebalanceConfig(storm_rebalances=3, storm_window_ms=60_000))


@pytest.mark.parametrize("scenario,label,groups", [
    ("d_transactions", "final-active", ["sd-txn-classic", "sd-txn-consumer"]),
    # sa-coop is left out: its commits raced the Admin API snapshot (tests/model/test_conformance.py EXC. 3).
    ("a_classic", "final-active", ["sa-static", "sa-simple", "sa-range", "sa-roundrobin"]),
    ("c_consumer_protocol", "final-active", ["sc-migrate", "sc-regex", "sc-range"]),
])
def test_lag_matches_kafkas_own_answer(scenario, label, groups):
    # End to end: real records -> model -> rows -> metrics give the lag the Admin API reported at that moment.
    replay = ScenarioReplay(scenario)
    replay.advance(label)
    b = replay.batch(extra=0)
    state = MetricsState()
    state.apply_batch(b.groups, b.partitions, b.events)
    series = scrape(state, partition_metrics=True)
    want = next(s for s in truth(scenario)["snapshots"] if s["label"] == label)["lag"]
    for gid in groups:
        assert value(series, "kafka_consumergroup_group_sum_lag", group=gid) == sum(
            p["lag"] for p in want[gid].values()), gid
        for key, p in want[gid].items():
            topic, partition = key.rsplit(":", 1)
            labels = {"group": gid, "topic": topic, "partition": partition}
            assert value(series, "kafka_consumergroup_lag", **labels) == p["lag"], (gid, key)
            assert value(series, "kafka_consumergroup_current_offset", **labels) == p["committed"], (gid, key)
            assert value(series, "kafka_partition_latest_offset", topic=topic, partition=partition) == p["log_end"]


@pytest.mark.parametrize("scenario", ["a_classic", "c_consumer_protocol", "d_transactions"])
def test_replayed_rows_are_transcribed_exactly(scenario):
    replay = ScenarioReplay(scenario, _storm_prone())
    state = MetricsState()
    events: list[dict[str, Any]] = []
    for label in replay.labels():
        replay.advance(label)
        b = replay.batch()
        state.apply_batch(b.groups, b.partitions, b.events)
        events += b.events
    series = scrape(state, partition_metrics=True)
    for r in b.groups:
        gid = r["group_id"]
        assert value(series, "kafka_consumergroup_group_sum_lag", group=gid) == r["sum_lag"]
        assert value(series, "kafka_consumergroup_members", group=gid) == r["member_count"]
        assert value(series, "kafka_consumergroup_generation", group=gid) == r["generation"]
        assert value(series, "kafka_consumergroup_rebalances_total", group=gid) == r["rebalances"]
        assert value(series, "kafka_consumergroup_state", group=gid, type=r["group_type"], state=r["state"]) == 1
        # The group's sum is the sum of its partition series: two sources, one answer.
        lags = [v for (name, labels), v in series.items()
                if name == "kafka_consumergroup_lag" and ("group", gid) in labels]
        assert sum(lags) == r["sum_lag"], gid
        mine = [e for e in events if e["group_id"] == gid]
        assert value(series, "kafka_consumergroup_rebalance_storms_total", group=gid) == (r["storms"] or 0)
        assert (r["storms"] or 0) == sum(e["kind"] == "RebalanceStorm" for e in mine)
        assert value(series, "kafka_consumergroup_rebalance_partitions_moved_total", group=gid) == \
            sum(e["partitions_moved"] or 0 for e in mine if e["kind"] == "Rebalance")
    if scenario == "a_classic":
        assert value(series, "kafka_consumergroup_rebalance_storms_total", group="sa-range") >= 1, \
            "the storm-prone config must produce real storms here"


def test_data_loss_from_retention_shows_up():
    # Retention moves the low watermark past what the transactional groups committed: data loss, status ERR.
    replay = ScenarioReplay("d_transactions")
    replay.advance("final-active")
    b = replay.batch(low_at_end=True)
    state = MetricsState()
    state.apply_batch(b.groups, b.partitions, b.events)
    series = scrape(state, partition_metrics=True)
    for gid in ("sd-txn-classic", "sd-txn-consumer"):
        # every log start is moved to the end: each partition the group committed on has lost data
        committed = {(r["topic"], r["partition"]) for r in b.partitions if r["group_id"] == gid
                     and r["committed_offset"] is not None}
        assert len(committed) == 3  # sd-in:0-2
        assert value(series, "kafka_consumergroup_data_loss_partitions", group=gid) == len(committed)
        assert value(series, "kafka_consumergroup_status", group=gid) == Status.ERR.value


# ------------------------------------------------------------------------------------------------------------
# The monitor's own health


def step(shard: int, **over: Any) -> StepHealth:
    fields: dict[str, Any] = {
        "shard": shard, "records": 100, "decode_errors": 0, "unknown_records": 0, "heartbeats": 1, "last_offset": 99,
        "offsets_high_watermark": 100, "offsets_last_stable": 100, "heartbeat_ms": 1_795_310_990_000,
        "caught_up": True, "groups": 3, "step_seconds": 0.01}
    fields.update(over)
    return StepHealth(**fields)


def test_health_accumulates_over_batches():
    h = MonitorHealth()
    assert not h.caught_up, "nothing read yet: not ready"
    h = h.after_batch([step(0, records=10, decode_errors=2, caught_up=False, last_offset=9, state_bytes=700),
                       step(1, records=5, unknown_records=1, state_bytes=300)], batch_seconds=0.5, now=NOW - 5,
                      input_records_per_second=30.0)
    h = h.after_batch([step(0, records=90, heartbeat_ms=1_795_310_995_000, state_bytes=900)], batch_seconds=0.25,
                      now=NOW, query_restarts=1)
    assert [p.state_bytes for p in h.offsets_partitions] == [900, 300], "a shard's newest size replaces its last"
    assert (h.records_decoded, h.decode_errors, h.unknown_records, h.batches) == (103, 2, 1, 2)
    assert (h.last_batch_seconds, h.input_records_per_second, h.last_batch_time) == (0.25, 30.0, NOW)
    assert h.heartbeat_time == 1_795_310_995.0 and h.query_restarts == 1
    assert h.caught_up, "shard 0 caught up in the second batch, shard 1 kept its first report"
    with pytest.raises(ValueError):
        h.after_batch([], batch_seconds=-1, now=NOW)
    with pytest.raises(ValueError):
        h.after_batch([step(0, records=-1)], batch_seconds=0, now=NOW)


@pytest.mark.parametrize("part,behind,unstable", [
    (OffsetsPartitionHealth(0, 89, 100, 100, False), 10, 0),  # 90..99 not read yet
    (OffsetsPartitionHealth(0, 89, 100, 90, True), 0, 10),  # read up to the LSO; an open txn holds back 10
    (OffsetsPartitionHealth(0, 99, 100, -1, True), 0, None),  # no LSO reported: the HWM is the end
    (OffsetsPartitionHealth(0, -1, -1, -1, False), None, None),  # no heartbeat yet: unknown
    (OffsetsPartitionHealth(0, 120, 100, 100, True), 0, 0),  # a racing report past the end: never negative
], ids=["behind", "open-transaction", "no-lso", "unknown", "racing"])
def test_offsets_partition_behind_and_unstable(part, behind, unstable):
    assert (part.behind, part.unstable) == (behind, unstable)


def test_monitor_series():
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")], health=MonitorHealth(
        records_decoded=1000, decode_errors=3, unknown_records=2, batches=12, query_restarts=1,
        last_batch_seconds=0.4, input_records_per_second=2500.0, last_batch_time=NOW - 1, heartbeat_time=NOW - 7.5,
        offsets_partitions=(OffsetsPartitionHealth(0, 89, 100, 90, True, 2048, 2),
                            OffsetsPartitionHealth(1, 9, 50, 50, False, 1024, 1))))
    s = scrape(state)
    expected = {
        "groupscope_records_decoded_total": 1000, "groupscope_decode_errors_total": 3,
        "groupscope_unknown_records_total": 2, "groupscope_batches_total": 12, "groupscope_query_restarts_total": 1,
        "groupscope_batch_duration_seconds": 0.4, "groupscope_input_records_per_second": 2500,
        "groupscope_last_batch_timestamp_seconds": NOW - 1, "groupscope_last_heartbeat_timestamp_seconds": NOW - 7.5,
        "groupscope_heartbeat_age_seconds": 7.5,  # injected clock minus the heartbeat
        "groupscope_caught_up": 0,  # partition 1 is 40 records behind
        "groupscope_groups": 2, "groupscope_model_anomalies_total": 0,
        "groupscope_state_bytes": 3072,  # both shards' state
        # every shard sees each outage; one whose log was written during a gap (the job's own downtime) does not
        "groupscope_kafka_outages_total": 2,
    }
    assert {k: value(s, k) for k in expected} == expected
    assert value(s, "groupscope_offsets_topic_behind_records", partition="1") == 40
    assert value(s, "groupscope_offsets_topic_unstable_records", partition="0") == 10
    assert value(s, "groupscope_offsets_topic_last_stable_offset", partition="0") == 90
    assert [dict(k[1])["version"] for k in s if k[0] == "groupscope_build_info"] != []


def test_heartbeat_age_is_never_negative_and_absent_without_heartbeat():
    state = MetricsState()
    assert value(scrape(state), "groupscope_heartbeat_age_seconds") is None
    state.set_health(MonitorHealth(heartbeat_time=NOW + 3))  # emitter clock slightly ahead of the driver's
    assert value(scrape(state), "groupscope_heartbeat_age_seconds") == 0


# ------------------------------------------------------------------------------------------------------------
# Exposition formats


def _full_state() -> MetricsState:
    state = MetricsState()
    replay = ScenarioReplay("a_classic", _storm_prone())
    for label in ("gen1-one-member-each", "final-active"):
        replay.advance(label)
        b = replay.batch()
        state.apply_batch(b.groups, b.partitions, b.events,
                          MonitorHealth(batches=1, heartbeat_time=NOW - 1, offsets_partitions=tuple(b.offsets)))
    return state


def test_text_and_openmetrics_parse_back():
    server = MetricsServer(_full_state(), cluster="c1", partition_metrics=True, process_metrics=False)
    text = list(text_string_to_metric_families(generate_latest(server.registry).decode()))
    om = list(parse_openmetrics(generate_openmetrics(server.registry).decode()))
    assert {f.name for f in text} == {s.family_name for s in METRICS}
    assert {f.name for f in om} == {s.family_name for s in METRICS}
    helps = {f.name: f.documentation for f in text}
    assert "0=OK, 1=WARN, 2=STALL, 3=STOP, 4=REWIND, 5=ERR" in helps["kafka_consumergroup_status"]
    types = {f.name: f.type for f in text}
    assert all(types[s.family_name] == s.kind for s in METRICS)


def test_promtool_lints_the_exposition():
    promtool = require("promtool")
    server = MetricsServer(_full_state(), cluster="c1", partition_metrics=True)
    out = run([promtool, "check", "metrics"], input=generate_latest(server.registry), text=False)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out


def test_catalogue_names_follow_conventions():
    for spec in METRICS:
        assert spec.name.startswith(("kafka_consumergroup_", "kafka_partition_", "groupscope_")), spec.name
        assert spec.name.endswith("_total") == (spec.kind == "counter"), spec.name
        assert spec.labels[0] == "cluster", spec.name
    assert len({s.name for s in METRICS}) == len(METRICS)


# ------------------------------------------------------------------------------------------------------------
# The HTTP endpoint


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_server_endpoints_and_readiness():
    state = MetricsState()
    with MetricsServer(state, cluster="c1", host="127.0.0.1", port=0) as server:
        assert server.port != 0
        assert get(f"{server.url}/ready") == (503, "not ready: no batch processed yet\n")
        state.apply_batch([group_row()], health=MonitorHealth(offsets_partitions=(
            OffsetsPartitionHealth(0, 99, 100, 100, True), OffsetsPartitionHealth(1, 9, 50, 50, False))))
        status, body = get(f"{server.url}/ready")
        assert status == 503 and "[1]" in body and "40 records behind" in body
        state.set_health(MonitorHealth(offsets_partitions=(OffsetsPartitionHealth(0, 99, 100, 100, True),)))
        assert get(f"{server.url}/ready") == (200, "ready\n")
        assert get(f"{server.url}/healthz") == (200, "ok\n")
        assert get(f"{server.url}/nope")[0] == 404
        status, body = get(f"{server.url}/metrics")
        assert status == 200
        assert 'kafka_consumergroup_group_sum_lag{cluster="c1",group="g1"} 45.0' in body
        assert "process_resident_memory_bytes" in body  # the driver's own process metrics


def test_stop_closes_the_socket():
    server = MetricsServer(MetricsState(), cluster="c1", host="127.0.0.1", port=0).start()
    port = server.port
    listening = server._httpd.socket  # held here, so only an explicit close (not garbage collection) closes it
    with pytest.raises(RuntimeError, match="already started"):
        server.start()
    server.stop()
    assert listening.fileno() == -1
    server.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    again = MetricsServer(MetricsState(), cluster="c1", host="127.0.0.1", port=port).start()  # port is free
    try:
        assert get(f"{again.url}/healthz")[0] == 200
    finally:
        again.stop()


def test_bad_port_is_rejected_before_binding():
    with pytest.raises(ValueError, match="port"):
        MetricsServer(MetricsState(), cluster="c1", port=70000)


def test_scrapes_during_batches_see_whole_batches():
    # A batch replaces 50 groups at once; a concurrent scrape sees all of them at one generation, never a mix.
    state = MetricsState()
    state.apply_batch([group_row(f"g{i}", generation=0) for i in range(50)])
    errors: list[BaseException] = []
    done = threading.Event()

    def feed() -> None:
        try:
            for gen in range(1, 200):
                state.apply_batch([group_row(f"g{i}", generation=gen) for i in range(50)])
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, asserted below
            errors.append(exc)
        finally:
            done.set()

    t = threading.Thread(target=feed)
    t.start()
    collector = GroupscopeCollector(state, cluster="c1")
    seen = 0
    while not done.is_set() or seen == 0:
        fam = next(f for f in collector.collect() if f.name == "kafka_consumergroup_generation")
        assert len(fam.samples) == 50 and len({s.value for s in fam.samples}) == 1
        seen += 1
    t.join()
    assert not errors


def test_feed_reports_records_of_the_offsets_topic_per_second(monkeypatch):
    """The input rate counts decoded __consumer_offsets records over the time between batches (Spark's own row
    rates would count the source's packed chunks)."""
    from streaming.job.batch_sink import BatchResult
    from streaming.config import load_settings
    from streaming.driver.metrics_feed import MetricsFeed
    from streaming.driver.runner import JobStatus

    clock = iter([1000.0, 1002.0, 1006.0])
    monkeypatch.setattr("streaming.driver.metrics_feed.time.time", lambda: next(clock))
    status = JobStatus(batch_duration_s=0.5)
    feed = MetricsFeed(load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1"}}), status)
    feed.apply(BatchResult(0, health=[step(0, records=300), step(1, records=200)]))
    assert feed.health.input_records_per_second == 1000.0, "first batch: over its own duration"
    feed.apply(BatchResult(1, health=[step(0, records=3000), step(1, records=1000)]))
    assert feed.health.input_records_per_second == 2000.0
    feed.apply(BatchResult(2, health=[step(0, records=0)]))
    assert feed.health.input_records_per_second == 0.0


def test_a_status_nobody_judged_is_absent_rather_than_ok():
    """No log end offset is known yet for ``unjudged`` (before the first heartbeat, or after a backfill): the model
    keeps it OK, but an OK on /metrics would say it was judged healthy. Its status series are absent, as ``status``
    shows ``-``; its other series stay, and a group judged OK still exports 0."""
    state = MetricsState()
    unknown = {"lag": None, "log_end_offset": None, "lag_seconds": None}
    state.apply_batch([group_row("unjudged", status="OK", sum_lag=None, max_lag=None, partition_count=1, topics=[]),
                       group_row("judged", status="OK", sum_lag=0, max_lag=0, partition_count=1, topics=[])],
                      [{**partition_row("unjudged", "orders", 0, 0), **unknown}, partition_row("judged", "orders", 0, 0)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_status", group="unjudged") is None
    assert value(series, "kafka_consumergroup_partition_status", group="unjudged", topic="orders", partition="0") is None
    assert value(series, "kafka_consumergroup_members", group="unjudged") == 2
    assert value(series, "kafka_consumergroup_status", group="judged") == Status.OK.value
    assert value(series, "kafka_consumergroup_partition_status", group="judged", topic="orders",
                 partition="0") == Status.OK.value


def test_each_metric_name_is_written_once_in_the_code():
    """The catalogue is the one place a metric's name is written: the collector walks it, so a renamed metric cannot
    leave an exporter behind that still writes the old name."""
    from pathlib import Path

    from streaming.sinks.compat_catalogue import COMPAT

    root = Path(__file__).resolve().parents[2] / "streaming"
    texts = {str(p.relative_to(root.parent)): p.read_text() for p in root.rglob("*.py")}
    # A name another exporter also uses is written once more where that exporter's flavour is declared: the other
    # tool fixed it, and the flavour's spec replaces groupscope's when on (compat_catalogue.py).
    flavoured = {s.name for specs in COMPAT.values() for s in specs}
    for spec in METRICS:
        where = {path: text.count(f'"{spec.name}"') for path, text in texts.items() if f'"{spec.name}"' in text}
        expected = {"streaming/sinks/metric_catalogue.py": 1}
        if spec.name in flavoured:
            expected["streaming/sinks/compat_catalogue.py"] = 1
        assert where == expected, (spec.name, where)


def test_each_partitions_time_lag_says_how_it_was_found():
    state = MetricsState()
    partitions = [partition_row("g1", "orders", 0, 30, lag_seconds=1_860.0, lag_seconds_method="measured"),
                  partition_row("g1", "orders", 1, 10),
                  partition_row("g1", "payments", 0, 5, lag_seconds=None, lag_seconds_method=None)]
    state.apply_batch([group_row(max_lag_seconds=1_860.0, max_lag_seconds_method="measured")], partitions)
    series = scrape(state, partition_metrics=True)
    methods = {dict(labels)["partition"] + "/" + dict(labels)["topic"]: dict(labels)["method"]
               for (name, labels), value in series.items() if name == "kafka_consumergroup_lag_seconds_method"}
    assert methods == {"0/orders": "measured", "1/orders": "interpolated"}, "none without a time lag"
    seconds = {dict(labels)["partition"]: v for (name, labels), v in series.items()
               if name == "kafka_consumergroup_lag_seconds" and dict(labels)["topic"] == "orders"}
    assert seconds == {"0": 1_860.0, "1": 10.0}
    groups = {dict(labels)["method"]: v for (name, labels), v in series.items()
              if name == "kafka_consumergroup_group_max_lag_seconds_method"}
    assert groups == {"measured": 1}, "the group's largest time lag is the measured one"
