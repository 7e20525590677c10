"""The hand-built hex vectors (docs/kafka-formats.md#test-vectors) decode to the documented values and re-encode
byte for byte."""

from __future__ import annotations

import pytest

from protocol import (
    RecordType,
    Uuid,
    decode_assignment,
    decode_record,
    decode_subscription,
    encode_record,
)
from protocol.builders import new_consumer_assignment, new_consumer_subscription, new_group_metadata, new_classic_member
from protocol.builders import new_offset_commit


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


OFFSET_KEY = h("00 01 00 08 6d 79 2d 67 72 6f 75 70 00 06 6f 72 64 65 72 73 00 00 00 03")
OFFSET_V3 = h("00 03 00 00 00 00 00 00 00 2a 00 00 00 05 00 00 00 00 01 8b cf e5 68 00")
SUBSCRIPTION_V1 = h(
    "00 01 00 00 00 01 00 06 6f 72 64 65 72 73 ff ff ff ff 00 00 00 01 00 06 6f 72 64 65 72 73 00 00 00 01 00 00 00 00"
)
ASSIGNMENT_V1 = h("00 01 00 00 00 01 00 06 6f 72 64 65 72 73 00 00 00 02 00 00 00 00 00 00 00 01 ff ff ff ff")
GROUP_KEY = h("00 02 00 08 6d 79 2d 67 72 6f 75 70")
GROUP_V3 = (
    h(
        """00 03 00 08 63 6f 6e 73 75 6d 65 72 00 00 00 01 00 05 72 61 6e 67 65 00 08 6d 65 6d 62 65 72 2d
        31 00 00 01 8b cf e5 68 00 00 00 00 01 00 08 6d 65 6d 62 65 72 2d 31 ff ff 00 08 63 6c 69 65 6e
        74 2d 31 00 09 2f 31 30 2e 30 2e 30 2e 31 00 04 93 e0 00 00 af c8 00 00 00 26"""
    )
    + SUBSCRIPTION_V1
    + h("00 00 00 1e")
    + ASSIGNMENT_V1
)
EMPTY_GROUP_V3 = h("00 03 00 08 63 6f 6e 73 75 6d 65 72 00 00 00 02 ff ff ff ff 00 00 01 8b cf e5 68 00 00 00 00 00")
TS = 1700000000000
TOPIC_ID = Uuid(h("00112233445566778899aabbccddeeff"))


def test_8_1_offset_commit_v3():
    rec = decode_record(OFFSET_KEY, OFFSET_V3)
    assert rec.type == RecordType.OFFSET_COMMIT
    assert (rec.key.group, rec.key.topic, rec.key.partition) == ("my-group", "orders", 3)
    assert (rec.value.offset, rec.value.leader_epoch, rec.value.metadata, rec.value.commit_timestamp) == (42, 5, "", TS)
    assert rec.value.expire_timestamp == -1
    assert encode_record(rec) == (OFFSET_KEY, OFFSET_V3)
    built = new_offset_commit("my-group", "orders", 3, 42, leader_epoch=5, commit_timestamp=TS)
    assert encode_record(built) == (OFFSET_KEY, OFFSET_V3)


def test_8_1_tombstone():
    rec = decode_record(OFFSET_KEY, None)
    assert rec.is_tombstone and rec.value_version == -1
    assert encode_record(rec) == (OFFSET_KEY, None)


def test_8_2_blobs():
    sub = decode_subscription(SUBSCRIPTION_V1)
    assert sub.version == 1 and sub.topics == ("orders",) and sub.user_data is None
    assert [(tp.topic, tp.partitions) for tp in sub.owned_partitions] == [("orders", (0,))]
    asg = decode_assignment(ASSIGNMENT_V1)
    assert asg.version == 1 and [(tp.topic, tp.partitions) for tp in asg.assigned_partitions] == [("orders", (0, 1))]
    assert new_consumer_subscription(["orders"], owned_partitions={"orders": [0]}, version=1) == SUBSCRIPTION_V1
    assert new_consumer_assignment({"orders": [0, 1]}, version=1) == ASSIGNMENT_V1


def test_8_2_group_metadata_v3():
    assert len(GROUP_V3) == 162
    rec = decode_record(GROUP_KEY, GROUP_V3)
    value = rec.value
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == ("consumer", 1, "range", "member-1")
    assert value.current_state_timestamp == TS
    (member,) = value.members
    assert (member.member_id, member.group_instance_id, member.client_id, member.client_host) == (
        "member-1", None, "client-1", "/10.0.0.1")
    assert (member.rebalance_timeout, member.session_timeout) == (300000, 45000)
    assert member.decoded_subscription.topics == ("orders",)
    assert member.decoded_assignment.assigned_partitions[0].partitions == (0, 1)
    assert encode_record(rec) == (GROUP_KEY, GROUP_V3)
    built = new_group_metadata(
        "my-group", generation=1, protocol_type="consumer", protocol="range", leader="member-1",
        current_state_timestamp=TS,
        members=[new_classic_member("member-1", client_id="client-1", client_host="/10.0.0.1",
                                    subscription=SUBSCRIPTION_V1, assignment=ASSIGNMENT_V1)],
    )
    assert encode_record(built) == (GROUP_KEY, GROUP_V3)


