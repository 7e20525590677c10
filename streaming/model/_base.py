"""What every group class shares: the interface the shard calls on any group (:class:`GroupBase`), and the record
rules and view helpers the group types have in common."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Mapping, NamedTuple

from protocol.records import MemberState, TopicIdPartitions

from .lazy import Restorable
from .states import GroupType

if TYPE_CHECKING:
    from . import events as ev
    from .verdicts import RebalanceJudge

__all__ = ["GroupBase", "GroupHeader", "ModernGroup", "resolve", "TP", "member_metadata",
           "member_state_name", "replay_group_epoch", "change_state"]

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


class GroupHeader(NamedTuple):
    """The group-level fields of a snapshot that the group's protocol decides (a classic group has a generation,
    a leader and a protocol type; a modern group has a group epoch and an assignment epoch)."""

    protocol_type: str | None
    generation: int  # the classic generation, or the modern group epoch
    assignment_epoch: int | None
    leader: str | None
    current_state_timestamp: int | None


class GroupBase(Restorable, ABC):
    """What the shard asks of any group, whatever its type.

    The shard snapshots, judges and describes groups of four types (classic, consumer, share, streams) that keep
    different records; each type answers these questions from its own records, so the shard never has to ask
    which type it holds. Defaults are the answers most types share. Slots are declared by the subclasses (and
    :class:`~streaming.model.lazy.Restorable`'s, for a group restored on first use).
    """

    __slots__ = ()
    group_type: GroupType

    group_id: str
    rebalances: int
    last_rebalance_ts: int | None

    # ---- identity and state --------------------------------------------------------------------------------

    @property
    @abstractmethod
    def state_name(self) -> str:
        """The state as the Admin API prints it: each type has its own state enum."""

    @abstractmethod
    def to_state(self) -> dict:
        """The group by field name (:mod:`.state_format`): the shard saves every group alike."""

    @classmethod
    @abstractmethod
    def from_state(cls, state: Mapping) -> "GroupBase":
        """Restores :meth:`to_state`."""

    # ---- what a snapshot shows -----------------------------------------------------------------------------

    @abstractmethod
    def member_snapshots(self, topic_names: Mapping[bytes, str]) -> list[ev.MemberSnapshot]:
        """The members as a snapshot shows them. ``topic_names`` names the topic ids modern groups' records
        carry; each type knows which of its members' fields (epochs, tasks, classic timeouts) it has."""

    @abstractmethod
    def header(self) -> GroupHeader:
        """The snapshot's protocol fields: a classic generation and a modern group epoch are shown alike."""

    def preferred_assignor(self, default: str) -> str:
        """The assignor a snapshot reports (``default``: the broker's first configured assignor, for a group
        whose members name none). Only groups whose members choose an assignor have one to report."""
        return ""

    @property
    def is_simple(self) -> bool:
        """A group made only by offset commits (Kafka's "simple" group: ``assign()`` and commit, no members). It can
        only be judged by its commits, and records of any modern type may replace it."""
        return False

    # ---- what the status rules read ------------------------------------------------------------------------

    @property
    def assignment_known(self) -> bool:
        """The members' partitions are known from the log: only then is an unowned partition really unowned. Only
        groups whose members own topic partitions (classic, consumer) can know it: share members share theirs, and
        streams members own tasks."""
        return False

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to (None: not known), so a partition of a topic nobody subscribes to is
        not judged as stopped."""
        return None

    def silent_members(self, now_ms: int, silent_after_ms: int) -> dict[str, int]:
        """Member id -> how long (ms, at least ``silent_after_ms``) a member known to have stopped heartbeating has
        been silent by ``now_ms``. Only a group whose members must follow every epoch bump shows that."""
        return {}

    def check_silence(self, now_ms: int, judge: RebalanceJudge, out: list) -> None:
        """The heartbeat tick: tells ``judge`` of the members whose silence became certain by ``now_ms``. A group
        that cannot tell silence (see :meth:`silent_members`) has nothing to tell."""

    @property
    def exclusive_owners(self) -> bool:
        """Each partition has one owner at a time, so a partition's owner means something (a share group's members
        share its partitions)."""
        return True

    # ---- what the assignment what-if reads -----------------------------------------------------------------

    @abstractmethod
    def subscriptions(self) -> dict[str, tuple[str, ...]]:
        """Member id -> the topics it subscribes to: what an assignor assigns from."""

    def partition_counts(self) -> dict[str, int]:
        """Topic -> partition count as the group's own records give it (only KIP-848 consumer groups log it)."""
        return {}

    @property
    def assigns_on_client(self) -> bool:
        """The group's leader computes the assignment (classic protocol), so the assignors see each member's owned
        partitions; the broker's assignors of modern groups do not."""
        return False


class ModernGroup(GroupBase):
    """The group types of the broker-driven protocols (KIP-848 consumer, KIP-932 share, KIP-1071 streams): the
    broker bumps a group epoch and computes a target assignment, so their snapshots show those two epochs."""

    __slots__ = ()
    group_epoch: int
    assignment_epoch: int

    def header(self) -> GroupHeader:
        return GroupHeader(None, self.group_epoch, self.assignment_epoch, None, None)


def member_state_name(code: int) -> str:
    """A modern member's state code as Kafka names it (``MemberState``)."""
    return MemberState.parse(code).name


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
