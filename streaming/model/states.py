"""Every state machine of the group model, as data: one Enum and one ``{state: {trigger: next}}`` table each.

Mirrors ``ClassicGroupState`` and ``ConsumerGroup.maybeUpdateGroupState`` of Kafka's group coordinator
(``group-coordinator/.../classic/ClassicGroupState.java``, ``modern/consumer/ConsumerGroup.java``).

Rules of this file (docs/design-notes.md#code-style):

* Tables hold only what the ``__consumer_offsets`` log shows. A classic group's PREPARING_REBALANCE and
  COMPLETING_REBALANCE phases live only in the coordinator's memory (docs/kafka-formats.md#group-states): no record is written when a group
  enters them, so no trigger here leads to them. They exist in the Enum because the Admin API reports them.
* :func:`apply` is the single gate: it looks the trigger up and raises :class:`InvalidTransition` naming the machine,
  the state, the trigger and what was allowed. Nothing else decides a transition.
* KIP-848, share and streams group states are *derived*, not transitioned: pure functions of epochs and members,
  recomputed after every change, exactly as Kafka does.
"""

from __future__ import annotations

import enum
from typing import Iterable, Mapping, TypeVar

__all__ = [
    "ModelError",
    "InvalidTransition",
    "InconsistentRecord",
    "GroupType",
    "ClassicGroupState",
    "ClassicTrigger",
    "CLASSIC_GROUP",
    "MemberLifecycle",
    "MemberTrigger",
    "MODERN_MEMBER",
    "ConsumerGroupState",
    "ShareGroupState",
    "StreamsGroupState",
    "apply",
    "derive_consumer_group_state",
    "derive_share_group_state",
    "derive_streams_group_state",
    "KafkaAvailability",
    "KafkaTrigger",
    "KAFKA_AVAILABILITY",
    "TABLES",
]


class ModelError(Exception):
    """Base of the model's own errors: the shard catches them per record and emits an Anomaly."""


class InvalidTransition(ModelError):
    def __init__(self, machine: str, state: enum.Enum, trigger: enum.Enum, allowed: Iterable[enum.Enum]):
        self.machine, self.state, self.trigger = machine, state, trigger
        self.allowed = tuple(allowed)
        names = ", ".join(a.name for a in self.allowed) or "nothing"
        super().__init__(f"{machine}: {trigger.name} is not allowed in state {state.name} (allowed: {names})")


class InconsistentRecord(ModelError):
    """A record that contradicts the state built so far (Kafka's loader throws IllegalStateException)."""


class GroupType(enum.Enum):
    """Kafka's ``GroupType`` as the Admin API prints it."""

    CLASSIC = "CLASSIC"
    CONSUMER = "CONSUMER"
    SHARE = "SHARE"
    STREAMS = "STREAMS"


S = TypeVar("S", bound=enum.Enum)
T = TypeVar("T", bound=enum.Enum)


def apply(machine: str, table: Mapping[S, Mapping[T, S]], state: S, trigger: T) -> S:
    """Returns the state ``trigger`` leads to from ``state``.

    Raises:
        InvalidTransition: the table has no such edge.
    """
    edges = table.get(state, {})
    try:
        return edges[trigger]
    except KeyError:
        raise InvalidTransition(machine, state, trigger, edges.keys()) from None


# --------------------------------------------------------------------------------------------------------------
# Classic groups (type 2)


class ClassicGroupState(enum.Enum):
    """``ClassicGroupState``; the values are the Admin API names."""

    EMPTY = "EMPTY"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"  # in memory only: never entered from the log
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"  # in memory only: never entered from the log
    STABLE = "STABLE"
    DEAD = "DEAD"


class ClassicTrigger(enum.Enum):
    """What a type-2 record tells: Kafka's loader makes a group Stable if the value lists members, else Empty."""

    METADATA_WITH_MEMBERS = "metadata_with_members"
    METADATA_WITHOUT_MEMBERS = "metadata_without_members"
    TOMBSTONE = "tombstone"


