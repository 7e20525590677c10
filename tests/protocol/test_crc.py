"""The two batch checksums: CRC-32C (v2 batches) and CRC-32 IEEE (legacy magic 0/1 messages), checked against
published test vectors rather than against another implementation of the same library."""

from __future__ import annotations

import pytest

from protocol._crc import crc32, crc32c


def test_crc32c_matches_kafka_unit_test_values():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"Some String") == 608512271  # Crc32CTest.java
    assert crc32c(memoryview(b"Some String")) == 608512271


def test_crc32_is_zlib_ieee():
    assert crc32(b"123456789") == 0xCBF43926


@pytest.mark.parametrize(
    "data, expected",
    [
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
    ids=["zeros", "ones", "ascending", "descending"],
)
def test_crc32c_matches_the_iscsi_vectors_of_rfc_3720(data, expected):
    """RFC 3720 appendix B.4 lists CRC-32C results for four 32-byte patterns: the same polynomial Kafka uses."""
    assert crc32c(data) == expected


def test_crc32_of_the_classic_pangram():
    assert crc32(b"The quick brown fox jumps over the lazy dog") == 0x414FA339


def test_checksums_of_nothing_are_zero():
    assert crc32c(b"") == 0 and crc32(b"") == 0


def test_checksums_are_unsigned_32_bit_ints():
    """Kafka stores the v2 CRC as an unsigned int32 (a Java long in the API); a negative here would not compare
    equal to the header's field."""
    for data in (b"\xff" * 32, b"123456789", bytes(range(256))):
        assert 0 <= crc32c(data) < 2**32 and 0 <= crc32(data) < 2**32
    assert crc32(b"123456789") > 2**31  # would be negative if the sign bit leaked


def test_checksums_accept_every_buffer_type_alike():
    raw = bytes(range(200))
    for view in (bytearray(raw), memoryview(raw), memoryview(b"xx" + raw + b"yy")[2:-2]):
        assert crc32c(view) == crc32c(raw)
        assert crc32(view) == crc32(raw)


def test_the_two_algorithms_differ():
    """The module exists so call sites never mix the two up; they must give different answers to be told apart."""
    assert crc32c(b"123456789") != crc32(b"123456789")


@pytest.mark.parametrize("fn", [crc32c, crc32])
def test_non_buffer_input_is_a_type_error(fn):
    with pytest.raises(TypeError):
        fn("123456789")
