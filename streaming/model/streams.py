"""Streams groups (KIP-1071, record types 17-23, Kafka 4.1+): membership, epochs, topology and state.

Mirrors ``streams/StreamsGroup.java``: group epoch (type 17), topology (type 23), members (type 19), target
assignment (types 20 and 21), current assignments (type 22). Tasks are (subtopology, partition) pairs, not topic
partitions, so streams groups carry no topic assignment; their offsets are ordinary commits. State is derived by
:func:`states.derive_streams_group_state` (NotReady while no topology is known; the topology's validation against
topic metadata is not logged, so a group with a topology is treated as ready).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from protocol.records import StreamsMemberState

from . import events as ev
from ._base import ModernGroup, change_state, member_metadata, replay_group_epoch
from .state_format import build, fields_of
from .states import MODERN_MEMBER, GroupType, InconsistentRecord, MemberLifecycle, MemberTrigger, StreamsGroupState, \
    apply, derive_streams_group_state

__all__ = ["StreamsMember", "StreamsGroup"]


def _tasks(tasks) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((t.subtopology_id, p) for t in tasks for p in t.partitions))


@dataclass(slots=True)
class StreamsMember:
    member_id: str
    lifecycle: MemberLifecycle = MemberLifecycle.ABSENT
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    host: str = ""
    process_id: str = ""
    topology_epoch: int = -1
    member_epoch: int = 0
    previous_epoch: int = -1
    state: int = int(StreamsMemberState.STABLE)
    active_tasks: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_state(cls, state: Mapping) -> "StreamsMember":
        return build(cls, state, lifecycle=MemberLifecycle(state["lifecycle"]))


@dataclass(slots=True)
class StreamsGroup(ModernGroup):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology_epoch: int | None = None
    # subtopology id -> the topics its tasks read (source and repartition-source topics), from the topology record:
    # what turns a task (subtopology, partition) into the topic partitions a member works on
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    state: StreamsGroupState = StreamsGroupState.EMPTY
    rebalances: int = 0
    last_rebalance_ts: int | None = None

    group_type = GroupType.STREAMS

    @property
    def state_name(self) -> str:
        return self.state.value

    def member_snapshots(self, topic_names: Mapping[bytes, str]) -> list[ev.MemberSnapshot]:
        """Members with their tasks, and the topic partitions those tasks read as their assignments."""
        out = []
        for m in self.members.values():
            target = self.target.get(m.member_id, ())
            out.append(ev.MemberSnapshot(m.member_id, m.client_id, m.host, m.instance_id,
                                         self.partitions_of(m.active_tasks), self.partitions_of(target),
                                         m.member_epoch, StreamsMemberState.parse(m.state).name,
                                         active_tasks=m.active_tasks, target_tasks=target))
        return out

    def subscriptions(self) -> dict[str, tuple[str, ...]]:
        """Streams members subscribe through their topology, not by topic: none of them names a topic."""
        return {mid: () for mid in self.members}

    def update_state(self, offset: int, timestamp: int, out: list) -> None:
        new = derive_streams_group_state(len(self.members), self.topology_epoch is not None, self.group_epoch,
                                         self.assignment_epoch,
                                         ((m.member_epoch, m.state) for m in self.members.values()))
        change_state(self, new, offset, timestamp, out)

    def replay_epoch(self, epoch: int, offset: int, timestamp: int, out: list) -> None:
        replay_group_epoch(self, epoch, offset, timestamp, out)

    def replay_topology(self, value, offset: int, timestamp: int, out: list) -> None:
        """Type 23 (None: its tombstone)."""
        self.topology_epoch = None if value is None else value.epoch
        self.sources = {} if value is None else {
            s.subtopology_id: tuple(sorted({*s.source_topics, *(t.name for t in s.repartition_source_topics)}))
            for s in value.subtopologies}
        self.update_state(offset, timestamp, out)

    def partitions_of(self, tasks: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        """The topic partitions ``tasks`` read: partition p of every topic its subtopology reads (a task of a
        subtopology the topology does not name reads nothing known)."""
        return tuple(sorted({(topic, p) for sub, p in tasks for topic in self.sources.get(sub, ())}))

    def replay_member(self, member_id: str, value, offset: int, timestamp: int, out: list) -> None:
        """Type 19.

        Raises:
            InvalidTransition: a member tombstone before its current-assignment tombstone.
            InconsistentRecord: a member removed while still in the target assignment.
        """
        m = member_metadata(self, member_id, value, offset, timestamp, out, StreamsMember,
                                  None if value is None else value.instance_id)
        if m is not None:
            m.instance_id, m.rack_id, m.client_id, m.host = (value.instance_id, value.rack_id, value.client_id,
                                                              value.client_host)
            m.process_id, m.topology_epoch = value.process_id, value.topology_epoch
        self.update_state(offset, timestamp, out)

    def replay_target_epoch(self, epoch: int | None, offset: int, timestamp: int, out: list) -> None:
        if epoch is None and self.target:
            raise InconsistentRecord(f"streams group {self.group_id}: target tombstone with members in the target")
        self.assignment_epoch = -1 if epoch is None else epoch
        self.update_state(offset, timestamp, out)

    def replay_target_member(self, member_id: str, value) -> None:
        if value is None:
            self.target.pop(member_id, None)
        else:
            self.target[member_id] = _tasks(value.active_tasks)

    def replay_current_assignment(self, member_id: str, value, offset: int, timestamp: int, out: list) -> None:
        m = self.members.get(member_id)
        if value is None:
            if m is None:
                return
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle,
                                MemberTrigger.CURRENT_ASSIGNMENT_TOMBSTONE)
            m.member_epoch = m.previous_epoch = -1
            m.active_tasks = ()
        else:
            if m is None:
                m = self.members[member_id] = StreamsMember(member_id)
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.CURRENT_ASSIGNMENT)
            m.member_epoch, m.previous_epoch = value.member_epoch, value.previous_member_epoch
            m.state = int(StreamsMemberState.parse(value.state))
            m.active_tasks = _tasks(value.active_tasks)
        self.update_state(offset, timestamp, out)

    def to_state(self) -> dict:
        """The group by field name (:mod:`.state_format`)."""
        return fields_of(self, state=self.state.value,
                         members=[fields_of(m, lifecycle=m.lifecycle.value) for m in self.members.values()])

    @classmethod
    def from_state(cls, state: Mapping) -> "StreamsGroup":
        return build(cls, state, state=StreamsGroupState(state["state"]),
                     members={m["member_id"]: StreamsMember.from_state(m) for m in state["members"]})
