"""The schema engine on small messages declared here, so each rule of Kafka's message JSON can be seen in
isolation: version ranges, nullable versions, flexible versions with tagged fields (omitted at their default,
written in tag order, unknown ones kept), nullable structs, and errors that name the field being read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from protocol._schema import MAX_VERSION, Kind, Message, decoder, encoder, message, parse_versions, to_kafka_json, wire
from protocol._wire import Uuid
from protocol.errors import CodecError

FROZEN = dict(frozen=True, slots=True, kw_only=True)


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


@dataclass(**FROZEN)
class Point(Message):
    x: int = wire(Kind.INT16)


@message(valid="0-2", flexible="2+")
@dataclass(**FROZEN)
class Sample(Message):
    count: int = wire(Kind.INT32)
    name: str | None = wire(Kind.STRING, nullable="1+", default=None)
    sizes: tuple[int, ...] = wire(Kind.ARRAY, "1+", of=Kind.INT16)
    only_v1: int = wire(Kind.INT64, "1", default=-1)
    topic_id: Uuid = wire(Kind.UUID, "2+", tag=0, default=Uuid())
    where: Point | None = wire(Kind.STRUCT, "2+", nullable="2+", tag=1, of=Point)
    renamed: int = wire(Kind.INT8, "2+", json_name="Odd_Name")


def encode(value: Message, version: int) -> bytes:
    out = bytearray()
    encoder(type(value), version, version >= 2)(value, out)
    return bytes(out)


def decode(raw: bytes, version: int):
    return decoder(Sample, version, version >= 2)(raw, 0)


@pytest.mark.parametrize(
    "spec, expected",
    [("0", (0, 0)), ("3+", (3, MAX_VERSION)), ("0-2", (0, 2)), ("none", None), (None, None)],
)
def test_parse_versions(spec, expected):
    assert parse_versions(spec) == expected


def test_message_decorator_sets_the_ranges():
    assert Sample.VALID_VERSIONS == (0, 2) and Sample.FLEXIBLE_VERSIONS == (2, MAX_VERSION)
    assert Point.VALID_VERSIONS == (0, 0) and Point.FLEXIBLE_VERSIONS is None


def test_default_values_follow_kafkas_rules():
    value = Sample()
    assert (value.count, value.name, value.sizes, value.topic_id, value.where) == (0, None, (), Uuid(), None)
    with pytest.raises(TypeError, match="explicit default"):
        wire(Kind.STRUCT, of=Point)


VECTORS = {
    0: (Sample(count=7, name="ab"), "00 00 00 07 00 02 61 62"),
    # v1: the name may be null, the array and the v1-only int64 appear.
    1: (Sample(count=7, name=None, sizes=(1, -1), only_v1=9),
        "00 00 00 07 ff ff 00 00 00 02 00 01 ff ff 00 00 00 00 00 00 00 09"),
    # v2 (flexible): compact string and array, the int8, then the tag section; the zero topic id is left out.
    2: (Sample(count=7, name="ab", sizes=(1,), where=Point(x=3), renamed=-2),
        "00 00 00 07 03 61 62 02 00 01 fe 01 01 04 01 00 03 00"),
}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_vectors_per_version(version):
    value, raw = VECTORS[version]
    assert encode(value, version) == h(raw)
    assert decode(h(raw), version) == (value, len(h(raw)))


def test_fields_outside_the_version_are_neither_written_nor_read():
    """A v0 writer drops ``sizes`` and ``only_v1``; reading back gives their defaults."""
    value = Sample(count=1, name="x", sizes=(5,), only_v1=3)
    decoded, _ = decode(encode(value, 0), 0)
    assert (decoded.sizes, decoded.only_v1) == ((), -1)


def test_tagged_fields_are_written_in_tag_order_and_read_in_any():
    value = Sample(count=0, name="", topic_id=Uuid(bytes(range(16))), where=Point(x=1))
    raw = encode(value, 2)
    tags = h("02 00 10") + bytes(range(16)) + h("01 04 01 00 01 00")  # tag 1: presence, x, Point's own tags
    assert raw == h("00 00 00 00 01 01 00") + tags
    swapped = h("00 00 00 00 01 01 00 02 01 04 01 00 01 00 00 10") + bytes(range(16))
    assert decode(swapped, 2)[0] == value


def test_null_tagged_struct_is_written_with_presence_zero():
    """The struct's default is null and a tagged field at its default is omitted, so no tag 1 is written."""
    assert encode(Sample(), 2).endswith(h("00"))
    raw = h("00 00 00 00 01 01 00 01 01 01 00")  # tag 1 present, presence byte 0: null
    assert decode(raw, 2)[0].where is None


