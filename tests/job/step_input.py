"""Source rows for a shard step, shared by the step's own tests and the tests of what consumes its output (the
metrics feed): commits on the shard's ``__consumer_offsets`` partition followed by heartbeats."""

from __future__ import annotations

import pyarrow as pa

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.step import StepConfig
from streaming.schema.heartbeat_format import decode_heartbeat, encode_heartbeats
from streaming.schema.tables import SOURCE

#: The shard of the per-partition freshness checks.
FRESHNESS_SHARD = 5
HOUR = 3_600_000


def commits_then_heartbeat(commits: list[tuple[str, str, int, int]], heartbeat_ms: int, seq: int,
                           first_offset: int) -> pa.Table:
    """Commits ``(group, topic, partition, offset)`` on the shard's partition, then one heartbeat."""
    rows = []
    for i, (group, topic, partition, offset) in enumerate(commits):
        key, value = encode_record(new_offset_commit(group, topic, partition, offset,
                                                     commit_timestamp=heartbeat_ms - 100))
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": FRESHNESS_SHARD,
                     "offset": first_offset + i, "timestamp": (heartbeat_ms - 100) * 1000})
    (value,) = encode_heartbeats(heartbeat_ms, "test", seq, [("t", 0, 1000, 1000, 0), ("t", 1, 1000, 1000, 0),
                                                             ("u", 0, 500, 500, 0)])
    rows.append({"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": seq,
                 "timestamp": heartbeat_ms * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def snapshot_an_hour_away(partition_metrics: bool) -> StepConfig:
    """The shard's full snapshot is an hour away: only the commit itself can make its partitions fresh."""
    return StepConfig(snapshot_interval_ms=HOUR, lag_interval_ms=HOUR, partition_rows_every_snapshot=partition_metrics)


def one_partition_commit_then_heartbeats(commit_offset: int, heartbeats: list[bytes], t0: int) -> pa.Table:
    """A commit of ``g`` on ``payments-0`` (in shard 3's partition) at ``t0``, then the heartbeats."""
    key, value = encode_record(new_offset_commit("g", "payments", 0, commit_offset, commit_timestamp=t0))
    rows = [{"key": key, "value": value, "topic": "__consumer_offsets", "partition": 3, "offset": 0,
             "timestamp": t0 * 1000}]
    for i, hb in enumerate(heartbeats):
        rows.append({"key": None, "value": hb, "topic": "groupscope-heartbeat", "partition": 0, "offset": i,
                     "timestamp": decode_heartbeat(hb).timestamp_ms * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)
