"""Sweeps every (state, trigger) pair of every table, and the derived KIP-848 states."""

from __future__ import annotations

import pytest

from streaming.model.states import (
    CLASSIC_GROUP,
    MODERN_MEMBER,
    ClassicGroupState,
    ClassicTrigger,
    ConsumerGroupState,
    InvalidTransition,
    MemberLifecycle,
    MemberTrigger,
    apply,
    derive_consumer_group_state,
    derive_streams_group_state,
)

C, CT, M, MT = ClassicGroupState, ClassicTrigger, MemberLifecycle, MemberTrigger

# Expected outcome of every pair; None = InvalidTransition.
CLASSIC_EXPECTED = {
    (s, t): (None if s in (C.PREPARING_REBALANCE, C.COMPLETING_REBALANCE) else
             {CT.METADATA_WITH_MEMBERS: C.STABLE, CT.METADATA_WITHOUT_MEMBERS: C.EMPTY, CT.TOMBSTONE: C.DEAD}[t])
    for s in C for t in CT
}
MEMBER_EXPECTED = {
    (M.ABSENT, MT.METADATA): M.ACTIVE, (M.ABSENT, MT.CURRENT_ASSIGNMENT): M.ACTIVE,
    (M.ABSENT, MT.CURRENT_ASSIGNMENT_TOMBSTONE): M.ABSENT, (M.ABSENT, MT.METADATA_TOMBSTONE): M.ABSENT,
    (M.ACTIVE, MT.METADATA): M.ACTIVE, (M.ACTIVE, MT.CURRENT_ASSIGNMENT): M.ACTIVE,
    (M.ACTIVE, MT.CURRENT_ASSIGNMENT_TOMBSTONE): M.LEAVING,
    (M.ACTIVE, MT.METADATA_TOMBSTONE): None,  # Kafka: "did not receive ConsumerGroupCurrentMemberAssignmentValue tombstone"
    (M.LEAVING, MT.METADATA): M.LEAVING, (M.LEAVING, MT.CURRENT_ASSIGNMENT): M.ACTIVE,
    (M.LEAVING, MT.CURRENT_ASSIGNMENT_TOMBSTONE): M.LEAVING, (M.LEAVING, MT.METADATA_TOMBSTONE): M.ABSENT,
}


@pytest.mark.parametrize("machine,table,expected", [("classic_group", CLASSIC_GROUP, CLASSIC_EXPECTED),
                                                     ("modern_member", MODERN_MEMBER, MEMBER_EXPECTED)])
def test_every_pair(machine, table, expected):
    states = {s for s, _ in expected}
    triggers = {t for _, t in expected}
    assert len(expected) == len(states) * len(triggers)  # the sweep covers every pair
    for (state, trigger), want in expected.items():
        if want is None:
            with pytest.raises(InvalidTransition) as exc:
                apply(machine, table, state, trigger)
            assert machine in str(exc.value) and trigger.name in str(exc.value)
        else:
            assert apply(machine, table, state, trigger) is want


@pytest.mark.parametrize("members,group_epoch,assignment_epoch,reconciled,want", [
    (0, 5, 5, [], ConsumerGroupState.EMPTY),  # no members
    (2, 6, 5, [(5, 0), (5, 0)], ConsumerGroupState.ASSIGNING),  # target lags the group epoch
    (2, 6, 6, [(6, 0), (5, 0)], ConsumerGroupState.RECONCILING),  # one member at an old epoch
    (1, 6, 6, [(6, 1)], ConsumerGroupState.RECONCILING),  # right epoch, still UNREVOKED_PARTITIONS
    (2, 6, 6, [(6, 0), (6, 0)], ConsumerGroupState.STABLE),
])
def test_consumer_state_derivation(members, group_epoch, assignment_epoch, reconciled, want):
    assert derive_consumer_group_state(members, group_epoch, assignment_epoch, reconciled) is want


def test_streams_not_ready_without_topology():
    assert derive_streams_group_state(1, False, 1, 1, [(1, 1)]).value == "NOT_READY"
    assert derive_streams_group_state(1, True, 1, 1, [(1, 1)]).value == "STABLE"