def test_unknown_tags_survive_a_round_trip_in_order():
    raw = h("00 00 00 00 01 01 00 02 01 04 01 00 01 00 07 02 ab cd")
    value, end = decode(raw, 2)
    assert end == len(raw) and value.unknown_tags == ((7, b"\xab\xcd"),)
    assert encode(value, 2) == raw


def test_nullable_struct_in_non_flexible_versions_uses_ff_for_null():
    @message(valid="0")
    @dataclass(**FROZEN)
    class Holder(Message):
        p: Point | None = wire(Kind.STRUCT, nullable="0+", of=Point)

    out = bytearray()
    encoder(Holder, 0, False)(Holder(p=None), out)
    assert out == h("ff")
    out = bytearray()
    encoder(Holder, 0, False)(Holder(p=Point(x=2)), out)
    assert out == h("01 00 02")
    assert decoder(Holder, 0, False)(h("01 00 02"), 0) == (Holder(p=Point(x=2)), 3)
    with pytest.raises(CodecError, match="presence"):
        decoder(Holder, 0, False)(b"", 0)


@pytest.mark.parametrize(
    "version, raw, field, match",
    [
        (0, "00 00 00", "Sample.count", "needs 4 bytes"),
        (0, "00 00 00 07 ff ff", "Sample.name", "string length -1"),  # not nullable in v0
        (1, "00 00 00 07 ff ff 00 00 00 02 00 01", "Sample.sizes", "needs 2 bytes"),
        (2, "00 00 00 07 01 01 00 01 00 05", "Sample.<tagged fields>", "runs past the end"),
        (2, "00 00 00 07 01 01 00 01 01 04 01 00 03", "Sample.<tagged fields>", "runs past the end"),
        # The innermost message names the error: here Point's own tag section is cut by the tag's size.
        (2, "00 00 00 07 01 01 00 01 01 03 01 00 03", "Point.<tagged fields>", "truncated varint"),
        (2, "00 00 00 07 01 01 00 01 00 11" + " 00" * 17, "Sample.topic_id", "declared 17 bytes, used 16"),
    ],
)
def test_errors_name_the_field(version, raw, field, match):
    with pytest.raises(CodecError, match=match) as info:
        decode(h(raw), version)
    assert info.value.field == field


def test_encoder_errors_name_the_field():
    with pytest.raises(ValueError, match="Sample.name"):
        encode(Sample(name="x" * 0x8000), 0)
    with pytest.raises(ValueError, match="16 bytes"):  # a tagged field: the writer's own message
        encode(Sample(topic_id=b"short"), 2)


def test_encoder_names_the_field_of_an_out_of_range_integer():
    with pytest.raises(ValueError, match="Sample.count"):
        encode(Sample(count=2**40), 0)


def test_kafka_json_names_and_version_gating():
    value = Sample(count=7, name="ab", sizes=(1,), where=Point(x=3), renamed=-2)
    assert to_kafka_json(value, 2) == {"count": 7, "name": "ab", "sizes": [1], "where": {"x": 3}, "Odd_Name": -2}
    assert to_kafka_json(value, 0) == {"count": 7, "name": "ab"}
    assert to_kafka_json(Sample(topic_id=Uuid(bytes(range(16)))), 2)["topicId"] == "AAECAwQFBgcICQoLDA0ODw"
