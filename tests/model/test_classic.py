"""A classic group replayed record by record, as Kafka's loader rebuilds it from GroupMetadataValue: each value
replaces the group, members present means Stable and none Empty, a tombstone ends it; and the events each step
implies (joins, leaves, one Rebalance per new generation, static member replacement)."""

from __future__ import annotations

import pytest

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.classic import ClassicGroup
from streaming.model.states import ClassicGroupState as S
from streaming.model.states import InvalidTransition
from streaming.model.verdicts import RebalanceJudge

T0 = 1_800_000_000_000
C = ev.RebalanceCause


def member(mid: str, parts: list[int], *, instance: str | None = None, topics=("t",), rebalance_timeout=300_000,
           assignment: bytes | None = None):
    return b.new_classic_member(mid, client_id=f"c-{mid}", group_instance_id=instance, session_timeout=10_000,
                                rebalance_timeout=rebalance_timeout, subscription=b.new_consumer_subscription(topics),
                                assignment=b.new_consumer_assignment({"t": parts}) if assignment is None
                                else assignment)


def value(generation: int, members, *, protocol_type: str = "consumer", leader: str | None = None, version: int = 3):
    rec = b.new_group_metadata("g", generation=generation, protocol_type=protocol_type,
                               protocol="range" if members else None,
                               leader=leader or (members[0].member_id if members else None), members=members,
                               current_state_timestamp=T0, version=version)
    return decode_record(*encode_record(rec)).value  # decoded, so the consumer blobs are filled in


class Replayer:
    def __init__(self) -> None:
        self.group = ClassicGroup("g")
        self.judge = RebalanceJudge()
        self.offset = 0

    def __call__(self, v, ts: int = T0) -> list[ev.Event]:
        out: list[ev.Event] = []
        self.group.replay(v, self.offset, ts, self.judge, out)
        self.offset += 1
        return out


def kinds(events) -> list[str]:
    return [e.kind for e in events]


def test_first_value_makes_a_stable_group_without_a_rebalance():
    r = Replayer()
    out = r(value(1, [member("a", [0, 1]), member("b", [2])]))
    assert r.group.state is S.STABLE and r.group.generation == 1 and r.group.leader == "a"
    assert kinds(out) == ["MemberJoined", "MemberJoined"]  # the generation was not seen starting
    assert r.group.rebalances == 0
    assert r.group.assignments() == {"a": (("t", 0), ("t", 1)), "b": (("t", 2),)}
    assert r.group.subscribed_topics() == {"t"} and r.group.assignment_known and not r.group.is_simple


def test_a_new_generation_is_one_rebalance_with_causes_and_movement():
    r = Replayer()
    r(value(1, [member("a", [0, 1, 2])]))
    out = r(value(2, [member("a", [0, 1]), member("b", [2])]), ts=T0 + 4_000)
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]
    assert (rebalance.generation, rebalance.previous_generation) == (2, 1)
    assert rebalance.causes == (C.MEMBER_JOINED,) and rebalance.joined == ("b",)
    assert (rebalance.members_before, rebalance.members_after) == (1, 2)
    assert (rebalance.partitions_moved, rebalance.partitions_stayed) == (1, 2)  # t-2 went from a to b
    assert rebalance.seconds_since_previous == 4.0
    assert r.group.rebalances == 1 and r.group.last_rebalance_ts == T0 + 4_000


def test_all_members_gone_empties_the_group():
    r = Replayer()
    r(value(1, [member("a", [0])]))
    out = r(value(2, []))
    assert r.group.state is S.EMPTY
    assert kinds(out)[:2] == ["GroupStateChanged", "MemberLeft"]
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]
    assert rebalance.causes == (C.MEMBER_LEFT, C.GROUP_EMPTIED)


def test_a_static_member_replaced_within_the_generation():
    """KIP-345: a static member that restarts takes its instance's place without a new generation."""
    r = Replayer()
    r(value(3, [member("a-1", [0], instance="i-a")]))
    out = r(value(3, [member("a-2", [0], instance="i-a")]))
    replaced = [e for e in out if isinstance(e, ev.StaticMemberReplaced)]
    assert len(replaced) == 1 and not [e for e in out if isinstance(e, ev.Rebalance)]
    assert r.group.rebalances == 0


def test_a_follow_up_that_only_hands_out_revoked_partitions_is_cooperative():
    r = Replayer()
    r(value(1, [member("a", [0, 1]), member("b", [])]))
    out = r(value(2, [member("a", [0]), member("b", [])]))  # the first cooperative round revokes t-1
    out = r(value(3, [member("a", [0]), member("b", [1])]))
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]
    assert rebalance.causes == (C.COOPERATIVE_FOLLOW_UP,)


def test_a_v0_value_takes_the_session_timeout_as_rebalance_timeout():
    r = Replayer()
    r(value(1, [member("a", [0], rebalance_timeout=-1)], version=0))
    (snap,) = r.group.member_snapshots({})
    assert (snap.session_timeout_ms, snap.rebalance_timeout_ms) == (10_000, 10_000)


def test_other_protocols_keep_their_assignments_opaque():
    r = Replayer()
    r(value(1, [member("w", [0])], protocol_type="connect"))
    assert r.group.members["w"].assignment is None and not r.group.assignment_known
    assert r.group.subscribed_topics() is None


def test_an_empty_assignment_blob_is_an_empty_assignment():
    r = Replayer()
    r(value(1, [member("a", [0]), member("b", [], assignment=b"")]))
    assert r.group.members["b"].assignment == () and r.group.assignment_known


def test_tombstone_ends_the_group_and_a_repeated_one_keeps_it_dead():
    r = Replayer()
    r(value(1, [member("a", [0])]))
    assert r(None) == [] and r.group.state is S.DEAD
    assert r(None) == [] and r.group.state is S.DEAD


def test_states_kafka_keeps_in_memory_only_have_no_edge_from_the_log():
    """PreparingRebalance and CompletingRebalance are never written; a group found in one is a model error."""
    group = ClassicGroup("g", state=S.PREPARING_REBALANCE)
    with pytest.raises(InvalidTransition):
        group.replay(None, 0, T0, RebalanceJudge(), [])


def test_a_group_of_offset_commits_only_is_simple():
    group = ClassicGroup("g")
    assert group.is_simple and group.state_name == "EMPTY" and group.preferred_assignor("uniform") == ""


def test_state_round_trip():
    r = Replayer()
    r(value(1, [member("a", [0, 1], instance="i-a")]))
    r(value(2, [member("a", [0]), member("b", [1])]))
    back = ClassicGroup.from_state(r.group.to_state())
    assert back == r.group
