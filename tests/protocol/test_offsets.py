"""The offset-commit fast paths (record types 0/1): hand-written vectors of OffsetCommitKey and each
OffsetCommitValue version as Kafka's OffsetCommitValue.json lays them out, their errors, and agreement with the
generic schema engine that stays the reference."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol._offsets import (
    decode_offset_commit_key,
    decode_offset_commit_value,
    parse_offset_commit_key,
    parse_offset_commit_value,
)
from protocol._schema import decoder
from protocol.codec import encode_value
from protocol.errors import CodecError
from protocol.records import OffsetCommitKey, OffsetCommitValue

from .strategies import message_values

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


KEY = h("00 01 00 01 67 00 02 74 31 00 00 00 07")  # type 1, group "g", topic "t1", partition 7
OFFSET_42 = "00 00 00 00 00 00 00 2a"
META_AB = "00 02 61 62"
COMMIT_TS = "00 00 01 8b cf e5 68 00"  # 1700000000000
EXPIRE_TS = "00 00 01 8b d5 0b c4 00"  # 1700086400000, a day later
TS = 1_700_000_000_000

# Fields per OffsetCommitValue.json: Offset; LeaderEpoch (3+); Metadata; CommitTimestamp; ExpireTimestamp (1 only).
VALUES = {
    0: h(f"00 00 {OFFSET_42} {META_AB} {COMMIT_TS}"),
    1: h(f"00 01 {OFFSET_42} {META_AB} {COMMIT_TS} {EXPIRE_TS}"),
    2: h(f"00 02 {OFFSET_42} {META_AB} {COMMIT_TS}"),
    3: h(f"00 03 {OFFSET_42} 00 00 00 05 {META_AB} {COMMIT_TS}"),
}


def test_key_vector():
    assert parse_offset_commit_key(KEY) == ("g", "t1", 7)
    assert decode_offset_commit_key(KEY) == OffsetCommitKey(group="g", topic="t1", partition=7)


def test_key_is_cached_by_its_bytes():
    first = decode_offset_commit_key(bytes(KEY))
    assert decode_offset_commit_key(bytes(KEY)) is first


@pytest.mark.parametrize(
    "key, field, match",
    [
        (h("00 01 00"), "OffsetCommitKey.group", "truncated string length"),
        (h("00 01 00 05 67"), "OffsetCommitKey.group", "string length 5 does not fit"),
        (h("00 01 ff ff 00 00"), "OffsetCommitKey.group", "string length -1"),
        (h("00 01 00 01 67 00 02 74 31 00 00"), "OffsetCommitKey.partition", "truncated partition"),
        (KEY + b"\x00", "OffsetCommitKey", "1 trailing bytes"),
        (h("00 01 00 01 ff 00 00 00 00 00 00"), "OffsetCommitKey.group", "invalid UTF-8"),
    ],
)
def test_malformed_keys_name_the_field(key, field, match):
    with pytest.raises(CodecError, match=match) as info:
        parse_offset_commit_key(key)
    assert info.value.field == field


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_value_vectors(version):
    value = decode_offset_commit_value(VALUES[version], version)
    assert (value.offset, value.metadata, value.commit_timestamp) == (42, "ab", TS)
    assert value.leader_epoch == (5 if version == 3 else -1)
    assert value.expire_timestamp == (TS + 86_400_000 if version == 1 else -1)
    assert encode_value(1, value, version) == VALUES[version]


def test_value_v4_is_flexible_with_topic_id_as_tag_0():
    """v4 (Kafka 4.1+) is flexible: compact metadata string, then tagged fields where tag 0 is the topic id."""
    topic_id = bytes(range(16))
    raw = h(f"00 04 {OFFSET_42} 00 00 00 05 03 61 62 {COMMIT_TS} 01 00 10") + topic_id
    value = decode_offset_commit_value(raw, 4)
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp) == (42, 5, "ab", TS)
    assert value.topic_id == topic_id
    with pytest.raises(CodecError, match="1 trailing bytes"):
        decode_offset_commit_value(raw + b"\x00", 4)


def test_parse_returns_the_plain_tuple():
    assert parse_offset_commit_value(VALUES[1], 1) == (42, -1, "ab", TS, TS + 86_400_000)
    assert parse_offset_commit_value(VALUES[3], 3) == (42, 5, "ab", TS, -1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_strict_prefix_of_a_value_raises(version):
    raw = VALUES[version]
    for cut in range(2, len(raw)):
        with pytest.raises(CodecError):
            decode_offset_commit_value(raw[:cut], version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_trailing_bytes_after_a_value_are_reported_where_they_start(version):
    with pytest.raises(CodecError, match="2 trailing bytes") as info:
        decode_offset_commit_value(VALUES[version] + b"\x00\x00", version)
    assert info.value.position == len(VALUES[version])


def test_value_errors_name_the_missing_field():
    with pytest.raises(CodecError) as info:
        decode_offset_commit_value(VALUES[1][:-3], 1)
    assert info.value.field == "OffsetCommitValue.commitTimestamp/expireTimestamp"
    with pytest.raises(CodecError) as info:
        decode_offset_commit_value(VALUES[3][:10], 3)
    assert info.value.field == "OffsetCommitValue.offset"
    bad_meta = h(f"00 00 {OFFSET_42} 00 01 ff {COMMIT_TS}")
    with pytest.raises(CodecError, match="invalid UTF-8") as info:
        decode_offset_commit_value(bad_meta, 0)
    assert (info.value.field, info.value.position) == ("OffsetCommitValue.metadata", 12)


def test_v1_and_v0_bytes_are_not_interchangeable():
    """v1 carries an extra int64; reading it as v0 leaves 8 bytes over, which must be an error, not a drop."""
    with pytest.raises(CodecError, match="8 trailing bytes"):
        decode_offset_commit_value(VALUES[1], 0)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fast_path_agrees_with_the_generic_engine_on_the_vectors(version):
    generic, end = decoder(OffsetCommitValue, version, False)(VALUES[version], 2)
    assert end == len(VALUES[version])
    assert decode_offset_commit_value(VALUES[version], version) == generic


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@SETTINGS
@given(data=st.data())
def test_offset_fast_path_equals_generic_engine(version, data):
    value = data.draw(message_values(OffsetCommitValue, version))
    raw = encode_value(1, value, version)
    generic, end = decoder(OffsetCommitValue, version, False)(raw, 2)
    assert end == len(raw)
    assert decode_offset_commit_value(raw, version) == generic == value


def test_huge_offsets_keep_their_sign():
    raw = h("00 00") + struct.pack(">q", -1) + h("00 00") + struct.pack(">q", 2**63 - 1)
    value = decode_offset_commit_value(raw, 0)
    assert (value.offset, value.metadata, value.commit_timestamp) == (-1, "", 2**63 - 1)
