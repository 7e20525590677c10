"""The driver's metrics feed (``streaming.driver.metrics_feed``): what a micro-batch's results make of the Prometheus
endpoint. Per-partition figures are as fresh as the group ones: a commit moves the per-partition series in the
batch that applies it, not at the shard's next full snapshot, while the Delta ``lag`` table keeps its own interval."""

from __future__ import annotations

import re
import urllib.request

import pyarrow as pa

from streaming.config import load_settings
from streaming.driver.metrics_feed import MetricsFeed
from streaming.driver.runner import JobStatus
from streaming.job.batch_sink import BatchSink, encode_health, encode_table
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
