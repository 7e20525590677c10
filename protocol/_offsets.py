"""Hand-written fast paths for offset commits (types 0/1), the bulk of ``__consumer_offsets``.

Offset commits are >99% of the records a busy cluster writes, so they skip the generic schema engine: one
``unpack_from`` per fixed run, no per-field closures. The generic engine stays the reference; tests check that
both produce identical values for every version.
"""

from __future__ import annotations

import struct

from ._schema import decoder
from .errors import CodecError
from .records import OffsetCommitKey, OffsetCommitValue

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_Q = struct.Struct(">q").unpack_from
_QI = struct.Struct(">qi").unpack_from  # offset, leaderEpoch (v3)
_QQ = struct.Struct(">qq").unpack_from  # commitTimestamp, expireTimestamp (v1)


def _string(buf: bytes, pos: int, field: str) -> tuple[str, int]:
    if pos + 2 > len(buf):
        raise CodecError("truncated string length", field=field, position=pos)
    n = _I16(buf, pos)[0]
    end = pos + 2 + n
    if n < 0 or end > len(buf):
        raise CodecError(f"string length {n} does not fit", field=field, position=pos)
    try:
        return buf[pos + 2 : end].decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise CodecError(f"invalid UTF-8 ({exc.reason})", field=field, position=pos + 2) from None


def parse_offset_commit_key(key: bytes) -> tuple[str, str, int]:
    """``(group, topic, partition)`` of a type 0/1 key (including its 2-byte type prefix)."""
    group, p = _string(key, 2, "OffsetCommitKey.group")
    topic, p = _string(key, p, "OffsetCommitKey.topic")
    if p + 4 != len(key):
        if p + 4 > len(key):
            raise CodecError("truncated partition", field="OffsetCommitKey.partition", position=p)
        raise CodecError(f"{len(key) - p - 4} trailing bytes after the key", field="OffsetCommitKey", position=p + 4)
    return group, topic, _I32(key, p)[0]


# The same few thousand (group, topic, partition) keys repeat on every commit, so parsed keys are cached by their
# bytes; keys are immutable, so sharing one instance is safe. The cache is dropped whole when it grows past its
# bound, which costs one re-parse per key and keeps memory flat however many groups come and go.
_KEY_CACHE: dict[bytes, OffsetCommitKey] = {}
_KEY_CACHE_LIMIT = 200_000


def decode_offset_commit_key(key: bytes) -> OffsetCommitKey:
    cached = _KEY_CACHE.get(key)
    if cached is not None:
        return cached
    group, topic, partition = parse_offset_commit_key(key)
    decoded = OffsetCommitKey(group=group, topic=topic, partition=partition)
    if len(_KEY_CACHE) >= _KEY_CACHE_LIMIT:
        _KEY_CACHE.clear()
    _KEY_CACHE[bytes(key)] = decoded
    return decoded


def parse_offset_commit_value(value: bytes, version: int) -> tuple[int, int, str, int, int]:
    """``(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)`` of a v0-v3 value body.

    ``value`` includes the 2-byte version prefix. Absent fields take Kafka's defaults (-1).
    """
    n = len(value)
    if version == 3:
        if n < 16:
            raise CodecError("truncated offset/leaderEpoch", field="OffsetCommitValue.offset", position=2)
        offset, leader_epoch = _QI(value, 2)
        metadata, p = _string(value, 14, "OffsetCommitValue.metadata")
        if p + 8 != n:
            raise _tail_error(n, p, 8, "commitTimestamp")
        return offset, leader_epoch, metadata, _Q(value, p)[0], -1
    if n < 10:
        raise CodecError("truncated offset", field="OffsetCommitValue.offset", position=2)
    offset = _Q(value, 2)[0]
    metadata, p = _string(value, 10, "OffsetCommitValue.metadata")
    if version == 1:
        if p + 16 != n:
            raise _tail_error(n, p, 16, "commitTimestamp/expireTimestamp")
        commit, expire = _QQ(value, p)
        return offset, -1, metadata, commit, expire
    if p + 8 != n:
        raise _tail_error(n, p, 8, "commitTimestamp")
    return offset, -1, metadata, _Q(value, p)[0], -1


def _tail_error(n: int, p: int, want: int, field: str) -> CodecError:
    if p + want > n:
        return CodecError(f"needs {want} bytes, {n - p} left", field=f"OffsetCommitValue.{field}", position=p)
    return CodecError(f"{n - p - want} trailing bytes", field="OffsetCommitValue", position=p + want)


def decode_offset_commit_value(value: bytes, version: int) -> OffsetCommitValue:
    if version <= 3:
        offset, leader_epoch, metadata, commit, expire = parse_offset_commit_value(value, version)
        return OffsetCommitValue(
            offset=offset,
            leader_epoch=leader_epoch,
            metadata=metadata,
            commit_timestamp=commit,
            expire_timestamp=expire,
        )
    result, end = decoder(OffsetCommitValue, version, True)(value, 2)
    if end != len(value):
        raise CodecError(f"{len(value) - end} trailing bytes", field="OffsetCommitValue", position=end)
    return result
