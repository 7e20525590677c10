"""What the sink tests share: hand-made GROUPS / PARTITIONS / GROUP_EVENTS rows in the shape the job writes them,
one scrape parsed back from the text format Prometheus reads, and a state filled from a real capture.

Every hand-made row says its figures outright, so a test's expectation can be read off the row it applies.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.model.verdicts import RebalanceConfig
from streaming.model.shard import ModelConfig
from streaming.sinks.metric_catalogue import METRICS
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.monitor_health import MonitorHealth
from streaming.sinks.state_store import MetricsState
from streaming.job.step import StepHealth
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


PARTITION_METRICS = {s.name for s in METRICS if s.scope == "partition"}


def storm_prone() -> ModelConfig:
    # 3 rebalances and one flap in 60 s: the a_classic capture's groups go through 3 generations in ~20 s and a
    # member leaves young, so the model reports real RebalanceStorm events.
    return ModelConfig(rebalance=RebalanceConfig(storm_rebalances=3, storm_window_ms=60_000, storm_flaps=1))


def step(shard: int, **over: Any) -> StepHealth:
    fields: dict[str, Any] = {
        "shard": shard, "records": 100, "decode_errors": 0, "unknown_records": 0, "heartbeats": 1, "last_offset": 99,
        "offsets_high_watermark": 100, "offsets_last_stable": 100, "heartbeat_ms": 1_795_310_990_000,
        "caught_up": True, "groups": 3, "step_seconds": 0.01}
    fields.update(over)
    return StepHealth(**fields)


def full_state() -> MetricsState:
    state = MetricsState()
    replay = ScenarioReplay("a_classic", storm_prone())
    for label in ("gen1-one-member-each", "final-active"):
        replay.advance(label)
        b = replay.batch()
        state.apply_batch(b.groups, b.partitions, b.events,
                          MonitorHealth(batches=1, heartbeat_time=NOW - 1, offsets_partitions=tuple(b.offsets)))
    return state


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def monitor_samples(server: MetricsServer) -> dict[str, float]:
    """The ``groupscope_*`` samples of one scrape of ``server``, by name (the monitor's own figures carry no labels
    beyond the cluster, so one cluster's names are unique)."""
    text = generate_latest(server.registry).decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.startswith("groupscope_")}
