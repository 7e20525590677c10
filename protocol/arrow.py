"""Vectorized decode for Spark: Arrow binary key/value columns in, one Arrow batch of flat typed columns out.

This is the only module of ``protocol`` that imports pyarrow. One row per input record, in input order; a record
that does not decode gets its reason in ``decode_error`` (and nulls elsewhere) instead of raising, so a Spark task
never dies on bad input and the quarantine sink can keep the raw bytes. Offset commits, the bulk of the topic, take
a hand-written path that builds no per-record objects; every other type goes through ``decode_record``.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import pyarrow as pa

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


def _new_columns() -> dict[str, list[Any]]:
    return {name: [] for name in _NAMES}


def decode_arrow(keys: pa.Array | Sequence[bytes | None], values: pa.Array | Sequence[bytes | None]) -> pa.RecordBatch:
    """Decodes parallel key/value columns (as stored, with their int16 prefixes) into :data:`DECODED_SCHEMA`."""
    key_list = keys.to_pylist() if isinstance(keys, (pa.Array, pa.ChunkedArray)) else list(keys)
    value_list = values.to_pylist() if isinstance(values, (pa.Array, pa.ChunkedArray)) else list(values)
    if len(key_list) != len(value_list):
        raise ValueError(f"{len(key_list)} keys but {len(value_list)} values")
    cols = _new_columns()
    c_type, c_ver, c_tomb = cols["record_type"], cols["value_version"], cols["is_tombstone"]
    c_group, c_topic, c_part = cols["group_id"], cols["topic"], cols["partition"]
    c_off, c_le, c_meta = cols["committed_offset"], cols["leader_epoch"], cols["metadata"]
    c_cts, c_ets, c_err = cols["commit_timestamp"], cols["expire_timestamp"], cols["decode_error"]
    generic = ("member_id", "topic_id", "epoch", "protocol_type", "protocol", "leader", "current_state_timestamp",
               "member_state", "members", "assigned_partitions")
    generic_cols = [cols[n] for n in generic]
    c_unknown = cols["is_unknown"]

    for key, value in zip(key_list, value_list):
        # Fast path: offset commit (types 0/1, value v0-v3 or tombstone).
        if key is not None and len(key) >= 2 and key[0] == 0 and key[1] <= 1:
            version = -1
            if value is not None and len(value) >= 2:
                version = _I16(value, 0)[0]
            if value is None or 0 <= version <= 3:
                try:
                    group, topic, partition = parse_offset_commit_key(key)
                    if value is not None:
                        offset, leader_epoch, metadata, cts, ets = parse_offset_commit_value(value, version)
                except CodecError as exc:
                    _append_error(cols, key, value, str(exc))
                    continue
                c_type.append(key[1])
                c_group.append(group)
                c_topic.append(topic)
                c_part.append(partition)
                if value is None:
                    c_ver.append(None)
                    c_tomb.append(True)
                    c_off.append(None)
                    c_le.append(None)
                    c_meta.append(None)
                    c_cts.append(None)
                    c_ets.append(None)
                else:
                    c_ver.append(version)
                    c_tomb.append(False)
                    c_off.append(offset)
                    c_le.append(leader_epoch)
                    c_meta.append(metadata)
                    c_cts.append(cts)
                    c_ets.append(ets)
                for col in generic_cols:
                    col.append(None)
                c_unknown.append(False)
                c_err.append(None)
                continue
        try:
            record = decode_record(key, value)
        except CodecError as exc:
            _append_error(cols, key, value, str(exc))
            continue
        _append_record(cols, record)
    return pa.RecordBatch.from_pydict(cols, schema=DECODED_SCHEMA)


def _append_error(cols: dict[str, list[Any]], key: bytes | None, value: bytes | None, reason: str) -> None:
    row = dict.fromkeys(_NAMES)
    if key is not None and len(key) >= 2:
        row["record_type"] = _I16(key, 0)[0]
    if value is not None and len(value) >= 2:
        row["value_version"] = _I16(value, 0)[0]
    row["is_tombstone"] = value is None
    row["is_unknown"] = False
    row["decode_error"] = reason
    for name in _NAMES:
        cols[name].append(row[name])


def _partitions(items, *, by_topic_id: bool) -> list[dict[str, Any]]:
    out = []
    for item in items:
        topic_id = str(item.topic_id) if by_topic_id else None
        topic = None if by_topic_id else item.topic
        for p in item.partitions:
            out.append({"topic": topic, "topic_id": topic_id, "partition": p})
    return out


def _append_record(cols: dict[str, list[Any]], record: CoordinatorRecord | UnknownRecord) -> None:
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
    for name in _NAMES:
        cols[name].append(row[name])


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
