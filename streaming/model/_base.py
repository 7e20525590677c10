"""What every group class shares: identity, rebalance bookkeeping and the view helpers describe/snapshot use."""

from __future__ import annotations

from typing import Mapping

from protocol.records import TopicIdPartitions

from .states import GroupType

__all__ = ["GroupBase", "resolve", "TP", "member_metadata", "replay_group_epoch", "change_state"]

TP = tuple[str, int]


def resolve(topic_names: Mapping[bytes, str], assignment: Mapping[bytes, tuple[int, ...]]) -> tuple[TP, ...]:
    """Topic-id assignment to sorted ``(topic, partition)`` pairs; an id without a known name prints as its
    Kafka text form (what ``kafka-consumer-groups.sh`` shows for a deleted topic is no better)."""
    out = []
    for tid, parts in assignment.items():
        name = topic_names.get(tid)
        if name is None:
            name = str(tid)
        out.extend((name, p) for p in parts)
    out.sort()
    return tuple(out)


def id_assignment(tps: tuple[TopicIdPartitions, ...]) -> dict[bytes, tuple[int, ...]]:
    return {t.topic_id: tuple(sorted(t.partitions)) for t in tps if t.partitions}


class GroupBase:
    """Rebalance bookkeeping shared by all group types (slots are declared by the subclasses)."""

    __slots__ = ()
    group_type: GroupType

    group_id: str
    rebalances: int
    last_rebalance_ts: int | None

    @property
    def state_name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError


def member_metadata(group, member_id: str, value, offset: int, timestamp: int, out: list, new_member,
                     instance_id: str | None):
    """The member-metadata record rules shared by the modern group types (share type 10, streams type 19).

    A tombstone removes the member (after its current-assignment tombstone, and only once it is out of the
    target assignment) and returns None; a value creates the member if needed and returns it, for the caller to
    copy its type-specific fields.

    Raises:
        InvalidTransition: a member tombstone before its current-assignment tombstone.
        InconsistentRecord: a member removed while still in the target assignment.
    """
    from . import events as ev
    from .states import MODERN_MEMBER, InconsistentRecord, MemberTrigger, apply

    members = group.members
    m = members.get(member_id)
    if value is None:
        if m is None:
            return None
        apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.METADATA_TOMBSTONE)
        if member_id in group.target:
            kind = group.group_type.name.lower()
            raise InconsistentRecord(f"{kind} group {group.group_id}: member {member_id} still in the target")
        del members[member_id]
        out.append(ev.MemberLeft(group.group_id, offset, timestamp, member_id, m.client_id, m_instance(m)))
        return None
    if m is None:
        m = members[member_id] = new_member(member_id)
        out.append(ev.MemberJoined(group.group_id, offset, timestamp, member_id, value.client_id,
                                   value.client_host, instance_id))
    m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.METADATA)
    return m




def m_instance(member) -> str | None:
    """A member's static instance id, for the model's member types that have one."""
    return getattr(member, "instance_id", None)


def change_state(group, new, offset: int, timestamp: int, out: list) -> None:
    """Sets a share or streams group's derived state, with an event when it changed."""
    from . import events as ev

    if new != group.state:
        out.append(ev.GroupStateChanged(group.group_id, offset, timestamp, group.group_type, group.state.value,
                                        new.value))
        group.state = new


def replay_group_epoch(group, epoch: int, offset: int, timestamp: int, out: list) -> None:
    """The group-epoch record of a share or streams group: a new epoch after the first is a rebalance. Its cause
    is not judged: these groups' members are not followed through rebalances the way consumer groups' are."""
    from . import events as ev

    if epoch != group.group_epoch and group.group_epoch > 0:
        group.rebalances += 1
        group.last_rebalance_ts = timestamp
        size = len(group.members)
        out.append(ev.Rebalance(group.group_id, offset, timestamp, group.group_type, epoch, group.group_epoch,
                                (ev.RebalanceCause.UNKNOWN,), size, size, None, None, None))
    group.group_epoch = epoch
    group.update_state(offset, timestamp, out)
