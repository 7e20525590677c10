"""The record types and their classes: type ids as Kafka numbers them (CoordinatorRecordType), member-state codes
with unknown values folded to UNKNOWN, frozen values, and the group a record belongs to."""

from __future__ import annotations

import dataclasses

import pytest

from protocol import CoordinatorRecord, MemberState, RecordType, StreamsMemberState
from protocol import builders as b
from protocol.codec import RECORD_SPECS
from protocol.records import GroupMemberKey, OffsetCommitValue


def test_record_type_ids_are_kafkas():
    assert len(RecordType) == 24 and [int(t) for t in RecordType] == list(range(24))
    assert (RecordType.OFFSET_COMMIT, RecordType.GROUP_METADATA, RecordType.CONSUMER_GROUP_METADATA) == (1, 2, 3)
    assert RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT == 8
    assert RecordType.SHARE_GROUP_METADATA == 11
    assert RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION == 16
    assert RecordType.STREAMS_GROUP_TOPOLOGY == 23


def test_every_record_type_has_a_spec():
    assert set(RECORD_SPECS) == set(RecordType)


@pytest.mark.parametrize(
    "enum_cls, value, expected",
    [
        (MemberState, 0, MemberState.STABLE),
        (MemberState, 1, MemberState.UNREVOKED_PARTITIONS),
        (MemberState, 2, MemberState.UNRELEASED_PARTITIONS),
        (MemberState, 3, MemberState.UNKNOWN),
        (MemberState, -1, MemberState.UNKNOWN),
        # Streams members count from 1: the same byte means another state than in a consumer group.
        (StreamsMemberState, 0, StreamsMemberState.UNKNOWN),
        (StreamsMemberState, 1, StreamsMemberState.STABLE),
        (StreamsMemberState, 2, StreamsMemberState.UNREVOKED_TASKS),
        (StreamsMemberState, 3, StreamsMemberState.UNRELEASED_TASKS),
        (StreamsMemberState, 99, StreamsMemberState.UNKNOWN),
    ],
)
def test_member_state_parse(enum_cls, value, expected):
    assert enum_cls.parse(value) is expected


def test_values_are_frozen():
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.offset = 2  # type: ignore[misc]
    rec = b.new_offset_commit("g", "t", 0, 1, commit_timestamp=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.value = None  # type: ignore[misc]


def test_schema_defaults_are_kafkas():
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=0)
    assert (value.leader_epoch, value.expire_timestamp) == (-1, -1)
    assert bytes(value.topic_id) == bytes(16)


def test_group_id_of_each_key_shape():
    assert b.new_offset_commit("g1", "t", 0, 1, commit_timestamp=0).group_id == "g1"
    assert b.new_group_metadata_tombstone("g2").group_id == "g2"
    assert b.new_consumer_group_epoch("g3", 1).group_id == "g3"
    rec = CoordinatorRecord(RecordType.CONSUMER_GROUP_MEMBER_METADATA, GroupMemberKey(group_id="g4", member_id="m"),
                            None, -1)
    assert rec.group_id == "g4" and rec.is_tombstone
