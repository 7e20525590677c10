"""The codec's contract (protocol/codec.py), by property: encode→decode round-trips for every record type,
layout and version; arbitrary and truncated bytes only ever produce a record, an UnknownRecord or a CodecError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import CodecError, CoordinatorRecord, UnknownRecord, decode_record, encode_record
from protocol.codec import RECORD_SPECS, encode_key, encode_value

from .strategies import message_values

CASES = [
    (spec.type, layout, version)
    for spec in RECORD_SPECS.values()
    for layout in spec.layouts
    for version in range(spec.value_versions[0], spec.value_versions[1] + 1)
]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_type_is_covered():
    assert {int(t) for t, _, _ in CASES} == set(range(24))


@pytest.mark.parametrize("record_type, layout, version", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
@SETTINGS
@given(data=st.data())
def test_round_trip(record_type, layout, version, data):
    spec = RECORD_SPECS[record_type]
    key = data.draw(message_values(spec.key, 0))
    value = data.draw(message_values(layout, version))
    record = CoordinatorRecord(record_type, key, value, version)
    key_bytes, value_bytes = encode_record(record)
    decoded = decode_record(key_bytes, value_bytes)
    assert isinstance(decoded, CoordinatorRecord)
    assert decoded.key == key
    if layout is spec.layouts[0]:
        assert decoded.value == value
    else:
        # An early-access layout under the same version number can, rarely, also parse as the current layout;
        # either way the bytes must survive.
        assert decoded.value == value or type(decoded.value) is spec.layouts[0]
    assert encode_record(decoded) == (key_bytes, value_bytes)


def test_early_access_bytes_that_also_parse_as_the_current_layout_keep_their_layout():
    """Found by ``test_round_trip``: this 3.6/3.7 member value also reads to its end as the current layout (the
    assignor list's bytes fall into tagged fields there, one written at its default), which would write other
    bytes back. The layout that writes the same bytes back is the one they were written with."""
    from protocol.records import Assignor_3_7, ConsumerGroupMemberMetadataValue_3_7, GroupMemberKey

    value = ConsumerGroupMemberMetadataValue_3_7(
        instance_id=None, rack_id=None, client_id="", client_host="", subscribed_topic_names=(),
        subscribed_topic_regex=None, rebalance_timeout_ms=0, server_assignor=None,
        assignors=(Assignor_3_7(name='"0\x80\x80\x80\x80\U00010000\U00010000\U00010000\U00010000',
                                minimum_version=0, maximum_version=0, reason=0, version=0, metadata=b"\x00\x81"),))
    key_bytes, value_bytes = encode_record(CoordinatorRecord(5, GroupMemberKey(group_id="", member_id=""), value, 0))
    decoded = decode_record(key_bytes, value_bytes)
    assert decoded.value == value
    assert encode_record(decoded) == (key_bytes, value_bytes)


@pytest.mark.parametrize("record_type, layout, version", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_truncated_values_fail_cleanly(record_type, layout, version, data):
    spec = RECORD_SPECS[record_type]
    key = encode_key(record_type, data.draw(message_values(spec.key, 0)))
    raw = encode_value(record_type, data.draw(message_values(layout, version)), version)
    cut = data.draw(st.integers(0, len(raw) - 1))
    try:
        result = decode_record(key, raw[:cut])
    except CodecError as exc:
        assert exc.reason
        return
    # A strict prefix may still be a valid (shorter) encoding, e.g. of an early-access layout.
    assert isinstance(result, (CoordinatorRecord, UnknownRecord))


@settings(max_examples=400, deadline=None)
@given(key=st.one_of(st.none(), st.binary(max_size=40)), value=st.one_of(st.none(), st.binary(max_size=80)))
def test_arbitrary_bytes(key, value):
    try:
        result = decode_record(key, value)
    except CodecError:
        return
    assert isinstance(result, (CoordinatorRecord, UnknownRecord))


@settings(max_examples=300, deadline=None)
@given(
    record_type=st.integers(0, 23),
    key_body=st.binary(max_size=40),
    value=st.one_of(st.none(), st.binary(max_size=80)),
    version=st.integers(-2, 5),
)
def test_arbitrary_bodies_of_known_types(record_type, key_body, value, version):
    key = struct.pack(">h", record_type) + key_body
    if value is not None:
        value = struct.pack(">h", version) + value
    try:
        result = decode_record(key, value)
    except CodecError:
        return
    assert isinstance(result, (CoordinatorRecord, UnknownRecord))


def test_unknown_type_is_kept_raw():
    key = struct.pack(">h", 99) + b"\x00\x01g"
    result = decode_record(key, b"\x00\x00abc")
    assert isinstance(result, UnknownRecord)
    assert (result.type, result.version, result.key, result.value) == (99, 0, key, b"\x00\x00abc")
    assert encode_record(result) == (key, b"\x00\x00abc")


def test_unknown_value_version_is_kept_raw_with_group():
    from protocol.records import OffsetCommitKey

    key = encode_key(1, OffsetCommitKey(group="g", topic="t", partition=0))
    result = decode_record(key, b"\x00\x07whatever")
    assert isinstance(result, UnknownRecord) and result.version == 7
    assert result.group_id is not None and "version 7" in result.reason


@pytest.mark.parametrize(
    "key, value, field",
    [
        (None, b"\x00\x03", "key"),
        (b"\x00", None, "key"),
        (b"\x00\x01\x00\x05ab", None, "OffsetCommitKey.group"),
        (b"\x00\x02\x00\x01gX", None, "GroupMetadataKey"),
        (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", b"\x00\x03\x00", "OffsetCommitValue.offset"),
        (b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00\x00\x07\x05", "ConsumerGroupMetadataValue.<tagged fields>"),
    ],
)
def test_errors_name_field_and_position(key, value, field):
    with pytest.raises(CodecError) as info:
        decode_record(key, value)
    assert info.value.field is not None and info.value.field.startswith(field)
    assert str(info.value)


# --- examples of the contract, one rule each ------------------------------------------------------------------------


def test_spec_for_covers_exactly_the_24_types():
    from protocol.codec import spec_for
    from protocol.records import RecordType

    assert spec_for(-1) is None and spec_for(24) is None
    assert spec_for(1).type is RecordType.OFFSET_COMMIT
    assert RECORD_SPECS[RecordType.OFFSET_COMMIT].value_versions == (0, 4)
    assert RECORD_SPECS[RecordType.OFFSET_COMMIT].is_flexible(4) and not RECORD_SPECS[1].is_flexible(3)


@pytest.mark.parametrize(
    "key, value, field, position",
    [(None, None, "key", None), (b"\x00", None, "key", 0), (b"\x00\x02\x00\x01g", b"\x00", "value", 0),
     (b"\x00\x02\x00\x01g\x00", None, "GroupMetadataKey", 5)],
)
def test_framing_errors(key, value, field, position):
    with pytest.raises(CodecError) as info:
        decode_record(key, value)
    assert (info.value.field, info.value.position) == (field, position)


def test_encoders_refuse_what_does_not_belong_to_the_type():
    from protocol.records import GroupMetadataKey, OffsetCommitKey, OffsetCommitValue

    with pytest.raises(ValueError, match="not the key of record type 1"):
        encode_key(1, GroupMetadataKey(group="g"))
    with pytest.raises(ValueError, match="not a value of record type 2"):
        encode_value(2, OffsetCommitValue(offset=1, metadata="", commit_timestamp=0), 3)
    with pytest.raises(ValueError, match="no value version 5"):
        encode_value(1, OffsetCommitValue(offset=1, metadata="", commit_timestamp=0), 5)
    with pytest.raises(ValueError):
        encode_key(99, OffsetCommitKey(group="g", topic="t", partition=0))


def test_consumer_blobs_are_decoded_only_for_consumer_groups_and_never_fail_the_record():
    from protocol import builders as b

    good = b.new_consumer_subscription(["t"])
    members = [b.new_classic_member("a", client_id="c", subscription=good, assignment=b"\x00\x00\xff"),
               b.new_classic_member("b", client_id="c", subscription=b"\x00", assignment=b"")]
    for protocol_type, decoded in (("consumer", True), ("connect", False)):
        rec = b.new_group_metadata("g", generation=1, protocol_type=protocol_type, protocol="p", leader="a",
                                   members=members, current_state_timestamp=0)
        a, bb = decode_record(*encode_record(rec)).value.members
        assert (a.decoded_subscription is not None) == decoded
        assert a.decoded_assignment is None  # a truncated blob: left undecoded, the record still decodes
        assert bb.decoded_subscription is None and bb.decoded_assignment is None
        assert a.subscription == good  # the raw bytes always stay
