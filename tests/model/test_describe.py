"""``describe``: groups in the Admin API's field names and values (what kafka-consumer-groups.sh shows), built from
records replayed into a shard, and the text rendering laid out like that tool's tables."""

from __future__ import annotations

import pytest

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model.assignment import what_if_document
from streaming.model.describe import describe, describe_group, render_text, render_what_if
from streaming.model.shard import GroupCoordinatorShard

T0 = 1_800_000_000_000


def _shard() -> GroupCoordinatorShard:
    def member(mid: str, parts: list[int], instance: str | None = None):
        return b.new_classic_member(mid, client_id=f"client-{mid}", client_host=f"/10.0.0.{len(mid)}",
                                    group_instance_id=instance, subscription=b.new_consumer_subscription(["t"]),
                                    assignment=b.new_consumer_assignment({"t": parts}))

    records = [
        b.new_group_metadata("g", generation=4, protocol_type="consumer", protocol="range", leader="a",
                             members=[member("a", [0, 1], instance="inst-a"), member("bb", [2])],
                             current_state_timestamp=T0),
        b.new_offset_commit("g", "t", 0, 10, leader_epoch=5, metadata="m", commit_timestamp=T0),
        b.new_offset_commit("g", "t", 2, 30, commit_timestamp=T0),  # leader epoch -1: null in the Admin API
        b.new_empty_group_metadata("idle", generation=2, protocol_type="consumer", current_state_timestamp=T0),
        b.new_offset_commit("idle", "u", 0, 7, commit_timestamp=T0),
    ]
    shard = GroupCoordinatorShard(0)
    for offset, rec in enumerate(records):
        shard.replay(offset, T0, decode_record(*encode_record(rec)))
    return shard


def test_classic_group_in_admin_api_terms():
    g = describe_group(_shard(), "g", now_ms=T0)
    assert (g["group_id"], g["type"], g["state"], g["partition_assignor"]) == ("g", "CLASSIC", "STABLE", "range")
    assert (g["generation"], g["group_epoch"], g["leader"], g["protocol_type"]) == (4, None, "a", "consumer")
    a, bb = g["members"]
    assert (a["member_id"], a["client_id"], a["host"], a["group_instance_id"]) == ("a", "client-a", "/10.0.0.1",
                                                                                    "inst-a")
    assert a["assignment"] == [["t", 0], ["t", 1]] and a["target_assignment"] is None  # classic: no target
    assert bb["assignment"] == [["t", 2]] and bb["group_instance_id"] is None
    assert g["offsets"] == [
        {"topic": "t", "partition": 0, "offset": 10, "metadata": "m", "leader_epoch": 5},
        {"topic": "t", "partition": 2, "offset": 30, "metadata": "", "leader_epoch": None},
    ]
    assert g["status"] is None  # no end offsets known: nothing judged, not "OK"
    assert g["owners"] == {"t:0": "a", "t:2": "bb"}


def test_lag_from_given_end_offsets_is_never_negative():
    g = describe_group(_shard(), "g", end_offsets={("t", 0): 15, ("t", 2): 20}, now_ms=T0)
    assert g["lag"] == {"t:0": {"committed": 10, "log_end": 15, "lag": 5},
                        "t:2": {"committed": 30, "log_end": 20, "lag": 0}}


def test_describe_lists_every_group_sorted():
    doc = describe(_shard(), now_ms=T0)
    assert list(doc["groups"]) == ["g", "idle"]
    idle = doc["groups"]["idle"]
    assert (idle["state"], idle["members"], idle["leader"]) == ("EMPTY", [], None)


def test_describe_refuses_what_is_not_a_shard():
    with pytest.raises(TypeError):
        describe([object()])


def test_render_text_is_laid_out_like_kafka_consumer_groups():
    text = render_text(describe(_shard(), end_offsets={("t", 0): 15}, now_ms=T0))
    lines = text.splitlines()
    assert lines[0].split() == ["GROUP", "TYPE", "STATE", "ASSIGNOR", "GENERATION", "#MEMBERS", "REBALANCES",
                                "STATUS"]
    assert lines[1].split()[:6] == ["g", "CLASSIC", "STABLE", "range", "4", "2"]
    member_header = next(line for line in lines if "CONSUMER-ID" in line and "GROUP-INSTANCE-ID" in line)
    assert member_header.split()[:4] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST"]
    offset_row = next(line for line in lines if line.split()[:3] == ["g", "t", "0"])
    assert offset_row.split() == ["g", "t", "0", "10", "15", "5", "a", "/10.0.0.1", "client-a"]
    no_end = next(line for line in lines if line.split()[:3] == ["g", "t", "2"])
    assert no_end.split()[3:6] == ["30", "-", "-"]
    assert "Consumer group 'idle' has no active members." in lines


def test_render_what_if_lists_each_strategy_and_the_current_assignment():
    text = render_what_if(what_if_document(_shard(), "g"))
    assert text.splitlines()[0] == "What each assignor would give group g now: 2 members, t (3 partitions)"
    rows = [line.split() for line in text.splitlines()]
    assert ["(now)", "a", "t:0,1"] in rows
    # Range gives a (first in member order) partitions 0-1 and bb partition 2: what they hold, nothing moves.
    # Round robin deals 0 to a, 1 to bb, 2 to a: t-1 and t-2 change owner.
    assert ["range", "0", "3", "1", "yes"] in rows
    assert ["roundrobin", "2", "1", "1", "yes"] in rows
    assert ["roundrobin", "a", "t:0,2"] in rows
