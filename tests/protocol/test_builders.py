"""The record constructors: the value version a broker of each release would write, Kafka's defaults, tombstone
shapes, the Java client's sorting of blob contents, and that every built record survives the codec unchanged."""

from __future__ import annotations

import pytest

from protocol import builders as b
from protocol import (
    CoordinatorRecord,
    MemberState,
    RecordType,
    Uuid,
    decode_assignment,
    decode_record,
    decode_subscription,
    encode_record,
)

TS = 1_700_000_000_000
TID = Uuid(bytes(range(16)))
TID2 = Uuid(bytes(range(16, 32)))


@pytest.mark.parametrize(
    "broker, expire, version",
    [
        ((0, 9), None, 1),  # 0.9-2.0: always v1, which carries an expire timestamp
        ((2, 0), None, 1),
        ((2, 1), None, 3),  # KIP-211 (2.1): no per-commit expiry; v3 adds the leader epoch
        ((4, 0), None, 3),
        ((4, 1), None, 4),  # 4.1+: flexible v4 with the topic id as a tagged field
        ((4, 0), TS + 1, 1),  # an explicit retention still needs v1's field
        ((4, 1), TS + 1, 1),
    ],
)
def test_offset_commit_version_follows_the_broker(broker, expire, version):
    rec = b.new_offset_commit("g", "t", 0, 10, commit_timestamp=TS, expire_timestamp=expire, broker_version=broker,
                              topic_id=TID)
    assert rec.type == RecordType.OFFSET_COMMIT and rec.value_version == version
    assert rec.value.expire_timestamp == (-1 if version != 1 else (TS if expire is None else expire))
    # Only v4 has a topic id field: elsewhere it stays the zero uuid (it would not be written).
    assert rec.value.topic_id == (TID if version == 4 else Uuid())
    assert decode_record(*encode_record(rec)) == rec


def test_offset_commit_defaults_are_kafkas():
    rec = b.new_offset_commit("g", "t", 3, 42, commit_timestamp=TS)
    assert (rec.value.leader_epoch, rec.value.metadata) == (-1, "")
    assert (rec.key.group, rec.key.topic, rec.key.partition) == ("g", "t", 3)


def test_tombstones_have_no_value_and_version_minus_one():
    cases = [
        (b.new_offset_commit_tombstone("g", "t", 0), RecordType.OFFSET_COMMIT),
        (b.new_group_metadata_tombstone("g"), RecordType.GROUP_METADATA),
        (b.new_consumer_group_epoch_tombstone("g"), RecordType.CONSUMER_GROUP_METADATA),
        (b.new_consumer_group_partition_metadata_tombstone("g"), RecordType.CONSUMER_GROUP_PARTITION_METADATA),
        (b.new_consumer_group_member_tombstone("g", "m"), RecordType.CONSUMER_GROUP_MEMBER_METADATA),
        (b.new_target_assignment_epoch_tombstone("g"), RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA),
        (b.new_target_assignment_member_tombstone("g", "m"), RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER),
        (b.new_current_assignment_tombstone("g", "m"), RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT),
        (b.new_regular_expression_tombstone("g", "t.*"), RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION),
    ]
    for rec, record_type in cases:
        assert (rec.type, rec.value, rec.value_version, rec.is_tombstone) == (record_type, None, -1, True)
        assert rec.group_id == "g"
        key, value = encode_record(rec)
        assert value is None and key[:2] == int(record_type).to_bytes(2, "big")
        assert decode_record(key, None) == rec


def test_subscription_blob_sorts_topics_and_owned_partitions_like_the_java_client():
    blob = b.new_consumer_subscription(["b", "a"], owned_partitions={"z": [2, 0], "y": [1]}, generation_id=4,
                                       rack_id="r")
    sub = decode_subscription(blob)
    assert sub.version == 3 and sub.topics == ("a", "b")
    assert [(tp.topic, tp.partitions) for tp in sub.owned_partitions] == [("y", (1,)), ("z", (0, 2))]
    assert (sub.generation_id, sub.rack_id) == (4, "r")


def test_assignment_blob_keeps_the_given_order():
    """The assignor decides the order of an assignment; only subscriptions are sorted by the client."""
    asg = decode_assignment(b.new_consumer_assignment({"b": [3, 1], "a": [0]}, version=0))
    assert [(tp.topic, tp.partitions) for tp in asg.assigned_partitions] == [("b", (3, 1)), ("a", (0,))]


def test_group_metadata_round_trips_with_decoded_blobs():
    sub = b.new_consumer_subscription(["t"])
    asg = b.new_consumer_assignment({"t": [0]})
    member = b.new_classic_member("m-1", client_id="c", subscription=sub, assignment=asg)
    rec = b.new_group_metadata("g", generation=3, protocol_type="consumer", protocol="range", leader="m-1",
                               members=[member], current_state_timestamp=TS)
    assert rec.value_version == 3
    assert (member.session_timeout, member.rebalance_timeout, member.client_host) == (45000, 300000, "/127.0.0.1")
    decoded = decode_record(*encode_record(rec))
    assert decoded == rec
    assert decoded.value.members[0].decoded_subscription.topics == ("t",)


def test_empty_group_metadata_has_no_protocol_leader_or_members():
    rec = b.new_empty_group_metadata("g", generation=9, protocol_type="consumer", current_state_timestamp=TS)
    assert (rec.value.protocol, rec.value.leader, rec.value.members, rec.value.generation) == (None, None, (), 9)
    assert decode_record(*encode_record(rec)) == rec


def test_kip848_records_are_version_0_and_round_trip():
    records = [
        b.new_consumer_group_epoch("g", 5, metadata_hash=7),
        b.new_consumer_group_partition_metadata("g", [(TID, "t", 3)]),
        b.new_consumer_group_member("g", "m", client_id="c", subscribed_topic_names=["b", "a"]),
        b.new_target_assignment_epoch("g", 5, assignment_timestamp=TS),
        b.new_target_assignment_member("g", "m", {TID: [0, 1]}),
        b.new_current_assignment("g", "m", member_epoch=5, previous_member_epoch=4, assigned={TID: [0, 1]},
                                 pending_revocation={TID2: [2]}, assignment_epochs={TID: [5, 3]}),
        b.new_regular_expression("g", "t.*", topics=["t2", "t1"], version=1, timestamp=TS),
    ]
    for rec in records:
        assert isinstance(rec, CoordinatorRecord) and rec.value_version == 0 and rec.group_id == "g"
        assert decode_record(*encode_record(rec)) == rec
    member, current, regex = records[2].value, records[5].value, records[6].value
    assert member.subscribed_topic_names == ("a", "b")
    assert regex.topics == ("t1", "t2")
    assert current.state == int(MemberState.STABLE)
    assert current.assigned_partitions[0].assignment_epochs == (5, 3)
    assert current.partitions_pending_revocation[0].assignment_epochs is None  # only assigned partitions carry them


def test_current_assignment_without_epochs_is_what_pre_4_3_brokers_write():
    rec = b.new_current_assignment("g", "m", member_epoch=2, previous_member_epoch=1, assigned={TID: [0]})
    assert rec.value.assigned_partitions[0].assignment_epochs is None
    _, value = encode_record(rec)
    # Flexible v0: version, MemberEpoch, PreviousMemberEpoch, State (int8); AssignedPartitions as a compact array
    # (count + 1) of {TopicId, compact Partitions, no tags}; an empty PartitionsPendingRevocation; no tags.
    expected = (bytes.fromhex("0000" "00000002" "00000001" "00" "02") + bytes(TID)
                + bytes.fromhex("02" "00000000" "00" "01" "00"))
    assert value == expected
