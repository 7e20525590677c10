"""Primitive readers and writers of Kafka's message encoding (big-endian, unsigned varints, compact forms).

Kept free of any schema knowledge: ``_schema.py`` composes these into per-message decoders. Every reader takes
``(buf, pos)`` and returns ``(value, new_pos)`` instead of mutating a cursor object: a closure over plain ints is
the fastest shape CPython offers for this, and it keeps the functions pure. Truncation raises :class:`CodecError`
with the position, never ``struct.error`` or ``IndexError``.
"""

from __future__ import annotations

import base64
import struct
from typing import Callable

from .errors import CodecError

__all__ = [
    "Uuid",
    "ZERO_UUID",
    "Reader",
    "read_uvarint",
    "write_uvarint",
    "INT8",
    "INT16",
    "UINT16",
    "INT32",
    "INT64",
]

Reader = Callable[[bytes, int], "tuple[object, int]"]

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")


class Uuid(bytes):
    """A 16-byte Kafka UUID that prints the way Kafka prints it (URL-safe base64, no padding).

    A ``bytes`` subclass so it hashes, compares and slices like the raw wire value and costs nothing to build.
    """

    __slots__ = ()

    def __new__(cls, raw: bytes = b"\x00" * 16) -> "Uuid":
        if len(raw) != 16:
            raise ValueError(f"a Uuid is 16 bytes, got {len(raw)}")
        return super().__new__(cls, raw)

    @classmethod
    def parse(cls, text: str) -> "Uuid":
        """Reads Kafka's 22-character text form."""
        raw = base64.urlsafe_b64decode(text + "==")
        return cls(raw)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(bytes(self)).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"


ZERO_UUID = Uuid()


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint of flexible message fields (not the zig-zag varint of record framing)."""
    try:
        b = buf[pos]
    except IndexError:
        raise CodecError("truncated varint", position=pos) from None
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    p = pos + 1
    while True:
        try:
            b = buf[p]
        except IndexError:
            raise CodecError("truncated varint", position=pos) from None
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, p
        shift += 7
        if shift > 28:
            raise CodecError("varint longer than 5 bytes", position=pos)


def write_uvarint(value: int, out: bytearray) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot encode {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def fixed_reader(st: struct.Struct) -> Reader:
    size = st.size
    unpack = st.unpack_from

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        if pos + size > len(buf):
            raise CodecError(f"needs {size} bytes, {len(buf) - pos} left", position=pos)
        return unpack(buf, pos)[0], pos + size

    return read


def read_uuid(buf: bytes, pos: int) -> tuple[object, int]:
    end = pos + 16
    if end > len(buf):
        raise CodecError(f"needs 16 bytes, {len(buf) - pos} left", position=pos)
    return Uuid(buf[pos:end]), end


def _take(buf: bytes, pos: int, n: int) -> tuple[bytes, int]:
    end = pos + n
    if end > len(buf):
        raise CodecError(f"length {n} runs past the end ({len(buf) - pos} bytes left)", position=pos)
    return bytes(buf[pos:end]), end


def _utf8(raw: bytes, pos: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(f"invalid UTF-8 ({exc.reason})", position=pos) from None


def string_reader(*, flexible: bool, nullable: bool) -> Reader:
    """Strings: int16 length (-1 null) or, in flexible versions, uvarint length+1 (0 null)."""
    i16 = INT16.unpack_from

    if flexible:

        def read(buf: bytes, pos: int) -> tuple[object, int]:
            n, p = read_uvarint(buf, pos)
            if n == 0:
                if nullable:
                    return None, p
                raise CodecError("null in a non-nullable string", position=pos)
            raw, end = _take(buf, p, n - 1)
            return _utf8(raw, p), end

    else:

        def read(buf: bytes, pos: int) -> tuple[object, int]:
            if pos + 2 > len(buf):
                raise CodecError("truncated string length", position=pos)
            n = i16(buf, pos)[0]
            if n < 0:
                if n == -1 and nullable:
                    return None, pos + 2
                raise CodecError(f"string length {n}", position=pos)
            raw, end = _take(buf, pos + 2, n)
            return _utf8(raw, pos + 2), end

    return read


def bytes_reader(*, flexible: bool, nullable: bool) -> Reader:
    """Bytes: int32 length (-1 null) or, in flexible versions, uvarint length+1 (0 null)."""
    i32 = INT32.unpack_from

    if flexible:

        def read(buf: bytes, pos: int) -> tuple[object, int]:
            n, p = read_uvarint(buf, pos)
            if n == 0:
                if nullable:
                    return None, p
                raise CodecError("null in non-nullable bytes", position=pos)
            return _take(buf, p, n - 1)

    else:

        def read(buf: bytes, pos: int) -> tuple[object, int]:
            if pos + 4 > len(buf):
                raise CodecError("truncated bytes length", position=pos)
            n = i32(buf, pos)[0]
            if n < 0:
                if n == -1 and nullable:
                    return None, pos + 4
                raise CodecError(f"bytes length {n}", position=pos)
            return _take(buf, pos + 4, n)

    return read


def array_reader(element: Reader, *, flexible: bool, nullable: bool) -> Reader:
    """Arrays: int32 count (-1 null) or uvarint count+1 (0 null); decoded to a tuple (values are frozen)."""
    i32 = INT32.unpack_from

    def read(buf: bytes, pos: int) -> tuple[object, int]:
        if flexible:
            n, p = read_uvarint(buf, pos)
            if n == 0:
                if nullable:
                    return None, p
                raise CodecError("null in a non-nullable array", position=pos)
            n -= 1
        else:
            if pos + 4 > len(buf):
                raise CodecError("truncated array length", position=pos)
            n = i32(buf, pos)[0]
            p = pos + 4
            if n < 0:
                if n == -1 and nullable:
                    return None, p
                raise CodecError(f"array length {n}", position=pos)
        # Each element takes at least one byte: a count beyond the bytes left is corrupt, and checking it up front
        # keeps a hostile count from allocating a huge list.
        if n > len(buf) - p:
            raise CodecError(f"array of {n} elements cannot fit in {len(buf) - p} bytes", position=pos)
        items = []
        append = items.append
        for _ in range(n):
            item, p = element(buf, p)
            append(item)
        return tuple(items), p

    return read


def write_string(value: str | None, out: bytearray, *, flexible: bool) -> None:
    if value is None:
        if flexible:
            out.append(0)
        else:
            out += b"\xff\xff"
        return
    raw = value.encode("utf-8")
    if flexible:
        write_uvarint(len(raw) + 1, out)
    else:
        if len(raw) > 0x7FFF:
            raise ValueError("string longer than 32767 bytes")
        out += INT16.pack(len(raw))
    out += raw


def write_bytes(value: bytes | None, out: bytearray, *, flexible: bool) -> None:
    if value is None:
        if flexible:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if flexible:
        write_uvarint(len(value) + 1, out)
    else:
        out += INT32.pack(len(value))
    out += value


def write_array_count(count: int | None, out: bytearray, *, flexible: bool) -> None:
    if count is None:
        if flexible:
            out.append(0)
        else:
            out += b"\xff\xff\xff\xff"
        return
    if flexible:
        write_uvarint(count + 1, out)
    else:
        out += INT32.pack(count)
