"""A KIP-1071 streams group rebuilt from records 17-23 through the shard: NotReady until its topology is known,
members' tasks turned into the topic partitions their subtopologies read, and streams' own member-state codes
(STABLE is 1 here, 0 in consumer groups)."""

from __future__ import annotations

from protocol import CoordinatorRecord, RecordType
from protocol.records import (
    EpochedTaskIds,
    GroupKey,
    GroupMemberKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyValue,
    StreamsTopicInfo,
    Subtopology,
    TaskIds,
)
from tests.model.synthetic_shard import ShardLog
from streaming.model.streams import StreamsGroup

T0 = 1_800_000_000_000
T = RecordType
GROUP = GroupKey(group_id="app")


def key(mid: str) -> GroupMemberKey:
    return GroupMemberKey(group_id="app", member_id=mid)


def member(mid: str, instance: str | None = None) -> CoordinatorRecord:
    return CoordinatorRecord(T.STREAMS_GROUP_MEMBER_METADATA, key(mid), StreamsGroupMemberMetadataValue(
        instance_id=instance, client_id=f"c-{mid}", client_host="/h", topology_epoch=1, process_id="p"), 0)


def topology() -> CoordinatorRecord:
    """Subtopology 0 reads "orders"; subtopology 1 reads "clicks" and the repartition topic "app-rep"."""
    rep = StreamsTopicInfo(name="app-rep", partitions=4, replication_factor=3)
    subs = (Subtopology(subtopology_id="0", source_topics=("orders",)),
            Subtopology(subtopology_id="1", source_topics=("clicks",), repartition_source_topics=(rep,)))
    return CoordinatorRecord(T.STREAMS_GROUP_TOPOLOGY, GROUP, StreamsGroupTopologyValue(epoch=1, subtopologies=subs),
                             0)


def epoch(n: int) -> CoordinatorRecord:
    return CoordinatorRecord(T.STREAMS_GROUP_METADATA, GROUP, StreamsGroupMetadataValue(epoch=n, metadata_hash=0), 0)


def target(mid: str, tasks: dict[str, list[int]]) -> CoordinatorRecord:
    value = StreamsGroupTargetAssignmentMemberValue(
        active_tasks=tuple(TaskIds(subtopology_id=s, partitions=tuple(p)) for s, p in tasks.items()))
    return CoordinatorRecord(T.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, key(mid), value, 0)


def target_epoch(n: int) -> CoordinatorRecord:
    return CoordinatorRecord(T.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, GROUP,
                             StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=n), 0)


def current(mid: str, n: int, tasks: dict[str, list[int]], state: int = 1) -> CoordinatorRecord:
    value = StreamsGroupCurrentMemberAssignmentValue(
        member_epoch=n, previous_member_epoch=n - 1, state=state,
        active_tasks=tuple(EpochedTaskIds(subtopology_id=s, partitions=tuple(p)) for s, p in tasks.items()))
    return CoordinatorRecord(T.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, key(mid), value, 0)


def test_not_ready_until_the_topology_is_known_then_the_usual_states():
    log = ShardLog("app", t0=T0)
    log.add(member("a"), epoch(1))
    assert log.group.state_name == "NOT_READY"
    log.add(topology())
    assert log.group.state_name == "ASSIGNING"  # epoch 1, target still at 0
    log.add(target("a", {"0": [0, 1]}), target_epoch(1))
    assert log.group.state_name == "RECONCILING"
    log.add(current("a", 1, {"0": [0, 1]}))
    assert log.group.state_name == "STABLE"


def test_streams_stable_is_code_1_so_code_0_keeps_it_reconciling():
    log = ShardLog("app", t0=T0)
    log.add(member("a"), topology(), epoch(1), target("a", {"0": [0]}), target_epoch(1), current("a", 1, {"0": [0]},
                                                                                                 state=0))
    assert log.group.state_name == "RECONCILING"
    (snap,) = log.group.member_snapshots({})
    assert snap.state == "UNKNOWN"  # 0 is no StreamsMemberState


def test_tasks_become_the_topic_partitions_their_subtopologies_read():
    log = ShardLog("app", t0=T0)
    log.add(member("a", instance="i-a"), topology(), epoch(1), target("a", {"0": [2], "1": [0, 3]}), target_epoch(1),
            current("a", 1, {"0": [2], "1": [0]}))
    (snap,) = log.group.member_snapshots({})
    assert snap.active_tasks == (("0", 2), ("1", 0)) and snap.target_tasks == (("0", 2), ("1", 0), ("1", 3))
    assert snap.assignment == (("app-rep", 0), ("clicks", 0), ("orders", 2))
    assert snap.target_assignment == (("app-rep", 0), ("app-rep", 3), ("clicks", 0), ("clicks", 3), ("orders", 2))
    assert (snap.instance_id, snap.state) == ("i-a", "STABLE")
    assert log.group.subscriptions() == {"a": ()}  # streams members name no topics


def test_a_task_of_an_unknown_subtopology_reads_nothing_known():
    assert StreamsGroup("x").partitions_of((("9", 0),)) == ()


def test_topology_tombstone_makes_a_group_with_members_not_ready_again():
    log = ShardLog("app", t0=T0)
    log.add(member("a"), topology(), epoch(1), target("a", {"0": [0]}), target_epoch(1), current("a", 1, {"0": [0]}))
    log.add(CoordinatorRecord(T.STREAMS_GROUP_TOPOLOGY, GROUP, None, -1))
    assert log.group.state_name == "NOT_READY" and log.group.sources == {}


def test_state_round_trip():
    log = ShardLog("app", t0=T0)
    log.add(member("a"), topology(), epoch(1), target("a", {"1": [1]}), target_epoch(1), current("a", 1, {"1": [1]}))
    assert StreamsGroup.from_state(log.group.to_state()) == log.group
