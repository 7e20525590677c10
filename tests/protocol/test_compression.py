"""Batch compression codecs: what each stream looks like on the wire (the framing Kafka's Java clients write and
read), round trips, the LZ4 header-checksum repair for Kafka 0.8/0.9 data, and bad streams raising CodecError."""

from __future__ import annotations

import struct

import cramjam
import pytest

from protocol._compression import CompressionType, _xxh32, compress, decompress
from protocol.errors import CodecError

CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]
ALL_CODECS = [CompressionType.NONE, *CODECS]
PAYLOAD = bytes(range(256)) * 40 + b"tail"
XERIAL_HEADER = bytes.fromhex("82534e41505059000000000100000001")  # magic 82 'SNAPPY' 00, version 1, compatible 1
LZ4_MAGIC = bytes.fromhex("04224d18")


def test_codec_numbers_are_kafkas_attribute_bits():
    """Bits 0-2 of the batch attributes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (Kafka's CompressionType ids)."""
    assert [int(c) for c in ALL_CODECS] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("data", [b"", b"x", PAYLOAD, bytes(200_000)], ids=["empty", "one", "mixed", "zeros-200k"])
def test_round_trip(codec, data):
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize(
    "codec, magic",
    [
        (CompressionType.GZIP, b"\x1f\x8b"),  # RFC 1952 member header
        (CompressionType.SNAPPY, XERIAL_HEADER),
        (CompressionType.LZ4, LZ4_MAGIC),  # LZ4 frame format magic number, little-endian 0x184D2204
        (CompressionType.ZSTD, bytes.fromhex("28b52ffd")),  # RFC 8878 frame magic, little-endian 0xFD2FB528
    ],
    ids=lambda v: getattr(v, "name", ""),
)
def test_streams_start_with_their_formats_magic(codec, magic):
    assert compress(codec, PAYLOAD).startswith(magic)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_every_buffer_type_decompresses_alike(codec):
    stream = compress(codec, PAYLOAD)
    for view in (bytearray(stream), memoryview(stream), memoryview(b"__" + stream)[2:]):
        assert decompress(codec, view) == PAYLOAD


def test_gzip_multi_member_stream():
    assert (
        decompress(CompressionType.GZIP, compress(CompressionType.GZIP, b"ab") + compress(CompressionType.GZIP, b"cd"))
        == b"abcd"
    )


# --- snappy: the xerial container ---------------------------------------------------------------------------------


def _xerial_blocks(stream: bytes) -> list[bytes]:
    """The raw snappy blocks of a xerial stream, read by the layout SnappyOutputStream writes."""
    assert stream[:16] == XERIAL_HEADER
    blocks, pos = [], 16
    while pos < len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        blocks.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    assert pos == len(stream)
    return blocks


def test_snappy_blocks_hold_at_most_32_kib_of_input_each():
    data = bytes(range(251)) * 400  # 100,400 bytes: three full 32 KiB blocks and a short fourth
    blocks = _xerial_blocks(compress(CompressionType.SNAPPY, data))
    sizes = [len(cramjam.snappy.decompress_raw(b)) for b in blocks]
    assert sizes == [32768, 32768, 32768, 100_400 - 3 * 32768]
    assert b"".join(bytes(cramjam.snappy.decompress_raw(b)) for b in blocks) == data


def test_snappy_of_nothing_is_the_bare_header():
    assert compress(CompressionType.SNAPPY, b"") == XERIAL_HEADER
    assert decompress(CompressionType.SNAPPY, XERIAL_HEADER) == b""


def test_snappy_without_xerial_magic_is_read_as_one_raw_block():
    """What old non-Java clients wrote: one raw snappy block with no container."""
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(PAYLOAD))) == PAYLOAD


@pytest.mark.parametrize(
    "stream, match",
    [
        (XERIAL_HEADER[:12], "header needs 16 bytes"),
        (XERIAL_HEADER + b"\x00\x00", "block length needs 4 bytes"),
        (XERIAL_HEADER + b"\x00\x00\x00\x09abc", "declares 9 bytes, 3 left"),
        (XERIAL_HEADER + b"\xff\xff\xff\xff", "declares -1 bytes"),
    ],
    ids=["short-header", "cut-length", "block-past-end", "negative-length"],
)
def test_snappy_broken_container_names_the_problem(stream, match):
    with pytest.raises(CodecError, match=match) as info:
        decompress(CompressionType.SNAPPY, stream)
    assert info.value.field == "records"