def test_8_2_empty_group():
    rec = decode_record(GROUP_KEY, EMPTY_GROUP_V3)
    assert rec.value.generation == 2 and rec.value.members == () and rec.value.protocol is None
    assert encode_record(rec) == (GROUP_KEY, EMPTY_GROUP_V3)


def test_8_5_offset_commit_v4_with_topic_id():
    value = h("00 04 00 00 00 00 00 00 00 2a 00 00 00 05 01 00 00 01 8b cf e5 68 00 01 00 10") + bytes(TOPIC_ID)
    rec = decode_record(OFFSET_KEY, value)
    assert rec.value_version == 4 and rec.value.topic_id == TOPIC_ID
    assert str(rec.value.topic_id) == "ABEiM0RVZneImaq7zN3u_w"
    assert encode_record(rec) == (OFFSET_KEY, value)
    built = new_offset_commit("my-group", "orders", 3, 42, leader_epoch=5, commit_timestamp=TS, topic_id=TOPIC_ID,
                              broker_version=(4, 1))
    assert encode_record(built) == (OFFSET_KEY, value)
    no_id = h("00 04 00 00 00 00 00 00 00 2a 00 00 00 05 01 00 00 01 8b cf e5 68 00 00")
    assert decode_record(OFFSET_KEY, no_id).value.topic_id == Uuid()
    assert encode_record(decode_record(OFFSET_KEY, no_id))[1] == no_id


CURRENT_KEY = h("00 08 00 08 6d 79 2d 67 72 6f 75 70 00 08 6d 65 6d 62 65 72 2d 31")


@pytest.mark.parametrize(
    "value, epochs",
    [
        (h("00 00 00 00 00 05 00 00 00 04 00 02 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff "
           "03 00 00 00 00 00 00 00 01 00 01 00"), None),
        (h("00 00 00 00 00 05 00 00 00 04 00 02 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff "
           "03 00 00 00 00 00 00 00 01 01 00 09 03 00 00 00 05 00 00 00 05 01 00"), (5, 5)),
    ],
)
def test_8_5_current_member_assignment(value, epochs):
    rec = decode_record(CURRENT_KEY, value)
    assert rec.type == RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
    assert (rec.key.group_id, rec.key.member_id) == ("my-group", "member-1")
    v = rec.value
    assert (v.member_epoch, v.previous_member_epoch, v.state) == (5, 4, 0)
    (tp,) = v.assigned_partitions
    assert tp.topic_id == TOPIC_ID and tp.partitions == (0, 1) and tp.assignment_epochs == epochs
    assert v.partitions_pending_revocation == ()
    assert encode_record(rec) == (CURRENT_KEY, value)


@pytest.mark.parametrize(
    "value, expected_hash",
    [(h("00 00 00 00 00 07 01 00 08 01 02 03 04 05 06 07 08"), 0x0102030405060708), (h("00 00 00 00 00 07 00"), 0)],
)
def test_8_5_consumer_group_metadata(value, expected_hash):
    key = h("00 03 00 08 6d 79 2d 67 72 6f 75 70")
    rec = decode_record(key, value)
    assert rec.value.epoch == 7 and rec.value.metadata_hash == expected_hash
    assert encode_record(rec) == (key, value)


def test_8_5_classic_member_in_consumer_group():
    key = h("00 05 00 08 6d 79 2d 67 72 6f 75 70 00 08 6d 65 6d 62 65 72 2d 31")
    value = (
        h("""00 00 00 00 09 63 6c 69 65 6e 74 2d 31 0a 2f 31 30 2e 30 2e 30 2e 31 02 07 6f 72 64 65 72 73 00
             00 04 93 e0 00 01 00 35 01 00 00 af c8 02 06 72 61 6e 67 65 27""")
        + SUBSCRIPTION_V1
        + h("00 00")
    )
    assert len(value) == 93
    rec = decode_record(key, value)
    v = rec.value
    assert v.instance_id is None and v.client_id == "client-1" and v.subscribed_topic_names == ("orders",)
    assert v.rebalance_timeout_ms == 300000 and v.server_assignor is None
    classic = v.classic_member_metadata
    assert classic.session_timeout_ms == 45000
    assert [(p.name, p.metadata) for p in classic.supported_protocols] == [("range", SUBSCRIPTION_V1)]
    assert encode_record(rec) == (key, value)
