"""Kafka's JSON rendering of records, as ``kafka-dump-log.sh --offsets-decoder`` prints them: camelCase names from
the message schemas, only the fields of the record's version, tagged fields only when not default, bytes as
base64, and consumer-protocol blobs replaced by their decoded form exactly when Kafka's Java reader accepts them."""

from __future__ import annotations

import base64
import json

import pytest

from protocol import Uuid, kafka_key_json, kafka_payload_json
from protocol import builders as b
from protocol.kafka_json import DELETE, kafka_offset_commit_payload_text

TS = 1_700_000_000_000


def test_offset_commit_key_and_v3_payload():
    rec = b.new_offset_commit("g", "t", 3, 42, leader_epoch=5, commit_timestamp=TS)
    assert kafka_key_json(rec) == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 3}}
    assert kafka_payload_json(rec) == {
        "version": "3",
        "data": {"offset": 42, "leaderEpoch": 5, "metadata": "", "commitTimestamp": TS},
    }


def test_offset_commit_v1_has_expire_and_no_leader_epoch():
    rec = b.new_offset_commit("g", "t", 0, 1, commit_timestamp=TS, expire_timestamp=TS + 60_000)
    assert kafka_payload_json(rec)["data"] == {"offset": 1, "metadata": "", "commitTimestamp": TS,
                                               "expireTimestamp": TS + 60_000}


def test_offset_commit_v4_topic_id_is_printed_only_when_set():
    """topicId is tagged (tag 0) with the zero uuid as default: the converter leaves a default tag out."""
    with_id = b.new_offset_commit("g", "t", 0, 1, commit_timestamp=TS, broker_version=(4, 1),
                                  topic_id=Uuid(bytes(range(16))))
    assert kafka_payload_json(with_id)["data"]["topicId"] == "AAECAwQFBgcICQoLDA0ODw"
    without = b.new_offset_commit("g", "t", 0, 1, commit_timestamp=TS, broker_version=(4, 1))
    assert kafka_payload_json(without) == {"version": "4", "data": {"offset": 1, "leaderEpoch": -1, "metadata": "",
                                                                     "commitTimestamp": TS}}


def test_tombstone_payload_is_delete():
    assert kafka_payload_json(b.new_offset_commit_tombstone("g", "t", 0)) == DELETE == "<DELETE>"
    assert kafka_key_json(b.new_group_metadata_tombstone("g")) == {"type": "2", "data": {"group": "g"}}


def _group(protocol_type: str, subscription: bytes, assignment: bytes):
    member = b.new_classic_member("m", client_id="c", subscription=subscription, assignment=assignment)
    return b.new_group_metadata("g", generation=1, protocol_type=protocol_type, protocol="range", leader="m",
                                members=[member], current_state_timestamp=TS)


SUB_V0 = b.new_consumer_subscription(["t"], version=0)
ASG_V0 = b.new_consumer_assignment({"t": [0, 1]}, version=0)


def test_consumer_group_members_show_decoded_blobs():
    data = kafka_payload_json(_group("consumer", SUB_V0, ASG_V0))["data"]
    assert data["protocolType"] == "consumer" and data["currentStateTimestamp"] == TS
    (member,) = data["members"]
    assert member == {
        "memberId": "m", "groupInstanceId": None, "clientId": "c", "clientHost": "/127.0.0.1",
        "rebalanceTimeout": 300000, "sessionTimeout": 45000,
        "subscription": {"topics": ["t"], "userData": None},
        "assignment": {"assignedPartitions": [{"topic": "t", "partitions": [0, 1]}], "userData": None},
    }


def test_other_protocol_types_keep_base64_blobs():
    (member,) = kafka_payload_json(_group("connect", SUB_V0, ASG_V0))["data"]["members"]
    assert member["subscription"] == base64.b64encode(SUB_V0).decode()
    assert member["assignment"] == base64.b64encode(ASG_V0).decode()


def test_blobs_follow_the_java_readers_leniency():
    """The Java reader ignores trailing bytes (so such a blob is decoded) but knows only versions 0-3 (so a v4
    blob, or one too short for a version, stays base64)."""
    trailing = SUB_V0 + b"\x00\x00"
    v4 = b"\x00\x04" + ASG_V0[2:]
    (member,) = kafka_payload_json(_group("consumer", trailing, v4))["data"]["members"]
    assert member["subscription"] == {"topics": ["t"], "userData": None}
    assert member["assignment"] == base64.b64encode(v4).decode()
    (member,) = kafka_payload_json(_group("consumer", b"\x00", b""))["data"]["members"]
    assert member["subscription"] == "AA==" and member["assignment"] == ""


def test_version_gated_fields_of_group_metadata():
    """currentStateTimestamp is v2+, rebalanceTimeout v1+, groupInstanceId v3+ (GroupMetadataValue.json)."""
    rec = _group("consumer", SUB_V0, ASG_V0)
    v0 = type(rec)(rec.type, rec.key, rec.value, 0)
    data = kafka_payload_json(v0)
    assert data["version"] == "0" and "currentStateTimestamp" not in data["data"]
    assert set(data["data"]["members"][0]) == {"memberId", "clientId", "clientHost", "sessionTimeout",
                                               "subscription", "assignment"}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@pytest.mark.parametrize("metadata", ["", "plain", 'quote " and \\ backslash', "ünïcødé\n", "\u2028"])
def test_offset_commit_text_equals_the_generic_json(version, metadata):
    broker, expire = ((2, 0), TS + 5) if version == 1 else ((4, 0), None)
    rec = b.new_offset_commit("g", "t", 0, 2**40, leader_epoch=7, metadata=metadata, commit_timestamp=TS,
                              expire_timestamp=expire, broker_version=broker)
    rec = type(rec)(rec.type, rec.key, rec.value, version)
    value = rec.value
    text = kafka_offset_commit_payload_text(version, value.offset, value.leader_epoch, value.metadata,
                                            value.commit_timestamp, value.expire_timestamp)
    assert text == json.dumps(kafka_payload_json(rec), separators=(",", ":"), ensure_ascii=False)
    assert json.loads(text)["data"]["metadata"] == metadata


def test_offset_commit_text_has_no_layout_for_v4():
    with pytest.raises(ValueError, match="version 4"):
        kafka_offset_commit_payload_text(4, 0, -1, "", 0, -1)
