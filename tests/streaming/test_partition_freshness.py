"""Per-partition figures as fresh as the group ones: a commit shows in the per-partition series in the batch that
applies it, not at the shard's next full snapshot; and the Delta ``lag`` table keeps its own interval."""

from __future__ import annotations

import re
import urllib.request

import pyarrow as pa

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.batch_sink import BatchSink, encode_health, encode_table
from streaming.config import load_settings
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.driver.metrics_feed import MetricsFeed
from streaming.driver.runner import JobStatus
from streaming.sinks.delta import DeltaSink
from streaming.job.step import METRICS_PARTITIONS, ShardStep, StepConfig
from streaming.schema.tables import SOURCE

SHARD = 5
T0 = 1_767_225_600_000
HOUR = 3_600_000


def _rows(commits: list[tuple[str, str, int, int]], heartbeat_ms: int, seq: int, first_offset: int) -> pa.Table:
    """Commits ``(group, topic, partition, offset)`` on the shard's partition, then one heartbeat."""
    rows = []
    for i, (group, topic, partition, offset) in enumerate(commits):
        key, value = encode_record(new_offset_commit(group, topic, partition, offset,
                                                     commit_timestamp=heartbeat_ms - 100))
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD,
                     "offset": first_offset + i, "timestamp": (heartbeat_ms - 100) * 1000})
    (value,) = encode_heartbeats(heartbeat_ms, "test", seq, [("t", 0, 1000, 1000, 0), ("t", 1, 1000, 1000, 0),
                                                             ("u", 0, 500, 500, 0)])
    rows.append({"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": seq,
                 "timestamp": heartbeat_ms * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def _config(partition_metrics: bool) -> StepConfig:
    # The shard's full snapshot is an hour away: only the commit itself can make its partitions fresh.
    return StepConfig(snapshot_interval_ms=HOUR, lag_interval_ms=HOUR, partition_rows_every_snapshot=partition_metrics)


def _committed(table: pa.Table) -> dict[tuple[str, str, int], int]:
    return {(r["group_id"], r["topic"], r["partition"]): r["committed_offset"] for r in table.to_pylist()}


def test_a_commit_reaches_the_partition_rows_of_the_batch_that_applies_it():
    step = ShardStep(SHARD, _config(partition_metrics=True))
    first, _ = step.process(_rows([("g", "t", 0, 100), ("g", "t", 1, 50), ("h", "u", 0, 10)], T0 + 1000, 0, 0))
    assert "lag" in first  # the first batch is the shard's full snapshot, due for the lag table
    assert _committed(first["lag"]) == {("g", "t", 0): 100, ("g", "t", 1): 50, ("h", "u", 0): 10}

    second, _ = step.process(_rows([("g", "t", 0, 150)], T0 + 2000, 1, 3))
    assert "lag" not in second, "the Delta lag table keeps its interval"
    # Every partition of the touched group (so the metrics can replace the group's set), nothing of the others.
    assert _committed(second[METRICS_PARTITIONS]) == {("g", "t", 0): 150, ("g", "t", 1): 50}
    row = next(r for r in second[METRICS_PARTITIONS].to_pylist() if r["partition"] == 0)
    assert row["lag"] == 850 and row["log_end_offset"] == 1000

    idle, _ = step.process(_rows([], T0 + 3000, 2, 4))
    assert METRICS_PARTITIONS not in idle and "lag" not in idle


def test_without_partition_metrics_no_partition_rows_between_snapshots():
    step = ShardStep(SHARD, _config(partition_metrics=False))
    step.process(_rows([("g", "t", 0, 100)], T0 + 1000, 0, 0))
    second, _ = step.process(_rows([("g", "t", 0, 150)], T0 + 2000, 1, 1))
    assert METRICS_PARTITIONS not in second and "lag" not in second
    assert "groups" in second  # the group-level figures are fresh either way


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
    step = ShardStep(SHARD, _config(partition_metrics=True))
    try:
        def batch(batch_id: int, rows: pa.Table) -> None:
            tables, health = step.process(rows)
            out = [(SHARD, name, encode_table(t)) for name, t in tables.items()]
            sink.handle(batch_id, out + [(SHARD, "health", encode_health(health))])

        batch(0, _rows([("g", "t", 0, 100), ("g", "t", 1, 50)], T0 + 1000, 0, 0))
        text = _scrape(feed.port)
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 0) == 100
        assert _series(text, "kafka_consumergroup_lag", "g", "t", 0) == 900

        batch(1, _rows([("g", "t", 0, 400)], T0 + 2000, 1, 2))
        text = _scrape(feed.port)
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 0) == 400
        assert _series(text, "kafka_consumergroup_lag", "g", "t", 0) == 600
        assert _series(text, "kafka_consumergroup_current_offset", "g", "t", 1) == 50, "untouched partition kept"
        assert delta.read("lag").num_rows == 2, "only the lag table's own interval writes to it"
    finally:
        feed.stop()
