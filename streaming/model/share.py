"""Share groups (KIP-932, record types 9-15): membership, epochs and state.

Mirrors ``modern/share/ShareGroup.java`` as replayed by ``GroupMetadataManager`` in 4.0: group epoch (type 11, both
the 4.0 and 4.1 layouts), subscription metadata (type 9, 4.0 only), members (type 10), target assignment (types 12
and 13), current assignments (type 14) and which topics have share-partition state (type 15). A share group is
never confused with a consumer group: it has its own class, type and state enum. State: Empty without members,
else Stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from . import events as ev
from ._base import ModernGroup, change_state, id_assignment, member_metadata, member_state_name, \
    replay_group_epoch, resolve
from .state_format import build, fields_of
from .states import MODERN_MEMBER, GroupType, InconsistentRecord, MemberLifecycle, MemberTrigger, ShareGroupState, \
    apply, derive_share_group_state

__all__ = ["ShareMember", "ShareGroup"]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    lifecycle: MemberLifecycle = MemberLifecycle.ABSENT
    rack_id: str | None = None
    client_id: str = ""
    host: str = ""
    topics: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_epoch: int = -1
    state: int = 0
    assigned: dict[bytes, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def from_state(cls, state: Mapping) -> "ShareMember":
        return build(cls, state, lifecycle=MemberLifecycle(state["lifecycle"]))


@dataclass(slots=True)
class ShareGroup(ModernGroup):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, dict[bytes, tuple[int, ...]]] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    state: ShareGroupState = ShareGroupState.EMPTY
    rebalances: int = 0
    last_rebalance_ts: int | None = None

    group_type = GroupType.SHARE

    @property
    def state_name(self) -> str:
        return self.state.value

    def member_snapshots(self, topic_names: Mapping[bytes, str]) -> list[ev.MemberSnapshot]:
        """Members with their current and target assignments; share members have no static instance id."""
        return [ev.MemberSnapshot(m.member_id, m.client_id, m.host, None, resolve(topic_names, m.assigned),
                                  resolve(topic_names, self.target.get(m.member_id, {})), m.member_epoch,
                                  member_state_name(m.state), m.topics)
                for m in self.members.values()]

    @property
    def exclusive_owners(self) -> bool:
        """Share-group members share partitions: a partition's last listed member is not its owner."""
        return False

    def subscriptions(self) -> dict[str, tuple[str, ...]]:
        return {mid: m.topics for mid, m in self.members.items()}

    def update_state(self, offset: int, timestamp: int, out: list) -> None:
        new = derive_share_group_state(len(self.members))
        change_state(self, new, offset, timestamp, out)

    def replay_epoch(self, epoch: int, offset: int, timestamp: int, out: list) -> None:
        replay_group_epoch(self, epoch, offset, timestamp, out)

    def replay_member(self, member_id: str, value, offset: int, timestamp: int, out: list) -> None:
        """Type 10.

        Raises:
            InvalidTransition: a member tombstone before its current-assignment tombstone.
            InconsistentRecord: a member removed while still in the target assignment.
        """
        m = member_metadata(self, member_id, value, offset, timestamp, out, ShareMember, None)
        if m is not None:
            m.rack_id, m.client_id, m.host = value.rack_id, value.client_id, value.client_host
            m.topics = tuple(value.subscribed_topic_names)
        self.update_state(offset, timestamp, out)

    def replay_target_epoch(self, epoch: int | None) -> None:
        if epoch is None and self.target:
            raise InconsistentRecord(f"share group {self.group_id}: target tombstone with members in the target")
        self.assignment_epoch = -1 if epoch is None else epoch

    def replay_target_member(self, member_id: str, topic_partitions) -> None:
        if topic_partitions is None:
            self.target.pop(member_id, None)
        else:
            self.target[member_id] = id_assignment(topic_partitions)

    def replay_current_assignment(self, member_id: str, value, offset: int, timestamp: int, out: list) -> None:
        m = self.members.get(member_id)
        if value is None:
            if m is None:
                return
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle,
                                MemberTrigger.CURRENT_ASSIGNMENT_TOMBSTONE)
            m.member_epoch = m.previous_epoch = -1
            m.assigned = {}
        else:
            if m is None:
                m = self.members[member_id] = ShareMember(member_id)
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.CURRENT_ASSIGNMENT)
            m.member_epoch, m.previous_epoch, m.state = value.member_epoch, value.previous_member_epoch, value.state
            m.assigned = id_assignment(value.assigned_partitions)
        self.update_state(offset, timestamp, out)

    def to_state(self) -> dict:
        """The group by field name (:mod:`.state_format`)."""
        return fields_of(self, state=self.state.value,
                         members=[fields_of(m, lifecycle=m.lifecycle.value) for m in self.members.values()])

    @classmethod
    def from_state(cls, state: Mapping) -> "ShareGroup":
        return build(cls, state, state=ShareGroupState(state["state"]),
                     members={m["member_id"]: ShareMember.from_state(m) for m in state["members"]})
