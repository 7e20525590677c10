"""The consumer protocol's subscription and assignment blobs (ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json in Kafka's clients), written here byte by byte: an int16 version, then the fields
that version has. The Java client's rules: versions above 3 read as v3 with their tail ignored, versions 0-3 read
exactly, and a zero-length assignment means the leader assigned nothing."""

from __future__ import annotations

import pytest

from protocol import (
    CodecError,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


TOPICS = "00 00 00 02 00 01 61 00 01 62"  # ["a", "b"]
NO_USER_DATA = "ff ff ff ff"
OWNED = "00 00 00 01 00 01 61 00 00 00 02 00 00 00 00 00 00 00 03"  # [a: 0, 3]

SUBSCRIPTIONS = {
    0: h(f"00 00 {TOPICS} {NO_USER_DATA}"),
    1: h(f"00 01 {TOPICS} {NO_USER_DATA} {OWNED}"),
    2: h(f"00 02 {TOPICS} {NO_USER_DATA} {OWNED} 00 00 00 05"),
    3: h(f"00 03 {TOPICS} {NO_USER_DATA} {OWNED} 00 00 00 05 00 02 72 31"),
}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_each_version_reads_only_its_fields(version):
    sub = decode_subscription(SUBSCRIPTIONS[version])
    assert sub.version == version and sub.topics == ("a", "b") and sub.user_data is None
    expected_owned = () if version < 1 else (TopicPartition(topic="a", partitions=(0, 3)),)
    assert sub.owned_partitions == expected_owned
    assert sub.generation_id == (5 if version >= 2 else -1)  # -1: the schema's default before v2
    assert sub.rack_id == ("r1" if version >= 3 else None)
    assert encode_subscription(sub) == SUBSCRIPTIONS[version]


def test_subscription_user_data_bytes():
    blob = h(f"00 00 {TOPICS} 00 00 00 03 01 02 03")
    sub = decode_subscription(blob)
    assert sub.user_data == b"\x01\x02\x03"
    assert encode_subscription(sub) == blob


def test_subscription_above_v3_reads_as_v3_and_ignores_the_tail():
    """Newer versions only append fields, so the Java reader takes the v3 prefix; the version is kept."""
    blob = h("00 04") + SUBSCRIPTIONS[3][2:] + h("de ad be ef")
    sub = decode_subscription(blob)
    assert sub.version == 4 and sub.rack_id == "r1" and sub.generation_id == 5


def test_subscription_v0_to_v3_must_be_read_to_the_end():
    with pytest.raises(CodecError, match="1 trailing bytes after a v2 subscription") as info:
        decode_subscription(SUBSCRIPTIONS[2] + b"\x00")
    assert info.value.position == len(SUBSCRIPTIONS[2])


@pytest.mark.parametrize("blob, match", [(b"", "0 bytes has no version"), (b"\x00", "1 bytes has no version"),
                                         (h("ff ff") + SUBSCRIPTIONS[0][2:], "version -1")])
def test_subscription_without_a_usable_version_is_an_error(blob, match):
    with pytest.raises(CodecError, match=match) as info:
        decode_subscription(blob)
    assert info.value.field == "ConsumerProtocolSubscription"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_strict_prefix_of_a_subscription_raises(version):
    blob = SUBSCRIPTIONS[version]
    for cut in range(len(blob)):
        with pytest.raises(CodecError):
            decode_subscription(blob[:cut])


def test_encode_subscription_at_another_version_drops_or_defaults_fields():
    sub = decode_subscription(SUBSCRIPTIONS[3])
    assert encode_subscription(sub, 0) == SUBSCRIPTIONS[0]
    assert encode_subscription(sub, 1) == SUBSCRIPTIONS[1]
    with pytest.raises(ValueError):
        encode_subscription(sub, 4)
    with pytest.raises(ValueError):
        encode_subscription(sub, -1)


# --- assignments --------------------------------------------------------------------------------------------------

ASSIGNMENT_V0 = h("00 00 00 00 00 02 00 01 61 00 00 00 01 00 00 00 01 00 01 62 00 00 00 00 ff ff ff ff")


def test_assignment_vector():
    asg = decode_assignment(ASSIGNMENT_V0)
    assert asg.version == 0
    assert asg.assigned_partitions == (TopicPartition(topic="a", partitions=(1,)), TopicPartition(topic="b", partitions=()))
    assert asg.user_data is None
    assert encode_assignment(asg) == ASSIGNMENT_V0


@pytest.mark.parametrize("version", [1, 2, 3])
def test_assignment_layout_is_the_same_from_v0_to_v3(version):
    """ConsumerProtocolAssignment.json adds no field after v0; only the version number differs."""
    blob = version.to_bytes(2, "big") + ASSIGNMENT_V0[2:]
    asg = decode_assignment(blob)
    assert asg.version == version and asg.assigned_partitions == decode_assignment(ASSIGNMENT_V0).assigned_partitions
    assert encode_assignment(asg) == blob


def test_zero_length_assignment_is_none_both_ways():
    assert decode_assignment(b"") is None
    assert encode_assignment(None) == b""


def test_assignment_trailing_bytes_and_future_versions():
    with pytest.raises(CodecError, match="trailing bytes after a v0 assignment"):
        decode_assignment(ASSIGNMENT_V0 + b"\x00")
    future = h("00 07") + ASSIGNMENT_V0[2:] + b"\x00\x01"
    assert decode_assignment(future).version == 7


def test_built_values_encode_like_the_vectors():
    sub = ConsumerProtocolSubscription(topics=("a", "b"), owned_partitions=(TopicPartition(topic="a", partitions=(0, 3)),),
                                       generation_id=5, rack_id="r1", version=3)
    assert encode_subscription(sub) == SUBSCRIPTIONS[3]
    asg = ConsumerProtocolAssignment(assigned_partitions=(TopicPartition(topic="a", partitions=(1,)),
                                                          TopicPartition(topic="b", partitions=())))
    assert encode_assignment(asg) == ASSIGNMENT_V0
