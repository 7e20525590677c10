"""Kafka's primitive encodings (the protocol guide's "Protocol Primitive Types"): unsigned varints, int16/int32
length prefixes with -1 for null, the compact forms of flexible versions (length + 1, 0 for null), UUIDs printed
the way Kafka prints them, and the promise that truncation raises CodecError with a position."""

from __future__ import annotations

import pytest

from protocol._wire import (
    INT32,
    INT64,
    ZERO_UUID,
    Uuid,
    array_reader,
    bytes_reader,
    fixed_reader,
    read_uuid,
    read_uvarint,
    string_reader,
    write_array_count,
    write_bytes,
    write_string,
    write_uvarint,
)
from protocol.errors import CodecError


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


UVARINTS = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "80 01"),
    (300, "ac 02"),  # the protocol-buffers documentation's example
    (16383, "ff 7f"),
    (16384, "80 80 01"),
    (2**31 - 1, "ff ff ff ff 07"),
    (2**32 - 1, "ff ff ff ff 0f"),
]


@pytest.mark.parametrize("value, encoded", UVARINTS)
def test_uvarint_vectors(value, encoded):
    out = bytearray()
    write_uvarint(value, out)
    assert out == h(encoded)
    assert read_uvarint(b"\xee" + h(encoded) + b"\xee", 1) == (value, 1 + len(h(encoded)))


def test_uvarint_truncated_raises_at_its_start():
    with pytest.raises(CodecError, match="truncated varint") as info:
        read_uvarint(h("00 80 80"), 1)
    assert info.value.position == 1
    with pytest.raises(CodecError, match="truncated varint"):
        read_uvarint(b"", 0)


def test_uvarint_longer_than_five_bytes_is_rejected():
    with pytest.raises(CodecError, match="longer than 5 bytes") as info:
        read_uvarint(h("80 80 80 80 80 01"), 0)
    assert info.value.position == 0


def test_uvarint_refuses_negative_values():
    with pytest.raises(ValueError):
        write_uvarint(-1, bytearray())


# --- fixed-width and UUIDs ----------------------------------------------------------------------------------------


def test_fixed_readers_are_big_endian_and_signed():
    assert fixed_reader(INT32)(h("ff ff ff fe"), 0) == (-2, 4)
    assert fixed_reader(INT64)(h("00 00 00 00 00 00 01 00"), 0) == (256, 8)


def test_fixed_reader_short_buffer_names_what_is_missing():
    with pytest.raises(CodecError, match="needs 4 bytes, 2 left") as info:
        fixed_reader(INT32)(h("00 00 00 00 01"), 3)
    assert info.value.position == 3


def test_uuid_prints_as_url_safe_base64_without_padding():
    """Kafka's Uuid.toString: Base64.getUrlEncoder().withoutPadding(), so 22 characters with - and _."""
    uuid = Uuid(h("00112233445566778899aabbccddeeff"))
    assert str(uuid) == "ABEiM0RVZneImaq7zN3u_w"
    assert Uuid.parse("ABEiM0RVZneImaq7zN3u_w") == uuid
    assert str(Uuid(b"\xfb\xff" + bytes(14))) == "-_8" + "A" * 19
    assert str(ZERO_UUID) == "A" * 22 and ZERO_UUID == bytes(16)
    assert repr(uuid) == "Uuid('ABEiM0RVZneImaq7zN3u_w')"


def test_uuid_is_exactly_16_bytes():
    with pytest.raises(ValueError, match="16 bytes"):
        Uuid(bytes(15))
    with pytest.raises(ValueError):
        Uuid.parse("AAAA")


def test_read_uuid():
    raw = h("01") + bytes(range(16))
    value, end = read_uuid(raw, 1)
    assert isinstance(value, Uuid) and value == bytes(range(16)) and end == 17
    with pytest.raises(CodecError, match="needs 16 bytes, 15 left"):
        read_uuid(raw, 2)


# --- strings ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flexible, raw, expected",
    [
        (False, "00 03 61 62 63", "abc"),
        (False, "00 00", ""),
        (False, "ff ff", None),
        (False, "00 02 c3 a9", "é"),  # the length counts UTF-8 bytes
        (True, "04 61 62 63", "abc"),  # compact: length + 1
        (True, "01", ""),
        (True, "00", None),
    ],
)
def test_string_reader(flexible, raw, expected):
    data = h(raw)
    assert string_reader(flexible=flexible, nullable=True)(data, 0) == (expected, len(data))
    out = bytearray()
    write_string(expected, out, flexible=flexible)
    assert out == data


