"""Classic groups (record type 2), as Kafka's loader rebuilds them from ``GroupMetadataValue``.

Mirrors ``classic/ClassicGroup.java`` and ``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``:
every value replaces the whole group (members, generation, protocol, leader); members present ⇒ Stable, none ⇒
Empty; a tombstone removes the group metadata (offsets have their own tombstones). A group created only by offset
commits (no type-2 record) is Kafka's "simple" group: Empty, no protocol type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from protocol.records import GroupMetadataValue

from . import events as ev
from ._base import GroupBase, GroupHeader
from .rebalance import MemberView, infer_causes, movement
from .verdicts import RebalanceJudge
from .state_format import build, fields_of
from .states import CLASSIC_GROUP, ClassicGroupState, ClassicTrigger, GroupType, apply

__all__ = ["ClassicMember", "ClassicGroup"]


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    session_timeout: int
    rebalance_timeout: int
    topics: tuple[str, ...]  # decoded subscription (consumer protocol), else ()
    assignment: tuple[tuple[str, int], ...] | None  # decoded, sorted; None if not decodable
    owned: tuple[tuple[str, int], ...] = ()

    def view(self) -> MemberView:
        return MemberView(self.member_id, self.instance_id, self.client_id, self.host, frozenset(self.topics),
                          None if self.assignment is None else frozenset(self.assignment))



@dataclass(slots=True)
class ClassicGroup(GroupBase):
    group_id: str
    state: ClassicGroupState = ClassicGroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None  # None = Kafka's Optional.empty (a simple group)
    protocol: str | None = None
    leader: str | None = None
    current_state_timestamp: int = -1
    members: dict[str, ClassicMember] = field(default_factory=dict)
    rebalances: int = 0
    last_rebalance_ts: int | None = None
    generation_ts: int | None = None  # when the current generation was first seen
    seen_metadata: bool = False  # a type-2 value was replayed (not a simple group made by offset commits)

    group_type = GroupType.CLASSIC

    @property
    def is_simple(self) -> bool:
        """``ClassicGroup.isSimpleGroup``: no protocol type and no members."""
        return not self.protocol_type and not self.members

    @property
    def state_name(self) -> str:
        return self.state.value

    def member_snapshots(self, topic_names: Mapping[bytes, str]) -> list[ev.MemberSnapshot]:
        """Members as the leader's last SyncGroup left them: decoded assignments, session timeouts, no epochs."""
        return [ev.MemberSnapshot(m.member_id, m.client_id, m.host, m.instance_id, m.assignment or (), None, None,
                                  None, m.topics, None, (), True, m.session_timeout, m.rebalance_timeout)
                for m in self.members.values()]

    def header(self) -> GroupHeader:
        cst = self.current_state_timestamp if self.current_state_timestamp >= 0 else None
        return GroupHeader(self.protocol_type, self.generation, None, self.leader, cst)

    def preferred_assignor(self, default: str) -> str:
        """The protocol the leader chose (``range``, ``cooperative-sticky``...): a classic group's assignor."""
        return self.protocol or ""

    @property
    def assignment_known(self) -> bool:
        """Every member's assignment decoded (a non-consumer protocol's is opaque)."""
        return all(m.assignment is not None for m in self.members.values())

    def subscribed_topics(self) -> set[str] | None:
        """Known only when every member's subscription decoded to topics (and there are members)."""
        if self.members and all(m.topics for m in self.members.values()):
            return {t for m in self.members.values() for t in m.topics}
        return None

    @property
    def assigns_on_client(self) -> bool:
        return True

    def replay(self, value: GroupMetadataValue | None, offset: int, timestamp: int, judge: RebalanceJudge,
               out: list) -> None:
        """Applies one type-2 record; appends the events it implies to ``out``.

        Raises:
            InvalidTransition: the state table has no edge for this record.
        """
        gid = self.group_id
        if value is None:
            self.state = apply("classic_group", CLASSIC_GROUP, self.state, ClassicTrigger.TOMBSTONE)
            return
        trigger = ClassicTrigger.METADATA_WITH_MEMBERS if value.members else ClassicTrigger.METADATA_WITHOUT_MEMBERS
        old_state = self.state
        new_state = apply("classic_group", CLASSIC_GROUP, old_state, trigger)
        consumer = value.protocol_type == "consumer"
        members: dict[str, ClassicMember] = {}
        for m in value.members:
            sub, asg = m.decoded_subscription, m.decoded_assignment
            topics = tuple(sorted(sub.topics)) if (consumer and sub is not None) else ()
            owned = tuple(sorted((tp.topic, p) for tp in sub.owned_partitions for p in tp.partitions)) \
                if (consumer and sub is not None) else ()
            if consumer and asg is not None:
                assignment = tuple(sorted((tp.topic, p) for tp in asg.assigned_partitions for p in tp.partitions))
            elif consumer and not m.assignment:
                assignment = ()  # the leader assigned nothing to this member (zero-length blob)
            else:
                assignment = None
            members[m.member_id] = ClassicMember(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout,
                # Kafka's loader substitutes the session timeout for a v0 value's missing rebalance timeout.
                m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout, topics, assignment, owned)
        before, old_gen, old_leader = self.members, self.generation, self.leader
        had_metadata = self.seen_metadata
        self.members = members
        self.generation = value.generation
        self.protocol_type = value.protocol_type or None
        self.protocol = value.protocol
        self.leader = value.leader
        self.current_state_timestamp = value.current_state_timestamp
        self.state = new_state
        self.seen_metadata = True
        if old_state != new_state and had_metadata:
            out.append(ev.GroupStateChanged(gid, offset, timestamp, GroupType.CLASSIC, old_state.value,
                                            new_state.value))
        for mid, m in members.items():
            if mid not in before:
                out.append(ev.MemberJoined(gid, offset, timestamp, mid, m.client_id, m.host, m.instance_id))
        for mid, m in before.items():
            if mid not in members:
                out.append(ev.MemberLeft(gid, offset, timestamp, mid, m.client_id, m.instance_id))
        if had_metadata and value.generation == old_gen:
            # Same generation, different member id for an instance id: KIP-345 static member replacement.
            old_static = {m.instance_id: mid for mid, m in before.items() if m.instance_id is not None}
            for mid, m in members.items():
                prev = old_static.get(m.instance_id) if m.instance_id is not None else None
                if prev is not None and prev != mid:
                    out.append(ev.StaticMemberReplaced(gid, offset, timestamp, m.instance_id, prev, mid))
                    out.extend(judge.static_restart(gid, offset, timestamp, prev, mid))
            return
        if not had_metadata:
            self.generation_ts = timestamp
            if members:
                judge.baseline(gid, offset, timestamp, {k: v.view().identity for k, v in members.items()})
            return
        # A new generation: one rebalance.
        views_before = {k: v.view() for k, v in before.items()}
        views_after = {k: v.view() for k, v in members.items()}
        causes, joined, left = infer_causes(views_before, views_after, leader_before=old_leader,
                                            leader_after=value.leader)
        if causes == (ev.RebalanceCause.UNKNOWN,) and consumer and \
                sum(len(m.assignment or ()) for m in members.values()) > \
                sum(len(m.assignment or ()) for m in before.values()):
            causes = (ev.RebalanceCause.COOPERATIVE_FOLLOW_UP,)
        identity = {k: v.identity for k, v in views_before.items()} | {k: v.identity for k, v in views_after.items()}
        if consumer and all(m.assignment is not None for m in members.values()) \
                and all(m.assignment is not None for m in before.values()):
            moved, stayed = movement({k: m.assignment for k, m in before.items()},
                                     {k: m.assignment for k, m in members.items()}, identity)
        else:
            moved = stayed = None
        since = None if self.generation_ts is None else max(0.0, (timestamp - self.generation_ts) / 1000.0)
        self.rebalances += 1
        self.last_rebalance_ts = timestamp
        self.generation_ts = timestamp
        rebalance = ev.Rebalance(gid, offset, timestamp, GroupType.CLASSIC, value.generation, old_gen, causes,
                                 len(before), len(members), moved, stayed, since, joined, left)
        out.append(rebalance)
        out.extend(judge.observe(rebalance, {k: v.identity for k, v in views_before.items()},
                                 {k: v.identity for k, v in views_after.items()}))

    def subscriptions(self) -> dict[str, tuple[str, ...]]:
        return {mid: m.topics for mid, m in self.members.items()}

    def assignments(self) -> dict[str, tuple[tuple[str, int], ...]]:
        return {mid: (m.assignment or ()) for mid, m in self.members.items()}

    def to_state(self) -> dict:
        """The group by field name (:mod:`.state_format`)."""
        return fields_of(self, state=self.state.value, members=[fields_of(m) for m in self.members.values()])

    @classmethod
    def from_state(cls, state: Mapping) -> "ClassicGroup":
        members = {m["member_id"]: build(ClassicMember, m) for m in state["members"]}
        return build(cls, state, state=ClassicGroupState(state["state"]), members=members)
