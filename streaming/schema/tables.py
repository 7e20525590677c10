"""The output tables of groupscope, declared once as Arrow schemas, and the conversions from model objects to rows.

Delta tables, the Spark stateful step's output and the Prometheus sink all use these; nothing else declares a
column. Rows are plain dicts only here, at the edge (docs/design-notes.md#code-style). Times are epoch milliseconds in ``*_ms`` columns
and Arrow timestamps (UTC) in ``*_time`` columns; ``*_date`` columns exist to partition the Delta tables.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import json
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

from streaming.model import events as ev

__all__ = [
    "SOURCE",
    "COMMITS",
    "GROUP_EVENTS",
    "LAG",
    "GROUPS",
    "QUARANTINE",
    "TABLES",
    "PARTITION_COLUMNS",
    "batch_tables",
    "last_row_per_group",
    "group_row",
    "partition_rows",
    "event_row",
    "to_table",
]

TS = pa.timestamp("ms", tz="UTC")

# What the Kafka source delivers: the columns of Spark's own Kafka source that groupscope uses. Timestamps are
# microseconds, Spark's TimestampType.
SOURCE = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
    ]
)

COMMITS = pa.schema(
    [
        ("shard", pa.int32()),  # the __consumer_offsets partition
        ("offset", pa.int64()),  # the record's offset in it
        ("record_time", TS),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),  # null for a tombstone (offset deleted or expired)
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_time", TS),
        ("expire_time", TS),
        ("is_tombstone", pa.bool_()),
        ("value_version", pa.int16()),
        ("record_date", pa.date32()),
    ]
)

GROUP_EVENTS = pa.schema(
    [
        ("shard", pa.int32()),
        ("offset", pa.int64()),
        ("event_time", TS),
        ("group_id", pa.string()),
        ("kind", pa.string()),  # Rebalance, MemberJoined, GroupStateChanged, RebalanceStorm, StatusChanged, ...
        ("group_type", pa.string()),
        ("generation", pa.int32()),
        ("causes", pa.list_(pa.string())),
        ("members_before", pa.int32()),
        ("members_after", pa.int32()),
        ("partitions_moved", pa.int32()),
        ("partitions_stayed", pa.int32()),
        ("seconds_since_previous", pa.float64()),
        ("member_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("old", pa.string()),
        ("new", pa.string()),
        ("detail", pa.string()),  # every field of the event as JSON
        ("event_date", pa.date32()),
    ]
)

LAG = pa.schema(
    [
        ("snapshot_time", TS),
        ("shard", pa.int32()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("log_end_offset", pa.int64()),
        ("lag", pa.int64()),
        ("lag_seconds", pa.float64()),
        ("lag_seconds_lower_bound", pa.bool_()),
        ("data_loss_risk", pa.bool_()),
        ("status", pa.string()),
        ("status_reason", pa.string()),
        ("owner", pa.string()),
        ("commit_time", TS),
        ("snapshot_date", pa.date32()),
        # time to work off the lag at the current rates (null: not catching up, or unknown); catching_up null:
        # unknown (model/catch_up.py). Last, so a table written before them gains them at its end.
        ("catch_up_seconds", pa.float64()),
        ("catching_up", pa.bool_()),
        ("log_start_offset", pa.int64()),  # the low watermark: where the partition's log starts now
        # how lag_seconds was found: "measured" (the oldest unprocessed record's age) or "interpolated" (from the
        # end-offset history); null without lag_seconds. A table written before it gains it (null in old rows).
        ("lag_seconds_method", pa.string()),
    ]
)

_MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("client_id", pa.string()),
        ("host", pa.string()),
        ("instance_id", pa.string()),
        ("partitions", pa.int32()),
        ("member_epoch", pa.int32()),
        ("state", pa.string()),
    ]
)
_TOPIC = pa.struct(
    [("topic", pa.string()), ("sum_lag", pa.int64()), ("max_lag", pa.int64()), ("max_lag_seconds", pa.float64())]
)

GROUPS = pa.schema(
    [
        ("group_id", pa.string()),  # merge key: one row per group, the latest
        ("shard", pa.int32()),
        ("group_type", pa.string()),
        ("state", pa.string()),
        ("protocol_type", pa.string()),
        ("assignor", pa.string()),
        ("generation", pa.int32()),  # classic generation or group epoch
        ("assignment_epoch", pa.int32()),
        ("leader", pa.string()),
        ("member_count", pa.int32()),
        ("members", pa.list_(_MEMBER)),
        ("partition_count", pa.int32()),
        ("topics", pa.list_(_TOPIC)),
        ("sum_lag", pa.int64()),
        ("max_lag", pa.int64()),
        ("max_lag_seconds", pa.float64()),
        # a partition's lag seconds is only a lower bound (its committed offset is older than the end-offset
        # history, e.g. a group stopped long ago), so max_lag_seconds is "at least" that
        ("max_lag_seconds_lower_bound", pa.bool_()),
        ("status", pa.string()),
        ("data_loss_partitions", pa.int32()),
        ("rebalances", pa.int64()),
        # rebalance verdicts, from the checkpointed model (they survive restarts and equal a fresh replay)
        ("storms", pa.int64()),
        ("rolling_restarts", pa.int64()),
        ("scale_outs", pa.int64()),
        ("scale_ins", pa.int64()),
        ("storm_active", pa.bool_()),
        ("partitions_moved", pa.int64()),  # summed over rebalances whose assignment is known
        ("last_partitions_moved", pa.int32()),
        ("rebalance_causes", pa.list_(pa.struct([("cause", pa.string()), ("rebalances", pa.int64())]))),
        ("verdict", pa.string()),  # the group's latest rebalance verdict (storm, rolling_restart, ...)
        ("verdict_reason", pa.string()),
        ("status_reason", pa.string()),  # why the worst partition has the group's status
        ("last_rebalance_time", TS),
        ("last_commit_time", TS),
        ("state_time", TS),
        ("is_simple", pa.bool_()),
        ("deleted", pa.bool_()),
        ("updated_time", TS),
        # of the slowest partition, as in ``lag`` (null seconds: not catching up or unknown; null flag: unknown)
        ("catch_up_seconds", pa.float64()),
        ("catching_up", pa.bool_()),
        # how the max_lag_seconds was found (that partition's lag_seconds_method); null without it
        ("max_lag_seconds_method", pa.string()),
    ]
)

QUARANTINE = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("record_time", TS),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("reason", pa.string()),
        ("record_type", pa.int16()),
        ("value_version", pa.int16()),
        ("quarantined_time", TS),
        ("quarantined_date", pa.date32()),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "commits": COMMITS,
    "group_events": GROUP_EVENTS,
    "lag": LAG,
    "groups": GROUPS,
    "quarantine": QUARANTINE,
}

# How each Delta table is partitioned: by day for the append-only ones (time-range queries prune files); the
# merged ``groups`` table is small (one row per group) and stays unpartitioned.
PARTITION_COLUMNS: dict[str, list[str]] = {
    "commits": ["record_date"],
    "group_events": ["event_date"],
    "lag": ["snapshot_date"],
    "groups": [],
    "quarantine": ["quarantined_date"],
}


def batch_tables(tables: Mapping[str, pa.Table]) -> Iterator[tuple[str, pa.Table]]:
    """The non-empty tables of one micro-batch, in ``TABLES`` order, cast to their table's schema."""
    for name, schema in TABLES.items():
        table = tables.get(name)
        if table is not None and table.num_rows:
            yield name, table.cast(schema)


