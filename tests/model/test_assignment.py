"""Assignment skew (partitions per member, overall and per topic), and the what-if of each classic assignor for a
group replayed into a shard from its records."""

from __future__ import annotations

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model.assignment import partitions_per_topic, skew, what_if, what_if_document
from streaming.model.shard import GroupCoordinatorShard

T0 = 1_800_000_000_000


def test_skew_overall_and_per_topic():
    assignment = {"a": [("t", 0), ("t", 1), ("u", 0)], "b": [("t", 2)], "c": []}
    subs = {"a": ["t", "u"], "b": ["t"], "c": ["t", "u"]}
    s = skew(assignment, subs)
    assert s.loads == (("a", 3), ("b", 1), ("c", 0))
    assert s.skew == 3
    # t: a 2, b 1, c 0 → 2; u: only a and c want it, a 1, c 0 → 1.
    assert s.topic_skew == (("t", 2), ("u", 1))


def test_skew_of_nothing_is_zero():
    assert skew({}, {}).skew == 0
    assert skew({"a": []}, {"a": ["t"]}).topic_skew == (("t", 0),)


def _shard_with_uneven_group() -> GroupCoordinatorShard:
    """A classic group of two members subscribed to t (4 partitions) where a holds three and b one."""
    def member(mid: str, parts: list[int]):
        return b.new_classic_member(mid, client_id=mid, subscription=b.new_consumer_subscription(["t"]),
                                    assignment=b.new_consumer_assignment({"t": parts}))

    shard = GroupCoordinatorShard(0)
    rec = b.new_group_metadata("g", generation=1, protocol_type="consumer", protocol="range", leader="a",
                               members=[member("a", [0, 1, 2]), member("b", [3])], current_state_timestamp=T0)
    shard.replay(0, T0, decode_record(*encode_record(rec)))
    return shard


def test_partitions_per_topic_from_assignments():
    assert partitions_per_topic(_shard_with_uneven_group(), "g") == {"t": 4}


def test_what_if_range_balances_and_counts_movement():
    """Kafka's range assignor gives each of two members two of four partitions in member order: a gets 0-1 and b
    2-3, so t-2 moves from a to b and the other three stay."""
    (r,) = what_if(_shard_with_uneven_group(), "g", strategies=["range"])
    assert r.strategy == "range" and r.is_balanced and r.skew == 0
    assert dict(r.assignment) == {"a": (("t", 0), ("t", 1)), "b": (("t", 2), ("t", 3))}
    assert (r.moved, r.stayed) == (1, 3)


def test_what_if_document_takes_counts_from_given_end_offsets():
    doc = what_if_document(_shard_with_uneven_group(), "g", end_offsets={("t", 5): 10})
    assert doc["partitions"] == {"t": 6}
    assert [m["member_id"] for m in doc["members"]] == ["a", "b"]
    by_name = {s["strategy"]: s for s in doc["strategies"]}
    assert sum(len(v) for v in by_name["range"]["assignment"].values()) == 6