_C, _CT = ClassicGroupState, ClassicTrigger
CLASSIC_GROUP: dict[ClassicGroupState, dict[ClassicTrigger, ClassicGroupState]] = {
    # A completed rebalance with members, a static member replaced while Stable (docs/kafka-formats.md#group-states): Stable.
    # A rebalance that ended with nobody left writes an empty value: Empty. Deletion, expiry or the upgrade to a
    # consumer group writes a tombstone: Dead (the group leaves the shard).
    _C.EMPTY: {_CT.METADATA_WITH_MEMBERS: _C.STABLE, _CT.METADATA_WITHOUT_MEMBERS: _C.EMPTY, _CT.TOMBSTONE: _C.DEAD},
    _C.STABLE: {_CT.METADATA_WITH_MEMBERS: _C.STABLE, _CT.METADATA_WITHOUT_MEMBERS: _C.EMPTY, _CT.TOMBSTONE: _C.DEAD},
    # A Dead group id can be reused: the next value re-creates it (Kafka's replay builds a new ClassicGroup).
    _C.DEAD: {_CT.METADATA_WITH_MEMBERS: _C.STABLE, _CT.METADATA_WITHOUT_MEMBERS: _C.EMPTY, _CT.TOMBSTONE: _C.DEAD},
    # The in-memory phases have no logged trigger; a group restored from the log is never in them.
    _C.PREPARING_REBALANCE: {},
    _C.COMPLETING_REBALANCE: {},
}


# --------------------------------------------------------------------------------------------------------------
# KIP-848 / share / streams members: which member records may follow which (GroupMetadataManager.replay)


class MemberLifecycle(enum.Enum):
    ABSENT = "absent"
    ACTIVE = "active"  # has a member-metadata or current-assignment value
    LEAVING = "leaving"  # its current assignment was tombstoned: epoch -1 (LEAVE_GROUP_MEMBER_EPOCH)


class MemberTrigger(enum.Enum):
    METADATA = "member_metadata"  # type 5 / 10 / 19 value
    CURRENT_ASSIGNMENT = "current_assignment"  # type 8 / 14 / 22 value
    CURRENT_ASSIGNMENT_TOMBSTONE = "current_assignment_tombstone"
    METADATA_TOMBSTONE = "member_metadata_tombstone"


_M, _MT = MemberLifecycle, MemberTrigger
MODERN_MEMBER: dict[MemberLifecycle, dict[MemberTrigger, MemberLifecycle]] = {
    # Either record may create a member: Kafka's replay get-or-creates on both.
    # Tombstones of an unknown member are ignored by Kafka, so they stay ABSENT.
    _M.ABSENT: {
        _MT.METADATA: _M.ACTIVE,
        _MT.CURRENT_ASSIGNMENT: _M.ACTIVE,
        _MT.CURRENT_ASSIGNMENT_TOMBSTONE: _M.ABSENT,
        _MT.METADATA_TOMBSTONE: _M.ABSENT,
    },
    # Kafka refuses to delete a member whose current assignment was not tombstoned first (docs/kafka-formats.md#member-removal:
    # tombstones 8, 7, 5 in this order): METADATA_TOMBSTONE from ACTIVE is an inconsistency.
    _M.ACTIVE: {
        _MT.METADATA: _M.ACTIVE,
        _MT.CURRENT_ASSIGNMENT: _M.ACTIVE,
        _MT.CURRENT_ASSIGNMENT_TOMBSTONE: _M.LEAVING,
    },
    # A leaving member may still be updated (a fenced static member coming back) or finally removed.
    _M.LEAVING: {
        _MT.METADATA: _M.LEAVING,
        _MT.CURRENT_ASSIGNMENT: _M.ACTIVE,
        _MT.CURRENT_ASSIGNMENT_TOMBSTONE: _M.LEAVING,
        _MT.METADATA_TOMBSTONE: _M.ABSENT,
    },
}


# --------------------------------------------------------------------------------------------------------------
# Derived states


class ConsumerGroupState(enum.Enum):
    """``ConsumerGroup.ConsumerGroupState``; the values are the Admin API names."""

    EMPTY = "EMPTY"
    ASSIGNING = "ASSIGNING"
    RECONCILING = "RECONCILING"
    STABLE = "STABLE"
    DEAD = "DEAD"


class ShareGroupState(enum.Enum):
    EMPTY = "EMPTY"
    STABLE = "STABLE"
    DEAD = "DEAD"


class StreamsGroupState(enum.Enum):
    EMPTY = "EMPTY"
    NOT_READY = "NOT_READY"
    ASSIGNING = "ASSIGNING"
    RECONCILING = "RECONCILING"
    STABLE = "STABLE"
    DEAD = "DEAD"


