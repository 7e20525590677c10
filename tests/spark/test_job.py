"""The streaming query's plain-Python parts (``streaming.spark.job``): the step's configuration as the settings make
it, which tables the executors write, and the partitions Spark's own Kafka source is assigned. Starting the query
itself needs a Spark session and is checked end to end in this folder's job tests."""

from __future__ import annotations

import json

import pytest

from streaming.config import load_settings
from streaming.kafka.mock_cluster import MockCluster
from streaming.spark.job import BULK_TABLES, JobPlan, builtin_source_assignment, executor_written_tables, step_config


# (the part of the step's model config, the model: settings given, what that part must hold)
CASES = [
    ("thresholds", {"allowed_lag": 7, "stop_after_seconds": 45, "stop_cadence_factor": 4, "stop_max_seconds": 1800,
                    "stop_first_interval_seconds": 600, "empty_group_grace_seconds": 20, "warn_after_seconds": 15,
                    "commit_window": 10},
     {"allowed_lag": 7, "stop_after_ms": 45_000, "stop_cadence_factor": 4, "stop_max_ms": 1_800_000,
      "stop_first_interval_ms": 600_000, "empty_group_grace_ms": 20_000, "warn_after_ms": 15_000, "window": 10}),
    ("rebalance", {"storm_rebalances": 4, "storm_window_seconds": 300, "storm_flaps": 3, "flap_lifetime_seconds": 15,
                   "settle_seconds": 25, "return_wait_seconds": 120, "stepwise_leave_seconds": 15,
                   "storm_quiet_seconds": 90, "silent_after_seconds": 30},
     {"storm_rebalances": 4, "storm_window_ms": 300_000, "storm_flaps": 3, "flap_lifetime_ms": 15_000,
      "settle_ms": 25_000, "return_wait_ms": 120_000, "stepwise_leave_ms": 15_000, "storm_quiet_ms": 90_000,
      "silent_after_ms": 30_000}),
]


@pytest.mark.parametrize("part,model,want", CASES, ids=[c[0] for c in CASES])
def test_every_model_setting_reaches_the_step(part, model, want):
    """Each ``model:`` setting the status rules or the rebalance judge read is carried into the step's config (a
    setting that is accepted but not passed on would be silently ignored)."""
    got = getattr(step_config(load_settings(None, {"model": model})).model, part)
    assert {name: getattr(got, name) for name in want} == want


def test_the_step_reads_the_topics_the_settings_name():
    config = step_config(load_settings(None, {"heartbeat": {"topic": "hb-eu"}, "source": {"offsets_topic": "__co"}}))
    assert (config.heartbeat_topic, config.offsets_topic) == ("hb-eu", "__co")


@pytest.mark.parametrize("metrics, want", [
    ({}, False),  # the Prometheus endpoint alone keeps group series only
    ({"partition_metrics": True}, True),
    ({"partition_metrics": True, "enabled": False}, False),  # no endpoint: nobody reads the rows on the driver
])
def test_partition_rows_are_sent_every_snapshot_only_when_the_driver_needs_them(metrics, want):
    assert step_config(load_settings(None, {"metrics": metrics})).partition_rows_every_snapshot is want


def test_partition_rows_are_sent_for_the_http_api_too():
    settings = load_settings(None, {"api": {"enabled": True}})
    assert step_config(settings).partition_rows_every_snapshot is True


class _Sink:
    """What executor_written_tables looks at in a batch sink: whether it writes Delta tables at all."""

    def __init__(self, delta: object | None) -> None:
        self.delta = delta


@pytest.mark.parametrize("delta, has_delta, want", [
    ({}, True, BULK_TABLES),
    ({"write_on_executors": False}, True, frozenset()),
    ({"writer": "delta-spark"}, True, frozenset()),  # the Spark writer commits its own files
    ({"storage_options": {"AWS_REGION": "eu-west-1"}}, True, frozenset()),  # executors may not reach the store
    ({"enabled": False}, True, frozenset()),
    ({}, False, frozenset()),  # a sink without Delta (metrics only)
])
def test_executors_write_the_bulk_tables_only_where_they_reach_the_delta_path(delta, has_delta, want):
    settings = load_settings(None, {"delta": delta})
    assert executor_written_tables(settings, _Sink(object() if has_delta else None)) == want


def test_the_bulk_tables_are_the_per_commit_and_per_partition_ones():
    assert BULK_TABLES == {"commits", "lag"}


def test_spark_kafka_source_is_assigned_every_shard_and_the_heartbeat_partitions_by_name():
    with MockCluster(1) as mc:
        mc.create_topic("groupscope-heartbeat", 3)
        settings = load_settings(None, {"kafka": {"bootstrap.servers": mc.bootstrap_servers}})
        plan = JobPlan(offsets_partitions=4, heartbeat_topic="groupscope-heartbeat", offsets_topic="__consumer_offsets")
        assert json.loads(builtin_source_assignment(settings, plan)) == {
            "__consumer_offsets": [0, 1, 2, 3], "groupscope-heartbeat": [0, 1, 2]}
        missing = JobPlan(offsets_partitions=2, heartbeat_topic="no-such-topic", offsets_topic="__consumer_offsets")
        assert json.loads(builtin_source_assignment(settings, missing)) == {
            "__consumer_offsets": [0, 1], "no-such-topic": [0]}, "a heartbeat topic not there yet: its partition 0"
