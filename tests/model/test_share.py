"""A KIP-932 share group rebuilt from records 10-14 through the shard: Stable with members and Empty without,
every epoch after the first a Rebalance, members that share partitions (no exclusive owner), and Kafka's order of
member tombstones enforced."""

from __future__ import annotations

from protocol import CoordinatorRecord, RecordType, Uuid
from protocol.records import (
    GroupKey,
    GroupMemberKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataValue,
    TopicIdPartitions,
)
from streaming.model import events as ev
from tests.model.synthetic_shard import ShardLog
from streaming.model.share import ShareGroup

T0 = 1_800_000_000_000
TID = Uuid(bytes(range(16)))
T = RecordType


def member(mid: str, value=True) -> CoordinatorRecord:
    v = ShareGroupMemberMetadataValue(client_id=f"c-{mid}", client_host="/h", subscribed_topic_names=("t",)) \
        if value else None
    return CoordinatorRecord(T.SHARE_GROUP_MEMBER_METADATA, GroupMemberKey(group_id="s", member_id=mid), v,
                             0 if value else -1)


def epoch(n: int) -> CoordinatorRecord:
    return CoordinatorRecord(T.SHARE_GROUP_METADATA, GroupKey(group_id="s"),
                             ShareGroupMetadataValue(epoch=n, metadata_hash=0), 0)


def target(mid: str, parts: list[int] | None) -> CoordinatorRecord:
    v = None if parts is None else ShareGroupTargetAssignmentMemberValue(
        topic_partitions=(TopicIdPartitions(topic_id=TID, partitions=tuple(parts)),))
    return CoordinatorRecord(T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, GroupMemberKey(group_id="s", member_id=mid), v,
                             -1 if v is None else 0)


def target_epoch(n: int) -> CoordinatorRecord:
    return CoordinatorRecord(T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey(group_id="s"),
                             ShareGroupTargetAssignmentMetadataValue(assignment_epoch=n), 0)


def current(mid: str, n: int, parts: list[int] | None) -> CoordinatorRecord:
    v = None if parts is None else ShareGroupCurrentMemberAssignmentValue(
        member_epoch=n, previous_member_epoch=n - 1, state=0,
        assigned_partitions=(TopicIdPartitions(topic_id=TID, partitions=tuple(parts)),))
    return CoordinatorRecord(T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, GroupMemberKey(group_id="s", member_id=mid), v,
                             -1 if v is None else 0)


def two_members(log: Log) -> list[ev.Event]:
    return log.add(member("a"), member("b"), epoch(1), target("a", [0, 1]), target("b", [0, 1]), target_epoch(1),
                   current("a", 1, [0, 1]), current("b", 1, [0, 1]))


def test_members_make_it_stable_and_share_their_partitions():
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    out = two_members(log)
    assert log.group.state_name == "STABLE"
    assert [e.member_id for e in out if isinstance(e, ev.MemberJoined)] == ["a", "b"]
    assert not log.group.exclusive_owners
    snaps = {m.member_id: m for m in log.group.member_snapshots(log.shard.topic_names)}
    assert snaps["a"].assignment == snaps["b"].assignment == (("t", 0), ("t", 1))
    assert snaps["a"].target_assignment == (("t", 0), ("t", 1)) and snaps["a"].state == "STABLE"
    assert log.group.subscriptions() == {"a": ("t",), "b": ("t",)}


def test_every_epoch_after_the_first_is_a_rebalance_of_unknown_cause():
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    two_members(log)
    out = log.add(epoch(2))
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]
    assert (rebalance.group_type.name, rebalance.generation, rebalance.previous_generation) == ("SHARE", 2, 1)
    assert rebalance.causes == (ev.RebalanceCause.UNKNOWN,) and rebalance.partitions_moved is None
    assert log.add(epoch(2)) == []  # the same epoch again is no rebalance
    assert log.group.rebalances == 1


def test_a_member_leaves_in_kafkas_order_and_the_group_empties():
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    log.add(member("a"), epoch(1), target("a", [0]), target_epoch(1), current("a", 1, [0]))
    out = log.add(current("a", 1, None), target("a", None), member("a", value=False))
    assert [e.kind for e in out] == ["MemberLeft", "GroupStateChanged"]
    assert log.group.state_name == "EMPTY" and not log.group.members


def test_a_member_tombstone_before_its_current_assignment_tombstone_is_an_anomaly():
    """Kafka writes the current-assignment tombstone first; the other order is refused, not applied."""
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    log.add(member("a"), epoch(1), target("a", [0]), target_epoch(1), current("a", 1, [0]))
    out = log.add(member("a", value=False))
    assert [e.kind for e in out] == ["Anomaly"] and "a" in log.group.members


def test_a_member_still_in_the_target_cannot_be_removed():
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    log.add(member("a"), epoch(1), target("a", [0]), target_epoch(1), current("a", 1, [0]))
    out = log.add(current("a", 1, None), member("a", value=False))
    (anomaly,) = out
    assert anomaly.kind == "Anomaly" and "still in the target" in anomaly.reason


def test_state_round_trip():
    log = ShardLog("s", topic_names={bytes(TID): "t"}, t0=T0)
    two_members(log)
    assert ShareGroup.from_state(log.group.to_state()) == log.group