def last_row_per_group(table: pa.Table) -> pa.Table:
    """One row per ``group_id``, the last of the batch (a merge needs one source row per key)."""
    last = {gid: i for i, gid in enumerate(table.column("group_id").to_pylist())}
    return table.take(pa.array(sorted(last.values())))


def _date(ms: int | None):
    if ms is None or ms < 0:
        return None
    return _utc_day(ms // 86_400_000)


@functools.lru_cache(maxsize=64)
def _utc_day(day: int):
    """The UTC date of a day number since the epoch: rows of a batch fall on a few days, and a cold start makes a
    row per group-partition, so each day is computed once."""
    try:
        return _EPOCH + dt.timedelta(days=day)
    except OverflowError:
        return None  # a producer's absurd timestamp must not stop the stream


_EPOCH = dt.date(1970, 1, 1)


# Arrow's millisecond timestamps cover years 1 to 9999; anything outside is a broken clock, kept as null.
_MAX_MS = 253_402_300_799_999


def _ms(value: int | None) -> int | None:
    return None if value is None or value < 0 or value > _MAX_MS else value


def group_row(snapshot: ev.GroupSnapshot, *, shard: int, now_ms: int, deleted: bool = False) -> dict[str, Any]:
    last_commit = max((p.commit_timestamp for p in snapshot.partitions), default=None)
    return {
        "group_id": snapshot.group_id,
        "shard": shard,
        "group_type": snapshot.group_type.name,
        "state": snapshot.state,
        "protocol_type": snapshot.protocol_type,
        "assignor": snapshot.assignor or None,
        "generation": snapshot.generation,
        "assignment_epoch": snapshot.assignment_epoch,
        "leader": snapshot.leader,
        "member_count": len(snapshot.members),
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.host,
                "instance_id": m.instance_id,
                "partitions": len(m.assignment),
                "member_epoch": m.member_epoch,
                "state": m.state,
            }
            for m in snapshot.members
        ],
        "partition_count": len(snapshot.partitions),
        "topics": [
            {"topic": t.topic, "sum_lag": t.sum_lag, "max_lag": t.max_lag, "max_lag_seconds": t.max_lag_seconds}
            for t in snapshot.topics
        ],
        "sum_lag": snapshot.sum_lag,
        "max_lag": snapshot.max_lag,
        "max_lag_seconds": snapshot.max_lag_seconds,
        "max_lag_seconds_lower_bound": any(p.lag_seconds_lower_bound for p in snapshot.partitions
                                           if p.lag_seconds is not None),
        "status": snapshot.status.name,
        "data_loss_partitions": sum(1 for p in snapshot.partitions if p.data_loss_risk),
        "rebalances": snapshot.rebalances,
        "storms": snapshot.verdicts.storms,
        "rolling_restarts": snapshot.verdicts.rolling_restarts,
        "scale_outs": snapshot.verdicts.scale_outs,
        "scale_ins": snapshot.verdicts.scale_ins,
        "storm_active": snapshot.verdicts.storm_active,
        "partitions_moved": snapshot.verdicts.partitions_moved,
        "last_partitions_moved": snapshot.verdicts.last_partitions_moved,
        "rebalance_causes": [{"cause": c, "rebalances": n} for c, n in snapshot.verdicts.causes],
        "verdict": snapshot.verdicts.last_verdict,
        "verdict_reason": snapshot.verdicts.last_reason or None,
        "status_reason": _worst_reason(snapshot),
        "last_rebalance_time": _ms(snapshot.last_rebalance_timestamp),
        "last_commit_time": _ms(last_commit),
        "state_time": _ms(snapshot.current_state_timestamp),
        "is_simple": snapshot.is_simple,
        "deleted": deleted,
        "updated_time": now_ms,
        "catch_up_seconds": snapshot.catch_up.seconds,
        "catching_up": snapshot.catch_up.catching_up,
        "max_lag_seconds_method": _method_of_max(snapshot.partitions),
    }


