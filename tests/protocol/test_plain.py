"""groupscope's own JSON form of records: snake_case dicts, enums by name, uuids as Kafka's text (the zero uuid as
null), bytes as base64, unknown records as hex, and every result plain enough for ``json.dumps``."""

from __future__ import annotations

import base64
import enum
import json

from protocol import UnknownRecord, Uuid, decode_record
from protocol import builders as b
from protocol.codec import encode_record
from protocol.plain import record_to_plain, to_plain
from protocol.records import MemberState, TopicIdPartitions

TS = 1_700_000_000_000
TID = Uuid(bytes(range(16)))


def test_scalars_pass_through_and_enums_become_names():
    assert [to_plain(v) for v in (None, True, 3, 1.5, "x")] == [None, True, 3, 1.5, "x"]
    assert to_plain(MemberState.UNREVOKED_PARTITIONS) == "UNREVOKED_PARTITIONS"

    class Colour(enum.Enum):
        RED = "r"

    assert to_plain(Colour.RED) == "RED"


def test_uuids_bytes_and_sequences():
    assert to_plain(TID) == "AAECAwQFBgcICQoLDA0ODw"
    assert to_plain(Uuid()) is None  # Kafka's "no topic id"
    assert to_plain(b"\x00\xff") == base64.b64encode(b"\x00\xff").decode() == "AP8="
    assert to_plain(memoryview(b"ab")) == "YWI="
    assert to_plain((1, (2, b"\x01"))) == [1, [2, "AQ=="]]


def test_dataclasses_become_snake_case_dicts():
    assert to_plain(TopicIdPartitions(topic_id=TID, partitions=(0, 2))) == {
        "topic_id": "AAECAwQFBgcICQoLDA0ODw", "partitions": [0, 2]}


def test_unknown_tags_are_left_out_when_empty_and_base64_when_present():
    key, value_bytes = encode_record(b.new_consumer_group_epoch("g", 1))
    assert "unknown_tags" not in to_plain(decode_record(key, value_bytes).value)
    # ConsumerGroupMetadataValue v0 (flexible): epoch 7, then a tag section of one field, tag 5, two bytes.
    raw = bytes.fromhex("0000" "00000007" "01" "05" "02" "abcd")
    value = decode_record(key, raw).value
    plain = to_plain(value)
    assert plain["epoch"] == 7 and plain["unknown_tags"] == [[5, base64.b64encode(b"\xab\xcd").decode()]]


def test_offset_commit_record():
    rec = b.new_offset_commit("g", "t", 3, 42, leader_epoch=5, commit_timestamp=TS)
    assert record_to_plain(rec) == {
        "type": "OFFSET_COMMIT", "type_id": 1, "version": 3, "tombstone": False,
        "key": {"group": "g", "topic": "t", "partition": 3},
        "value": {"offset": 42, "leader_epoch": 5, "metadata": "", "commit_timestamp": TS,
                  "expire_timestamp": -1, "topic_id": None},
    }


def test_tombstone_record():
    plain = record_to_plain(b.new_group_metadata_tombstone("g"))
    assert plain == {"type": "GROUP_METADATA", "type_id": 2, "version": -1, "tombstone": True,
                     "key": {"group": "g"}, "value": None}


def test_unknown_record_keeps_hex():
    rec = UnknownRecord(99, 0, b"\x00\x63\x00", b"\x00\x00\xff", "unknown record type 99")
    assert record_to_plain(rec) == {"type": 99, "unknown": True, "reason": "unknown record type 99", "version": 0,
                                    "group_id": None, "key_hex": "006300", "value_hex": "0000ff"}
    assert record_to_plain(UnknownRecord(99, -1, b"\x00\x63", None, "r"))["value_hex"] is None


def test_group_metadata_with_decoded_blobs_is_json_serializable():
    sub = b.new_consumer_subscription(["t"], owned_partitions={"t": [0]})
    member = b.new_classic_member("m", client_id="c", subscription=sub, assignment=b.new_consumer_assignment({"t": [0]}))
    rec = decode_record(*encode_record(b.new_group_metadata(
        "g", generation=1, protocol_type="consumer", protocol="range", leader="m", members=[member],
        current_state_timestamp=TS)))
    plain = record_to_plain(rec)
    json.dumps(plain)
    (m,) = plain["value"]["members"]
    assert m["subscription"] == base64.b64encode(sub).decode()
    assert m["decoded_subscription"]["topics"] == ["t"]
    assert m["decoded_assignment"]["assigned_partitions"] == [{"topic": "t", "partitions": [0]}]
