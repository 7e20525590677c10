"""Rebalance causes inferred from the membership before and after one generation or epoch, and partition movement;
each case says which difference in the records gives the cause (the log has no record of why a rebalance began)."""

from __future__ import annotations

import pytest

from streaming.model.events import RebalanceCause as C
from streaming.model.rebalance import MemberView, infer_causes, movement


def view(mid: str, *, client: str = "c", host: str = "/h", instance: str | None = None, topics=("t",),
         assignment=None) -> tuple[str, MemberView]:
    return mid, MemberView(mid, instance, client, host, frozenset(topics),
                           None if assignment is None else frozenset(assignment))


def members(*views: tuple[str, MemberView]) -> dict[str, MemberView]:
    return dict(views)


def test_identity_is_the_instance_id_else_client_at_host():
    assert view("m", instance="i-1")[1].identity == "i-1"
    assert view("m", client="app", host="/10.0.0.1")[1].identity == "app@/10.0.0.1"


def test_a_join_and_a_leave_are_reported_with_their_ids():
    causes, joined, left = infer_causes(members(view("a"), view("b")), members(view("a"), view("c")))
    assert causes == (C.MEMBER_JOINED, C.MEMBER_LEFT) and joined == ("c",) and left == ("b",)


def test_a_static_member_back_under_a_new_id_is_one_rejoin_not_a_join_and_a_leave():
    before = members(view("a-1", instance="i-a"), view("b"))
    after = members(view("a-2", instance="i-a"), view("b"))
    assert infer_causes(before, after) == ((C.STATIC_MEMBER_REJOINED,), (), ())


def test_a_new_static_member_whose_old_id_stays_is_a_plain_join():
    before = members(view("a-1", instance="i-a"))
    after = members(view("a-1", instance="i-a"), view("a-2", instance="i-a"))
    assert infer_causes(before, after)[:2] == ((C.MEMBER_JOINED,), ("a-2",))


def test_everyone_leaving_empties_the_group():
    causes, _, left = infer_causes(members(view("a"), view("b")), {})
    assert causes == (C.MEMBER_LEFT, C.GROUP_EMPTIED) and left == ("a", "b")


def test_a_changed_subscription_is_reported_once():
    before = members(view("a", topics=("t",)), view("b", topics=("t",)))
    after = members(view("a", topics=("t", "u")), view("b", topics=("u",)))
    assert infer_causes(before, after)[0] == (C.SUBSCRIPTION_CHANGED,)


@pytest.mark.parametrize(
    "before, after, expected",
    [
        ({"t": 4}, {"t": 6}, C.PARTITIONS_ADDED),
        ({"t": 4}, {"t": 4, "u": 2}, C.METADATA_CHANGED),  # a new topic is not more partitions of a known one
        ({"t": 4, "u": 2}, {"t": 4}, C.METADATA_CHANGED),
    ],
)
def test_partition_counts(before, after, expected):
    same = members(view("a"))
    assert infer_causes(same, same, partitions_before=before, partitions_after=after)[0] == (expected,)


def test_metadata_flag_without_counts():
    same = members(view("a"))
    assert infer_causes(same, same, metadata_changed=True)[0] == (C.METADATA_CHANGED,)
    # Counts given and equal: the flag is not consulted.
    assert infer_causes(same, same, partitions_before={"t": 1}, partitions_after={"t": 1},
                        metadata_changed=True)[0] == (C.UNKNOWN,)


def test_leader_change_needs_both_leaders_known():
    same = members(view("a"), view("b"))
    assert infer_causes(same, same, leader_before="a", leader_after="b")[0] == (C.LEADER_CHANGED,)
    assert infer_causes(same, same, leader_before=None, leader_after="b")[0] == (C.UNKNOWN,)


def test_nothing_visible_is_unknown():
    same = members(view("a"))
    assert infer_causes(same, same) == ((C.UNKNOWN,), (), ())


def test_movement_counts_partitions_kept_and_moved():
    before = {"a": [("t", 0), ("t", 1)], "b": [("t", 2)]}
    after = {"a": [("t", 0)], "b": [("t", 1), ("t", 2)], "c": [("t", 3)]}  # t-3 is new: neither moved nor stayed
    assert movement(before, after) == (1, 2)


def test_movement_follows_identity_across_member_ids():
    before = {"a-1": [("t", 0)], "b": [("t", 1)]}
    after = {"a-2": [("t", 0)], "b": [("t", 1)]}
    assert movement(before, after) == (1, 1)
    assert movement(before, after, identity={"a-1": "i-a", "a-2": "i-a"}) == (0, 2)