def _method_of_max(partitions: Iterable[ev.PartitionLag]) -> str | None:
    """The ``lag_seconds_method`` of the partition with the largest time lag (None: no partition has one)."""
    worst = max((p for p in partitions if p.lag_seconds is not None), key=lambda p: p.lag_seconds, default=None)
    return None if worst is None else worst.lag_seconds_method


def _worst_reason(snapshot: ev.GroupSnapshot) -> str | None:
    """The reason of the first partition with the group's (worst) status, named by topic and partition."""
    for p in snapshot.partitions:
        if p.status == snapshot.status:
            return f"{p.topic}:{p.partition}: {p.status_reason}" if p.status_reason else None
    return None


def partition_rows(snapshot: ev.GroupSnapshot, *, shard: int, now_ms: int) -> list[dict[str, Any]]:
    day = _date(now_ms)
    return [
        {
            "snapshot_time": now_ms,
            "shard": shard,
            "group_id": snapshot.group_id,
            "topic": p.topic,
            "partition": p.partition,
            "committed_offset": p.committed,
            "log_end_offset": p.log_end,
            "lag": p.lag,
            "lag_seconds": p.lag_seconds,
            "lag_seconds_lower_bound": p.lag_seconds_lower_bound,
            "data_loss_risk": p.data_loss_risk,
            "status": p.status.name,
            "status_reason": p.status_reason or None,
            "owner": p.owner,
            "commit_time": _ms(p.commit_timestamp),
            "snapshot_date": day,
            "lag_seconds_method": p.lag_seconds_method,
            "catch_up_seconds": p.catch_up.seconds,
            "catching_up": p.catch_up.catching_up,
            "log_start_offset": p.log_start,
        }
        for p in snapshot.partitions
    ]


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.name if isinstance(value, enum.IntEnum) else value.value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@functools.lru_cache(maxsize=None)
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


# One encoder for every event's detail: json.dumps with options builds a new encoder per call, which was a third
# of the time of a cold start's event rows (a status event per group-partition).
_DETAIL = json.JSONEncoder(sort_keys=True, default=str)


def event_row(event: ev.Event, *, shard: int) -> dict[str, Any]:
    fields = {name: _plain(getattr(event, name)) for name in _field_names(type(event))}
    group_type = fields.get("group_type")
    return {
        "shard": shard,
        "offset": event.offset,
        "event_time": _ms(event.timestamp),
        "group_id": event.group_id,
        "kind": event.kind,
        "group_type": group_type if isinstance(group_type, str) else None,
        "generation": fields.get("generation"),
        "causes": fields.get("causes"),
        "members_before": fields.get("members_before"),
        "members_after": fields.get("members_after"),
        "partitions_moved": fields.get("partitions_moved"),
        "partitions_stayed": fields.get("partitions_stayed"),
        "seconds_since_previous": fields.get("seconds_since_previous"),
        "member_id": fields.get("member_id"),
        "topic": fields.get("topic"),
        "partition": fields.get("partition"),
        "old": None if fields.get("old") is None else str(fields["old"]),
        "new": None if fields.get("new") is None else str(fields["new"]),
        "detail": _DETAIL.encode(fields),
        "event_date": _date(event.timestamp),
    }


def to_table(name: str, rows: Iterable[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=TABLES[name])
