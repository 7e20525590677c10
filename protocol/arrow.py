"""Vectorized decode for Spark: Arrow binary key/value columns in, one Arrow batch of flat typed columns out.

Together with ``kafka_dump`` this is the only module of ``protocol`` that imports pyarrow. One row per input
record, in input order; a record that does not decode gets its reason in ``decode_error`` (and nulls elsewhere) instead of raising, so a Spark task
never dies on bad input and the quarantine sink can keep the raw bytes. Offset commits, the bulk of the topic, take
a vectorized path that builds no per-record objects; every other type goes through ``decode_record``.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._offsets import parse_offset_commit_key, parse_offset_commit_value
from .codec import decode_record
from .errors import CodecError
from .records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    CoordinatorRecord,
    GroupMetadataValue,
    OffsetCommitValue,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMetadataValue,
    ShareGroupMetadataValue_4_0,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMetadataValue,
    UnknownRecord,
)

__all__ = ["DECODED_SCHEMA", "decode_arrow"]

_PARTITION = pa.struct([("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32())])
_MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("session_timeout_ms", pa.int32()),
        ("rebalance_timeout_ms", pa.int32()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("assignment", pa.list_(_PARTITION)),
    ]
)

DECODED_SCHEMA = pa.schema(
    [
        ("record_type", pa.int16()),
        ("value_version", pa.int16()),
        ("is_tombstone", pa.bool_()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("member_id", pa.string()),
        ("committed_offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", pa.int64()),
        ("expire_timestamp", pa.int64()),
        ("topic_id", pa.string()),
        # Classic generation, or the epoch the record carries (group, assignment, member epoch by record type).
        ("epoch", pa.int32()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("current_state_timestamp", pa.int64()),
        ("member_state", pa.int8()),
        ("members", pa.list_(_MEMBER)),
        ("assigned_partitions", pa.list_(_PARTITION)),
        ("is_unknown", pa.bool_()),
        ("decode_error", pa.string()),
    ]
)
_NAMES = DECODED_SCHEMA.names
_I16 = struct.Struct(">h").unpack_from


# The layout of nearly every offset commit since Kafka 2.1: value v3 with empty metadata, 24 bytes.
_V3_EMPTY = np.dtype([("version", ">i2"), ("offset", ">i8"), ("leader_epoch", ">i4"), ("meta_len", ">i2"),
                      ("commit_ts", ">i8")])
assert _V3_EMPTY.itemsize == 24


def _as_binary(column: pa.Array | pa.ChunkedArray | Sequence[bytes | None]) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if not isinstance(column, pa.Array):
        column = pa.array(column, pa.binary())
    if pa.types.is_large_binary(column.type):
        column = column.cast(pa.binary())
    elif not pa.types.is_binary(column.type):
        raise TypeError(f"expected a binary column, got {column.type}")
    return column


def _parse_key(key: bytes | None) -> tuple[int, str, str, int] | None:
    """``(type, group, topic, partition)`` for a well-formed offset-commit key, else None (handled per row)."""
    if key is None or len(key) < 2 or key[0] != 0 or key[1] > 1:
        return None
    try:
        group, topic, partition = parse_offset_commit_key(key)
    except CodecError:
        return None
    return key[1], group, topic, partition


def decode_arrow(keys: pa.Array | Sequence[bytes | None], values: pa.Array | Sequence[bytes | None]) -> pa.RecordBatch:
    """Decodes parallel key/value columns (as stored, with their int16 prefixes) into :data:`DECODED_SCHEMA`.

    Hand-written and vectorized because offset commits are >99% of the topic: distinct keys are few (one per
    group, topic and partition) so they are dictionary-encoded and parsed once each, and the common 24-byte v3
    value is read for all rows at once as a numpy record array. Everything else (other record types and versions,
    commit metadata, malformed input) is decoded row by row and merged in place.
    """
    keys_arr = _as_binary(keys)
    values_arr = _as_binary(values)
    n = len(keys_arr)
    if n != len(values_arr):
        raise ValueError(f"{n} keys but {len(values_arr)} values")
    if n == 0:
        return pa.RecordBatch.from_pylist([], schema=DECODED_SCHEMA)

    encoded = pc.dictionary_encode(keys_arr)
    key_index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    parsed = [_parse_key(k) for k in encoded.dictionary.to_pylist()]
    offset_key = np.array([p is not None for p in parsed] + [False], dtype=bool)[key_index]  # index -1 → False

    value_null = values_arr.is_null().to_numpy(zero_copy_only=False)
    buffers = values_arr.buffers()
    bounds = np.frombuffer(buffers[1], dtype=np.int32)[values_arr.offset : values_arr.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(bounds)

    fast = offset_key & value_null  # offset tombstones
    rows24 = np.flatnonzero(offset_key & ~value_null & (lengths == 24))
    block = data[bounds[:-1][rows24, None] + np.arange(24)] if len(rows24) else np.zeros((0, 24), np.uint8)
    v3 = np.ascontiguousarray(block).view(_V3_EMPTY).reshape(-1)
    good = (v3["version"] == 3) & (v3["meta_len"] == 0)
    rows = rows24[good]
    v3 = v3[good]
    fast[rows] = True

    # Fast-path columns, full length; positions of other rows are masked (null) until merged below.
    fast_keys = np.where(fast, key_index, -1)
    groups = pa.array([p[1] if p else None for p in parsed] + [None], pa.string())
    topics = pa.array([p[2] if p else None for p in parsed] + [None], pa.string())
    take = pa.array(np.where(fast_keys < 0, len(parsed), fast_keys))
    record_type = np.zeros(n, np.int16)
    partition = np.zeros(n, np.int32)
    if parsed:
        record_type[fast] = np.array([p[0] if p else 0 for p in parsed], np.int16)[key_index[fast]]
        partition[fast] = np.array([p[3] if p else 0 for p in parsed], np.int32)[key_index[fast]]
    committed = np.zeros(n, np.int64)
    leader_epoch = np.zeros(n, np.int32)
    commit_ts = np.zeros(n, np.int64)
    committed[rows] = v3["offset"]
    leader_epoch[rows] = v3["leader_epoch"]
    commit_ts[rows] = v3["commit_ts"]
    has_value = np.zeros(n, bool)
    has_value[rows] = True

    columns: dict[str, pa.Array] = {
        "record_type": pa.array(record_type, mask=~fast),
        "value_version": pa.array(np.full(n, 3, np.int16), mask=~has_value),
        "is_tombstone": pa.array(value_null),
        "group_id": groups.take(take),
        "topic": topics.take(take),
        "partition": pa.array(partition, mask=~fast),
        "committed_offset": pa.array(committed, mask=~has_value),
        "leader_epoch": pa.array(leader_epoch, mask=~has_value),
        "metadata": pc.if_else(pa.array(has_value), pa.scalar("", pa.string()), pa.scalar(None, pa.string())),
        "commit_timestamp": pa.array(commit_ts, mask=~has_value),
        "expire_timestamp": pa.array(np.full(n, -1, np.int64), mask=~has_value),
        "is_unknown": pa.array(np.zeros(n, bool)),
    }
    for name in _NAMES:
        if name not in columns:
            columns[name] = pa.nulls(n, DECODED_SCHEMA.field(name).type)

    slow = np.flatnonzero(~fast)
    if len(slow):
        slow_take = pa.array(slow)
        slow_keys = keys_arr.take(slow_take).to_pylist()
        slow_values = values_arr.take(slow_take).to_pylist()
        merged: dict[str, list[Any]] = {name: [None] * n for name in _NAMES}
        for i, key, value in zip(slow.tolist(), slow_keys, slow_values):
            for name, v in _slow_row(key, value).items():
                merged[name][i] = v
        is_slow = np.zeros(n, bool)
        is_slow[slow] = True
        mask = pa.array(is_slow)
        for name in _NAMES:
            slow_column = pa.array(merged[name], DECODED_SCHEMA.field(name).type)
            columns[name] = pc.if_else(mask, slow_column, columns[name])
    return pa.RecordBatch.from_arrays([columns[name] for name in _NAMES], schema=DECODED_SCHEMA)


def _slow_row(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """One row decoded the general way (every type, version and error)."""
    if key is not None and len(key) >= 2 and key[0] == 0 and key[1] <= 1 and (
        value is None or (len(value) >= 2 and value[0] == 0 and value[1] <= 3)
    ):
        try:
            group, topic, partition = parse_offset_commit_key(key)
            row = dict.fromkeys(_NAMES)
            row.update(record_type=key[1], group_id=group, topic=topic, partition=partition,
                       is_tombstone=value is None, is_unknown=False)
            if value is not None:
                offset, leader_epoch, metadata, cts, ets = parse_offset_commit_value(value, value[1])
                row.update(value_version=value[1], committed_offset=offset, leader_epoch=leader_epoch,
                           metadata=metadata, commit_timestamp=cts, expire_timestamp=ets)
            return row
        except CodecError as exc:
            return _error_row(key, value, str(exc))
    try:
        record = decode_record(key, value)
    except CodecError as exc:
        return _error_row(key, value, str(exc))
    return _record_row(record)


def _error_row(key: bytes | None, value: bytes | None, reason: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_NAMES)
    if key is not None and len(key) >= 2:
        row["record_type"] = _I16(key, 0)[0]
    if value is not None and len(value) >= 2:
        row["value_version"] = _I16(value, 0)[0]
    row["is_tombstone"] = value is None
    row["is_unknown"] = False
    row["decode_error"] = reason
    return row


def _partitions(items, *, by_topic_id: bool) -> list[dict[str, Any]]:
    out = []
    for item in items:
        topic_id = str(item.topic_id) if by_topic_id else None
        topic = None if by_topic_id else item.topic
        for p in item.partitions:
            out.append({"topic": topic, "topic_id": topic_id, "partition": p})
    return out


def _record_row(record: CoordinatorRecord | UnknownRecord) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_NAMES)
    row["is_unknown"] = isinstance(record, UnknownRecord)
    if isinstance(record, UnknownRecord):
        row.update(record_type=record.type, value_version=record.version if record.value is not None else None,
                   is_tombstone=record.value is None, group_id=record.group_id)
    else:
        key, value = record.key, record.value
        row["record_type"] = int(record.type)
        row["value_version"] = None if value is None else record.value_version
        row["is_tombstone"] = value is None
        row["group_id"] = record.group_id
        row["member_id"] = getattr(key, "member_id", None)
        row["topic"] = getattr(key, "topic", None)
        row["partition"] = getattr(key, "partition", None)
        if isinstance(value, OffsetCommitValue):
            row.update(committed_offset=value.offset, leader_epoch=value.leader_epoch, metadata=value.metadata,
                       commit_timestamp=value.commit_timestamp, expire_timestamp=value.expire_timestamp,
                       topic_id=str(value.topic_id) if any(value.topic_id) else None)
        elif isinstance(value, GroupMetadataValue):
            row.update(epoch=value.generation, protocol_type=value.protocol_type, protocol=value.protocol,
                       leader=value.leader, current_state_timestamp=value.current_state_timestamp,
                       members=[_classic_member(m) for m in value.members])
        elif isinstance(value, (ConsumerGroupMetadataValue, ShareGroupMetadataValue, ShareGroupMetadataValue_4_0,
                                StreamsGroupMetadataValue)):
            row["epoch"] = value.epoch
        elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
            row["epoch"] = value.assignment_epoch
        elif isinstance(value, ConsumerGroupMemberMetadataValue):
            row["members"] = [{
                "member_id": key.member_id, "group_instance_id": value.instance_id, "client_id": value.client_id,
                "client_host": value.client_host, "session_timeout_ms": None,
                "rebalance_timeout_ms": value.rebalance_timeout_ms,
                "subscribed_topics": list(value.subscribed_topic_names), "assignment": [],
            }]
        elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
            row["assigned_partitions"] = _partitions(value.topic_partitions, by_topic_id=True)
        elif isinstance(value, (ConsumerGroupCurrentMemberAssignmentValue, ShareGroupCurrentMemberAssignmentValue)):
            row.update(epoch=value.member_epoch, member_state=value.state,
                       assigned_partitions=_partitions(value.assigned_partitions, by_topic_id=True))
        elif isinstance(value, StreamsGroupCurrentMemberAssignmentValue):
            row.update(epoch=value.member_epoch, member_state=value.state)
    return row


def _classic_member(member) -> dict[str, Any]:
    sub, asg = member.decoded_subscription, member.decoded_assignment
    return {
        "member_id": member.member_id,
        "group_instance_id": member.group_instance_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "session_timeout_ms": member.session_timeout,
        "rebalance_timeout_ms": member.rebalance_timeout,
        "subscribed_topics": list(sub.topics) if sub is not None else None,
        "assignment": _partitions(asg.assigned_partitions, by_topic_id=False) if asg is not None else None,
    }
