"""Decode and encode ``__consumer_offsets`` records through ONE table keyed by :class:`RecordType`.

``decode_record(key, value)`` is the whole contract of the codec:

* a record of a known type and version → :class:`CoordinatorRecord` (``value`` None for a tombstone);
* an unknown record type, or an unknown value version of a known type → :class:`UnknownRecord` carrying the raw
  bytes (Kafka's own loader skips these too; a monitor must survive brokers newer than itself);
* bytes that are not a valid encoding → :class:`CodecError` naming the field and byte.

Nothing else can escape; anything else is a bug.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import _wire as w
from ._consumer_protocol import decode_assignment, decode_subscription
from ._offsets import decode_offset_commit_key, decode_offset_commit_value
from ._schema import Message, decoder, encoder
from .errors import CodecError
from .records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupCurrentMemberAssignmentValue_3_7,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberMetadataValue_3_7,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupPartitionMetadataValue_3_7,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMemberValue_3_7,
    ConsumerGroupTargetAssignmentMetadataValue,
    CoordinatorRecord,
    GroupKey,
    GroupMemberKey,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordType,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupMetadataValue_4_0,
    ShareGroupPartitionMetadataValue,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupStatePartitionMetadataValue_4_0,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataValue,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataValue,
    StreamsGroupPartitionMetadataValue,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyValue,
    UnknownRecord,
)

__all__ = ["RecordSpec", "RECORD_SPECS", "decode_record", "encode_record", "encode_key", "encode_value", "spec_for"]


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """What one record type looks like: its key class and its value layouts (current first, then older layouts
    that early-access releases wrote under the same version number)."""

    type: RecordType
    key: type
    layouts: tuple[type, ...]

    @property
    def value_versions(self) -> tuple[int, int]:
        return self.layouts[0].VALID_VERSIONS

    @property
    def flexible_versions(self) -> tuple[int, int] | None:
        return self.layouts[0].FLEXIBLE_VERSIONS

    def is_flexible(self, version: int) -> bool:
        rng = self.flexible_versions
        return rng is not None and rng[0] <= version <= rng[1]


T = RecordType
RECORD_SPECS: dict[RecordType, RecordSpec] = {
    s.type: s
    for s in (
        RecordSpec(T.LEGACY_OFFSET_COMMIT, OffsetCommitKey, (OffsetCommitValue,)),
        RecordSpec(T.OFFSET_COMMIT, OffsetCommitKey, (OffsetCommitValue,)),
        RecordSpec(T.GROUP_METADATA, GroupMetadataKey, (GroupMetadataValue,)),
        RecordSpec(T.CONSUMER_GROUP_METADATA, GroupKey, (ConsumerGroupMetadataValue,)),
        RecordSpec(
            T.CONSUMER_GROUP_PARTITION_METADATA,
            GroupKey,
            (ConsumerGroupPartitionMetadataValue, ConsumerGroupPartitionMetadataValue_3_7),
        ),
        RecordSpec(
            T.CONSUMER_GROUP_MEMBER_METADATA,
            GroupMemberKey,
            (ConsumerGroupMemberMetadataValue, ConsumerGroupMemberMetadataValue_3_7),
        ),
        RecordSpec(T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey, (ConsumerGroupTargetAssignmentMetadataValue,)),
        RecordSpec(
            T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            GroupMemberKey,
            (ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMemberValue_3_7),
        ),
        RecordSpec(
            T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            GroupMemberKey,
            (ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupCurrentMemberAssignmentValue_3_7),
        ),
        RecordSpec(T.SHARE_GROUP_PARTITION_METADATA, GroupKey, (ShareGroupPartitionMetadataValue,)),
        RecordSpec(T.SHARE_GROUP_MEMBER_METADATA, GroupMemberKey, (ShareGroupMemberMetadataValue,)),
        RecordSpec(T.SHARE_GROUP_METADATA, GroupKey, (ShareGroupMetadataValue, ShareGroupMetadataValue_4_0)),
        RecordSpec(T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey, (ShareGroupTargetAssignmentMetadataValue,)),
        RecordSpec(T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, GroupMemberKey, (ShareGroupTargetAssignmentMemberValue,)),
        RecordSpec(T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, GroupMemberKey, (ShareGroupCurrentMemberAssignmentValue,)),
        RecordSpec(
            T.SHARE_GROUP_STATE_PARTITION_METADATA,
            GroupKey,
            (ShareGroupStatePartitionMetadataValue, ShareGroupStatePartitionMetadataValue_4_0),
        ),
        RecordSpec(
            T.CONSUMER_GROUP_REGULAR_EXPRESSION, ConsumerGroupRegularExpressionKey, (ConsumerGroupRegularExpressionValue,)
        ),
        RecordSpec(T.STREAMS_GROUP_METADATA, GroupKey, (StreamsGroupMetadataValue,)),
        RecordSpec(T.STREAMS_GROUP_PARTITION_METADATA, GroupKey, (StreamsGroupPartitionMetadataValue,)),
        RecordSpec(T.STREAMS_GROUP_MEMBER_METADATA, GroupMemberKey, (StreamsGroupMemberMetadataValue,)),
        RecordSpec(T.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey, (StreamsGroupTargetAssignmentMetadataValue,)),
        RecordSpec(T.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, GroupMemberKey, (StreamsGroupTargetAssignmentMemberValue,)),
        RecordSpec(T.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, GroupMemberKey, (StreamsGroupCurrentMemberAssignmentValue,)),
        RecordSpec(T.STREAMS_GROUP_TOPOLOGY, GroupKey, (StreamsGroupTopologyValue,)),
    )
}

_OFFSET_TYPES = (0, 1)
# Indexed by type id: a list lookup instead of constructing the IntEnum on every record.
_SPECS_BY_ID: list[RecordSpec] = [RECORD_SPECS[RecordType(i)] for i in range(len(RecordType))]


def spec_for(record_type: int) -> RecordSpec | None:
    if 0 <= record_type < len(_SPECS_BY_ID):
        return _SPECS_BY_ID[record_type]
    return None


def _decode_key(spec: RecordSpec, key: bytes) -> Message:
    if spec.type in _OFFSET_TYPES:
        return decode_offset_commit_key(key)
    value, end = decoder(spec.key, 0, False)(key, 2)
    if end != len(key):
        raise CodecError(f"{len(key) - end} trailing bytes after the key", field=spec.key.__name__, position=end)
    return value


def _decode_value(spec: RecordSpec, value: bytes, version: int) -> Message:
    if spec.type in _OFFSET_TYPES:
        return decode_offset_commit_value(value, version)
    flexible = spec.is_flexible(version)
    first_error: CodecError | None = None
    parsed: Message | None = None  # the first layout that read every byte but would write other bytes
    for layout in spec.layouts:
        try:
            decoded, end = decoder(layout, version, flexible)(value, 2)
        except CodecError as exc:
            first_error = first_error or exc
            continue
        if end == len(value):
            if spec.type == RecordType.GROUP_METADATA:
                decoded = _with_consumer_blobs(decoded)
            if len(spec.layouts) == 1 or _writes_back(decoded, layout, version, flexible, value):
                return decoded
            parsed = parsed or decoded
            continue
        first_error = first_error or CodecError(
            f"{len(value) - end} trailing bytes after the value", field=layout.__name__, position=end
        )
    if parsed is not None:
        return parsed
    assert first_error is not None
    raise first_error


def _writes_back(decoded: Message, layout: type, version: int, flexible: bool, value: bytes) -> bool:
    """Whether ``decoded`` encodes to exactly ``value`` again. Only asked where a type has early-access layouts
    under the same version number: bytes of one can, rarely, also parse as another (a tagged field written at its
    default is then dropped on the way back). Kafka's own bytes always write back under their true layout, so the
    layout that does is the one they were written with."""
    out = bytearray(value[:2])
    encoder(layout, version, flexible)(decoded, out)
    return bytes(out) == value


def _with_consumer_blobs(value: GroupMetadataValue) -> GroupMetadataValue:
    """Decodes members' subscription/assignment blobs for ``consumer`` groups; other protocols stay raw."""
    if value.protocol_type != "consumer" or not value.members:
        return value
    members = []
    for member in value.members:
        try:
            sub = decode_subscription(member.subscription)
        except CodecError:
            sub = None
        try:
            asg = decode_assignment(member.assignment)
        except CodecError:
            asg = None
        members.append(dataclasses.replace(member, decoded_subscription=sub, decoded_assignment=asg))
    return dataclasses.replace(value, members=tuple(members))


