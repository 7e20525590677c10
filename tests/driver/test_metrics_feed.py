"""The driver's metrics feed (``streaming.driver.metrics_feed``): what a micro-batch's results make of the Prometheus
endpoint. Per-partition figures are as fresh as the group ones: a commit moves the per-partition series in the
batch that applies it, not at the shard's next full snapshot, while the Delta ``lag`` table keeps its own interval."""

from __future__ import annotations

import re
import urllib.request

import pyarrow as pa
import pytest

from streaming.config import load_settings
from streaming.driver.metrics_feed import ClusterFeed, MetricsFeed, read_view
from streaming.driver.runner import JobStatus
from streaming.job.batch_sink import BatchSink, collect_outputs, encode_health, encode_table
from streaming.job.step import ShardStep
from streaming.sinks.delta import DeltaSink
from tests.job.step_input import FRESHNESS_SHARD, commits_then_heartbeat, snapshot_an_hour_away

T0 = 1_767_225_600_000


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def _series(text: str, name: str, group: str, topic: str, partition: int) -> float | None:
    pattern = re.compile(rf'^{name}\{{[^}}]*group="{group}"[^}}]*partition="{partition}"[^}}]*topic="{topic}"[^}}]*}}'
                         rf' (\S+)$|^{name}\{{[^}}]*group="{group}"[^}}]*topic="{topic}"[^}}]*partition="{partition}"'
                         rf'[^}}]*}} (\S+)$', re.M)
    found = pattern.search(text)
    return None if found is None else float(found.group(1) or found.group(2))


def test_the_per_partition_series_move_with_the_commit_and_delta_lag_does_not_grow(tmp_path):
    settings = load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1", "partition_metrics": True},
                                    "delta": {"path": str(tmp_path / "delta")}})
    feed = MetricsFeed(settings, JobStatus())
    feed.start()
    delta = DeltaSink(tmp_path / "delta", app_id="t")
    sink = BatchSink(delta=delta, metrics=feed.apply)
    step = ShardStep(FRESHNESS_SHARD, snapshot_an_hour_away(partition_metrics=True))
    try:
        def batch(batch_id: int, rows: pa.Table) -> None:
            tables, health = step.process(rows)
            out = [(FRESHNESS_SHARD, name, encode_table(t)) for name, t in tables.items()]
            sink.handle(batch_id, out + [(FRESHNESS_SHARD, "health", encode_health(health))])

        batch(0, commits_then_heartbeat([("g", "t", 0, 100), ("g", "t", 1, 50)], T0 + 1000, 0, 0))
        text = _scrape(feed.port)
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 0) == 100
        assert _series(text, "kafka_consumergroup_lag", "g", "t", 0) == 900

        batch(1, commits_then_heartbeat([("g", "t", 0, 400)], T0 + 2000, 1, 2))
        text = _scrape(feed.port)
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 0) == 400
        assert _series(text, "kafka_consumergroup_lag", "g", "t", 0) == 600
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 1) == 50, "untouched partition kept"
        assert delta.read("lag").num_rows == 2, "only the lag table's own interval writes to it"
    finally:
        feed.stop()


# ---- what one cluster's feed says of Kafka -----------------------------------------------------------------------

class _Emitter:
    """What the feed reads of a heartbeat emitter."""

    def __init__(self, ticks: int, failures: int, kafka_up: bool, last_tick_ms: int, now: float,
                 topic_problem: str | None = None) -> None:
        from streaming.kafka.heartbeat import EmitterStatus

        self.status = EmitterStatus(ticks, failures, last_tick_ms, None, kafka_up, 0)
        self.clock = lambda: now
        self.topic_problem = topic_problem


def _feed(emitter: _Emitter | None) -> ClusterFeed:
    return ClusterFeed(load_settings(None), JobStatus(), emitter=lambda: emitter)


def test_before_the_emitter_tried_or_without_one_kafka_is_neither_up_nor_down():
    assert _feed(None).kafka_up() is None and _feed(None).kafka_silence() is None
    assert _feed(_Emitter(0, 0, False, -1, T0 / 1000)).kafka_up() is None


def test_kafka_is_as_the_emitters_last_attempt_found_it():
    assert _feed(_Emitter(3, 0, True, T0, T0 / 1000)).kafka_up() is True
    assert _feed(_Emitter(3, 1, False, T0, T0 / 1000)).kafka_up() is False
    assert _feed(_Emitter(0, 2, False, -1, T0 / 1000)).kafka_up() is False, "never reached: down"


def test_the_silence_is_the_time_since_the_emitter_last_reached_kafka_never_negative():
    assert _feed(_Emitter(3, 4, False, T0, T0 / 1000 + 42.5)).kafka_silence() == 42.5
    assert _feed(_Emitter(3, 0, True, T0, T0 / 1000 - 1)).kafka_silence() == 0.0, "clocks a little apart"
    assert _feed(_Emitter(0, 4, False, -1, T0 / 1000)).kafka_silence() is None


def test_a_missing_heartbeat_topic_is_the_problem_ready_names():
    problem = "heartbeat topic groupscope-heartbeat does not exist and cannot be created (denied)"
    assert _feed(_Emitter(0, 1, True, -1, 0, topic_problem=problem)).heartbeat_problem() == problem
    assert _feed(None).heartbeat_problem() is None


def test_the_read_view_holds_partition_rows_only_when_the_driver_keeps_them():
    step = ShardStep(FRESHNESS_SHARD, snapshot_an_hour_away(partition_metrics=True))
    tables, health = step.process(commits_then_heartbeat([("g", "t", 0, 100), ("g", "t", 1, 7)], T0 + 1000, 0, 0))
    result = collect_outputs(0, [(FRESHNESS_SHARD, n, encode_table(t)) for n, t in tables.items()])
    kept = read_view(result)
    assert [g.group_id for g in kept.groups] == ["g"]
    assert set(kept.partitions["g"]) == {("t", 0), ("t", 1)}
    dropped = read_view(result, keep_partitions=False)
    assert [g.group_id for g in dropped.groups] == ["g"] and not dropped.partitions


def test_a_cluster_is_served_once():
    settings = load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1"}, "cluster": "eu"})
    feed = MetricsFeed(settings, JobStatus())
    with pytest.raises(ValueError, match="cluster 'eu' is served already"):
        feed.add_cluster(settings, JobStatus())
    other = feed.add_cluster(load_settings(None, {"cluster": "us"}), JobStatus())
    assert list(feed.clusters) == ["eu", "us"] and feed.clusters["us"] is other and feed.state is not other.state
