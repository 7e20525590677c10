"""groupscope's own JSON form of decoded records: every field in snake_case, blobs decoded, nothing version-gated.

Richer than Kafka's rendering (``kafka_json``): it shows decoded consumer-protocol blobs next to the raw bytes,
member states by name and topic ids in Kafka's text form, so a person can read a record without the schema.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from typing import Any

from ._wire import ZERO_UUID, Uuid
from .records import CoordinatorRecord, UnknownRecord

__all__ = ["to_plain", "record_to_plain"]


def to_plain(value: Any) -> Any:
    """Dataclasses → dicts, tuples → lists, uuids → text, bytes → base64; empty ``unknown_tags`` left out."""
    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Uuid):
        return None if value == ZERO_UUID else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.name == "unknown_tags":
                if v:
                    out[f.name] = [[tag, base64.b64encode(raw).decode("ascii")] for tag, raw in v]
                continue
            out[f.name] = to_plain(v)
        return out
    return repr(value)


def record_to_plain(record: CoordinatorRecord | UnknownRecord) -> dict[str, Any]:
    if isinstance(record, UnknownRecord):
        return {
            "type": record.type,
            "unknown": True,
            "reason": record.reason,
            "version": record.version,
            "group_id": record.group_id,
            "key_hex": record.key.hex(),
            "value_hex": None if record.value is None else record.value.hex(),
        }
    return {
        "type": record.type.name,
        "type_id": int(record.type),
        "version": record.value_version,
        "tombstone": record.value is None,
        "key": to_plain(record.key),
        "value": to_plain(record.value),
    }