def decode_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord | UnknownRecord:
    """Decodes one ``__consumer_offsets`` record (key and value as stored, with their int16 prefixes)."""
    if key is None:
        raise CodecError("record has a null key (Kafka always writes one)", field="key")
    if len(key) < 2:
        raise CodecError(f"key of {len(key)} bytes has no record type", field="key", position=0)
    record_type = w.INT16.unpack_from(key, 0)[0]
    spec = spec_for(record_type)
    version = -1
    if value is not None:
        if len(value) < 2:
            raise CodecError(f"value of {len(value)} bytes has no version", field="value", position=0)
        version = w.INT16.unpack_from(value, 0)[0]
    if spec is None:
        return UnknownRecord(record_type, version, bytes(key), _raw(value), f"unknown record type {record_type}")
    decoded_key = _decode_key(spec, key)
    if value is None:
        return CoordinatorRecord(spec.type, decoded_key, None, -1)
    lo, hi = spec.value_versions
    if not lo <= version <= hi:
        group = getattr(decoded_key, "group", None) or getattr(decoded_key, "group_id", None)
        return UnknownRecord(
            record_type,
            version,
            bytes(key),
            bytes(value),
            f"unknown value version {version} of record type {record_type} (known {lo}-{hi})",
            group,
        )
    return CoordinatorRecord(spec.type, decoded_key, _decode_value(spec, value, version), version)


def _raw(value: bytes | None) -> bytes | None:
    return None if value is None else bytes(value)


def encode_key(record_type: int, key: Message) -> bytes:
    spec = spec_for(record_type)
    if spec is None or not isinstance(key, spec.key):
        raise ValueError(f"{type(key).__name__} is not the key of record type {record_type}")
    out = bytearray(w.INT16.pack(record_type))
    encoder(spec.key, 0, False)(key, out)
    return bytes(out)


def encode_value(record_type: int, value: Message, version: int) -> bytes:
    spec = spec_for(record_type)
    if spec is None or type(value) not in spec.layouts:
        raise ValueError(f"{type(value).__name__} is not a value of record type {record_type}")
    lo, hi = spec.value_versions
    if not lo <= version <= hi:
        raise ValueError(f"record type {record_type} has no value version {version} (valid {lo}-{hi})")
    out = bytearray(w.INT16.pack(version))
    encoder(type(value), version, spec.is_flexible(version))(value, out)
    return bytes(out)


def encode_record(record: CoordinatorRecord | UnknownRecord) -> tuple[bytes, bytes | None]:
    """Key and value bytes exactly as Kafka writes them (a tombstone's value is None)."""
    if isinstance(record, UnknownRecord):
        return record.key, record.value
    key = encode_key(record.type, record.key)
    if record.value is None:
        return key, None
    return key, encode_value(record.type, record.value, record.value_version)