# --- LZ4 ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, expected",
    [(b"", 0x02CC5D05), (b"a", 0x550D7456), (b"abc", 0x32D153FF),
     (b"Nobody inspects the spammish repetition", 0xE2293B2F)],
)
def test_xxh32_matches_the_reference_vectors(data, expected):
    """Seed-0 values from the xxHash reference implementation; the last input is long enough (39 bytes) to take
    the four-lane path."""
    assert _xxh32(data) == expected


def test_lz4_frame_has_independent_blocks_and_a_valid_header_checksum():
    """Kafka's KafkaLZ4BlockInputStream refuses linked blocks (FLG bit 5 must be set); the header checksum byte
    is the second byte of xxh32 over the descriptor (FLG, BD), by the LZ4 frame format."""
    frame = compress(CompressionType.LZ4, PAYLOAD)
    flg = frame[4]
    assert flg >> 6 == 0b01  # frame format version 01
    assert flg & 0x20  # block independence
    assert not flg & 0x08  # no content size: the descriptor is FLG and BD only
    assert frame[6] == (_xxh32(frame[4:6]) >> 8) & 0xFF


def test_lz4_magic_0_frames_carry_kafka_0_8_header_checksum():
    """KAFKA-3160: Kafka 0.8/0.9 hashed the magic number with the descriptor. Such a frame is refused by a standard
    reader (magic 2), and read for magic 0 and 1 by recomputing the checksum."""
    broken = compress(CompressionType.LZ4, PAYLOAD, magic=0)
    assert broken[6] == (_xxh32(broken[0:6]) >> 8) & 0xFF
    assert broken[6] != (_xxh32(broken[4:6]) >> 8) & 0xFF  # else this test could not tell the two apart
    assert broken[:6] + broken[7:] == compress(CompressionType.LZ4, PAYLOAD)[:6] + compress(
        CompressionType.LZ4, PAYLOAD)[7:]
    assert decompress(CompressionType.LZ4, broken, magic=0) == PAYLOAD
    assert decompress(CompressionType.LZ4, broken, magic=1) == PAYLOAD
    with pytest.raises(CodecError, match="lz4"):
        decompress(CompressionType.LZ4, broken, magic=2)


def test_lz4_lenient_read_still_rejects_garbage_after_the_magic():
    junk = LZ4_MAGIC + b"\x60\x40\x00garbage"
    with pytest.raises(CodecError):
        decompress(CompressionType.LZ4, junk, magic=0)


# --- errors -------------------------------------------------------------------------------------------------------

GARBAGE = (b"", b"\x00", b"not a compressed stream at all", b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x7f")


@pytest.mark.parametrize("codec", ALL_CODECS[1:], ids=lambda c: c.name)
@pytest.mark.parametrize("junk", GARBAGE, ids=("empty", "zero", "text", "xerial-truncated"))
def test_garbage_streams_raise_codec_error(codec, junk):
    if codec == CompressionType.SNAPPY and junk == b"\x00":
        # Not garbage for snappy: a raw block whose leading varint (the uncompressed length) is 0 is the empty
        # string, by the snappy format.
        assert decompress(codec, junk) == b""
        return
    with pytest.raises(CodecError):
        decompress(codec, junk)


def test_unknown_or_absent_codec_raises_codec_error():
    with pytest.raises(CodecError):
        decompress(CompressionType.NONE, b"x")
    with pytest.raises(CodecError):
        compress(7, b"x")


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.UNKNOWN, 5, 7])
def test_codecs_without_a_stream_name_the_attributes_field(codec):
    for call in (compress, decompress):
        with pytest.raises(CodecError, match=f"codec {int(codec)}") as info:
            call(codec, b"x")
        assert info.value.field == "attributes.compression"


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_truncated_streams_raise_codec_error_naming_the_codec(codec):
    stream = compress(codec, PAYLOAD)
    with pytest.raises(CodecError, match=codec.name.lower()) as info:
        decompress(codec, stream[: len(stream) // 2])
    assert info.value.field == "records"