def derive_consumer_group_state(
    member_count: int, group_epoch: int, assignment_epoch: int, reconciled: Iterable[tuple[int, int]]
) -> ConsumerGroupState:
    """``ConsumerGroup.maybeUpdateGroupState``: Empty without members; Assigning while the target assignment lags
    the group epoch; Reconciling while any member is not at the assignment epoch in state STABLE; else Stable.

    ``reconciled`` yields ``(member_epoch, member_state_code)`` per member (STABLE is code 0).
    """
    if member_count == 0:
        return ConsumerGroupState.EMPTY
    if group_epoch > assignment_epoch:
        return ConsumerGroupState.ASSIGNING
    for epoch, state in reconciled:
        if epoch != assignment_epoch or state != 0:
            return ConsumerGroupState.RECONCILING
    return ConsumerGroupState.STABLE


def derive_share_group_state(member_count: int) -> ShareGroupState:
    """``ShareGroup.maybeUpdateGroupState`` (4.0): Empty without members, else Stable."""
    return ShareGroupState.EMPTY if member_count == 0 else ShareGroupState.STABLE


def derive_streams_group_state(
    member_count: int,
    has_topology: bool,
    group_epoch: int,
    assignment_epoch: int,
    reconciled: Iterable[tuple[int, int]],
) -> StreamsGroupState:
    """``StreamsGroup.maybeUpdateGroupState``: like consumer groups, plus NotReady while no topology is known.

    Streams member state STABLE is code 1 (``StreamsMemberState``), not 0.
    """
    if member_count == 0:
        return StreamsGroupState.EMPTY
    if not has_topology:
        return StreamsGroupState.NOT_READY
    if group_epoch > assignment_epoch:
        return StreamsGroupState.ASSIGNING
    for epoch, state in reconciled:
        if epoch != assignment_epoch or state != 1:
            return StreamsGroupState.RECONCILING
    return StreamsGroupState.STABLE


# --------------------------------------------------------------------------------------------------------------
# Kafka's availability, as one shard sees it (``availability.py``)


class KafkaAvailability(enum.Enum):
    """Whether the coordinator was there. A broker outage stops the heartbeat clock and every shard's log at once;
    when Kafka is back, every group's members rejoin together (classic members past their session timeout under
    new member ids, static members replaced, expired members removed). Those rejoins are Kafka's doing, not the
    consumers', so the judge needs to know when they happen."""

    AVAILABLE = "available"
    AWAY = "away"  # a record came after the heartbeat clock and the shard's log were both silent for the gap
    REJOINING = "rejoining"  # Kafka answers again: its consumers rejoin within the rejoin window


class KafkaTrigger(enum.Enum):
    HEARTBEAT = "heartbeat"  # a heartbeat within the gap of the previous one
    LATE_RECORD = "late_record"  # a record after the heartbeat clock and this shard's log were silent for the gap
    LATE_HEARTBEAT = "late_heartbeat"  # a heartbeat after a gap during which this shard's log was silent too
    REJOIN_WINDOW_PASSED = "rejoin_window_passed"  # the rejoin window after Kafka came back is over


_K, _KT = KafkaAvailability, KafkaTrigger
KAFKA_AVAILABILITY: dict[KafkaAvailability, dict[KafkaTrigger, KafkaAvailability]] = {
    _K.AVAILABLE: {_KT.HEARTBEAT: _K.AVAILABLE, _KT.LATE_RECORD: _K.AWAY, _KT.LATE_HEARTBEAT: _K.REJOINING,
                   _KT.REJOIN_WINDOW_PASSED: _K.AVAILABLE},
    # The first heartbeat after the silence is late by definition: it closes the outage.
    _K.AWAY: {_KT.LATE_RECORD: _K.AWAY, _KT.LATE_HEARTBEAT: _K.REJOINING, _KT.HEARTBEAT: _K.REJOINING},
    # Another outage inside the window is a new outage (the one before is reported first).
    _K.REJOINING: {_KT.HEARTBEAT: _K.REJOINING, _KT.LATE_RECORD: _K.AWAY, _KT.LATE_HEARTBEAT: _K.REJOINING,
                   _KT.REJOIN_WINDOW_PASSED: _K.AVAILABLE},
}


TABLES = {"classic_group": CLASSIC_GROUP, "modern_member": MODERN_MEMBER, "kafka_availability": KAFKA_AVAILABILITY}