@pytest.mark.parametrize("flexible, raw", [(False, "ff ff"), (True, "00")])
def test_null_in_a_non_nullable_string_is_an_error(flexible, raw):
    with pytest.raises(CodecError) as info:
        string_reader(flexible=flexible, nullable=False)(h(raw), 0)
    assert info.value.position == 0


@pytest.mark.parametrize(
    "flexible, raw, match, position",
    [
        (False, "ff fe", "string length -2", 0),
        (False, "00", "truncated string length", 0),
        (False, "00 05 61 62", "length 5 runs past the end", 2),
        (False, "00 02 c3 28", "invalid UTF-8", 2),
        (True, "06 61 62", "length 5 runs past the end", 1),
        (True, "03 ff fe", "invalid UTF-8", 1),
        (True, "", "truncated varint", 0),
    ],
)
def test_malformed_strings_raise_with_a_position(flexible, raw, match, position):
    with pytest.raises(CodecError, match=match) as info:
        string_reader(flexible=flexible, nullable=True)(h(raw), 0)
    assert info.value.position == position


def test_write_string_refuses_what_an_int16_length_cannot_hold():
    write_string("x" * 0x7FFF, bytearray(), flexible=False)
    with pytest.raises(ValueError, match="32767"):
        write_string("x" * 0x8000, bytearray(), flexible=False)
    out = bytearray()
    write_string("x" * 0x8000, out, flexible=True)  # compact strings have no such limit
    assert out[:3] == h("81 80 02")  # 32769 as a uvarint


# --- bytes and arrays ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flexible, raw, expected",
    [
        (False, "00 00 00 02 01 02", b"\x01\x02"),
        (False, "ff ff ff ff", None),
        (True, "03 01 02", b"\x01\x02"),
        (True, "00", None),
    ],
)
def test_bytes_reader(flexible, raw, expected):
    data = h(raw)
    assert bytes_reader(flexible=flexible, nullable=True)(data, 0) == (expected, len(data))
    out = bytearray()
    write_bytes(expected, out, flexible=flexible)
    assert out == data


@pytest.mark.parametrize(
    "flexible, nullable, raw, match",
    [
        (False, False, "ff ff ff ff", "bytes length -1"),
        (False, True, "ff ff ff fe", "bytes length -2"),
        (False, True, "00 00 00", "truncated bytes length"),
        (False, True, "00 00 00 09 01", "runs past the end"),
        (True, False, "00", "null in non-nullable bytes"),
    ],
)
def test_malformed_bytes_raise(flexible, nullable, raw, match):
    with pytest.raises(CodecError, match=match):
        bytes_reader(flexible=flexible, nullable=nullable)(h(raw), 0)


INT32_READER = fixed_reader(INT32)


@pytest.mark.parametrize(
    "flexible, raw, expected",
    [
        (False, "00 00 00 02 00 00 00 07 ff ff ff ff", (7, -1)),
        (False, "00 00 00 00", ()),
        (False, "ff ff ff ff", None),
        (True, "03 00 00 00 07 ff ff ff ff", (7, -1)),
        (True, "01", ()),
        (True, "00", None),
    ],
)
def test_array_reader(flexible, raw, expected):
    data = h(raw)
    assert array_reader(INT32_READER, flexible=flexible, nullable=True)(data, 0) == (expected, len(data))
    out = bytearray()
    write_array_count(None if expected is None else len(expected), out, flexible=flexible)
    assert out == data[: len(out)] and len(out) == (1 if flexible else 4)


@pytest.mark.parametrize(
    "flexible, nullable, raw, match",
    [
        (False, False, "ff ff ff ff", "array length -1"),
        (False, True, "ff ff ff fe", "array length -2"),
        (False, True, "00 00", "truncated array length"),
        (True, False, "00", "null in a non-nullable array"),
        # A count beyond the bytes left is refused before any element is read (no huge allocation).
        (False, True, "7f ff ff ff 00 00 00 01", "cannot fit in 4 bytes"),
        (True, True, "ff ff ff ff 07", "cannot fit in 0 bytes"),
        # A count that fits the byte budget but not the elements still fails, on the element.
        (False, True, "00 00 00 02 00 00 00 01 00 00", "needs 4 bytes, 2 left"),
    ],
)
def test_malformed_arrays_raise(flexible, nullable, raw, match):
    with pytest.raises(CodecError, match=match):
        array_reader(INT32_READER, flexible=flexible, nullable=nullable)(h(raw), 0)
