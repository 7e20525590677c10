"""Kafka's own JSON rendering of ``__consumer_offsets`` records, as ``kafka-dump-log.sh --offsets-decoder`` prints it.

Users diff groupscope's decoder against Kafka's tool, so this reproduces the tool's objects exactly: the key as
``{"type": "<prefix>", "data": {...}}``, the value as ``{"version": "<v>", "data": {...}}`` or the string
``"<DELETE>"``, fields in schema order with Kafka's camelCase names, only the fields of that version, tagged fields
only when not default. For classic groups of protocol type ``consumer`` the tool replaces each member's
subscription and assignment bytes by their decoded form when the Java reader accepts them (blob version 0-3,
trailing bytes ignored) and leaves the base64 bytes otherwise; this module applies the same rule.
"""

from __future__ import annotations

import json
from typing import Any

from . import _wire as w
from ._consumer_protocol import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from ._schema import decoder, to_kafka_json
from .errors import CodecError
from .records import CoordinatorRecord, GroupMetadataValue, RecordType

__all__ = ["kafka_key_json", "kafka_payload_json", "kafka_offset_commit_payload_text", "DELETE"]

DELETE = "<DELETE>"


def kafka_key_json(record: CoordinatorRecord) -> dict[str, Any]:
    return {"type": str(int(record.type)), "data": to_kafka_json(record.key, 0)}


def kafka_payload_json(record: CoordinatorRecord) -> dict[str, Any] | str:
    if record.value is None:
        return DELETE
    data = to_kafka_json(record.value, record.value_version)
    if record.type == RecordType.GROUP_METADATA:
        _replace_consumer_blobs(record.value, data)  # type: ignore[arg-type]
    return {"version": str(record.value_version), "data": data}


def _java_lenient(cls: type, blob: bytes) -> dict[str, Any] | None:
    """Reads a blob the way the Java generated reader does: versions 0-3 only, trailing bytes ignored."""
    if len(blob) < 2:
        return None
    version = w.INT16.unpack_from(blob, 0)[0]
    if not 0 <= version <= 3:
        return None
    try:
        value, _end = decoder(cls, version, False)(blob, 2)
    except CodecError:
        return None
    return to_kafka_json(value, version)


def _replace_consumer_blobs(value: GroupMetadataValue, data: dict[str, Any]) -> None:
    if value.protocol_type != "consumer":
        return
    for member, node in zip(value.members, data.get("members", ())):
        sub = _java_lenient(ConsumerProtocolSubscription, member.subscription)
        if sub is not None:
            node["subscription"] = sub
        asg = _java_lenient(ConsumerProtocolAssignment, member.assignment)
        if asg is not None:
            node["assignment"] = asg


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def kafka_offset_commit_payload_text(
    version: int, offset: int, leader_epoch: int, metadata: str, commit_timestamp: int, expire_timestamp: int
) -> str:
    """The payload JSON text of an offset commit v0-v3, written directly (the dump of a busy partition is millions
    of these; building and serializing a dict each time is several times slower). Same output as
    ``json.dumps(kafka_payload_json(record), separators=(",", ":"), ensure_ascii=False)``."""
    meta = _json_string(metadata) if metadata else '""'
    if version == 3:
        body = f'"offset":{offset},"leaderEpoch":{leader_epoch},"metadata":{meta},"commitTimestamp":{commit_timestamp}'
    elif version == 1:
        body = (f'"offset":{offset},"metadata":{meta},"commitTimestamp":{commit_timestamp},'
                f'"expireTimestamp":{expire_timestamp}')
    elif version in (0, 2):
        body = f'"offset":{offset},"metadata":{meta},"commitTimestamp":{commit_timestamp}'
    else:
        raise ValueError(f"offset commit version {version} has no fixed layout here")
    return f'{{"version":"{version}","data":{{{body}}}}}'
