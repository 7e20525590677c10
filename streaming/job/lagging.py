"""The step's list of lagging committed offsets, for the heartbeat emitter to measure their time lag.

The emitter on the driver reads the oldest record each lagging consumer has not processed
(``streaming.kafka.oldest_probe``); only the model knows which committed offsets are behind. So at every full
refresh of a shard (all its groups re-evaluated, ``model.snapshot_interval_seconds``), once it has caught up with
``__consumer_offsets``, its step adds the step output ``lagging``: one row per partition behind, the most urgent
first (largest lag in seconds, then in offsets), at most :data:`LIMIT` a shard. The rows travel to the driver like
the metrics-only partition rows, never to a Delta table; the driver replaces that shard's list with them (an empty
list when a shard that sent a full refresh sent no rows: nothing of it is behind any more, ``StepHealth``).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from streaming.kafka.oldest_probe import Lagging
from streaming.model import events as ev

__all__ = ["LAGGING", "LAGGING_SCHEMA", "LIMIT", "lagging_table", "lagging_of"]

LAGGING = "lagging"  # the step output's kind
LIMIT = 1000  # rows a shard lists at a refresh: the emitter reads far fewer a tick anyway
LAGGING_SCHEMA = pa.schema([
    ("shard", pa.int32()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("committed_offset", pa.int64()),
    ("lag", pa.int64()),
    ("lag_seconds", pa.float64()),  # how urgent: the oldest are read first
])


def lagging_table(shard: int, snapshots: Iterable[ev.GroupSnapshot]) -> pa.Table:
    """The partitions of ``snapshots`` that are behind (a committed offset below the log start is left out: its
    record is gone)."""
    rows = [(p.lag_seconds, p.lag, p.topic, p.partition, p.committed)
            for s in snapshots for p in s.partitions
            if p.lag and p.committed >= 0 and not p.data_loss_risk]
    rows.sort(key=lambda r: (-1.0 if r[0] is None else r[0], r[1]), reverse=True)
    rows = rows[:LIMIT]
    return pa.table({"shard": pa.array([shard] * len(rows), pa.int32()),
                     "topic": pa.array([r[2] for r in rows], pa.string()),
                     "partition": pa.array([r[3] for r in rows], pa.int32()),
                     "committed_offset": pa.array([r[4] for r in rows], pa.int64()),
                     "lag": pa.array([r[1] for r in rows], pa.int64()),
                     "lag_seconds": pa.array([r[0] for r in rows], pa.float64())}, schema=LAGGING_SCHEMA)


def lagging_of(table: pa.Table | None, shards: Iterable[int]) -> dict[int, list[Lagging]]:
    """The rows by shard, for every shard in ``shards`` (those whose full refresh, once caught up, the batch
    carries: rows or none)."""
    out: dict[int, list[Lagging]] = {s: [] for s in shards}
    for r in ([] if table is None else table.to_pylist()):
        out.setdefault(r["shard"], []).append(
            Lagging(r["topic"], r["partition"], r["committed_offset"], r["lag"], r["lag_seconds"]))
    return out
