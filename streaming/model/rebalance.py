"""Rebalances: their causes from the records and partition movement (the verdicts are in ``verdicts``).

Kafka writes nothing when a rebalance starts (docs/kafka-formats.md#group-states: PreparingRebalance is in memory only); what the log shows is
its outcome: a new classic generation with its members and assignments, or a KIP-848 group-epoch bump preceded by
member records and followed by a new target assignment. Causes are therefore inferred by comparing the membership
before and after, which is exactly as far as the records go: the log cannot tell a LeaveGroup from a session expiry
(both are MEMBER_LEFT), nor which join triggered a rebalance that several members joined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from .events import RebalanceCause

__all__ = ["MemberView", "infer_causes", "movement"]

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MemberView:
    """What cause inference needs to know about a member at one generation/epoch."""

    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    topics: frozenset[str]
    assignment: frozenset[TP] | None  # None when not decodable (non-consumer protocol)

    @property
    def identity(self) -> str:
        """Who the member is across restarts: its static instance id, else client id at host."""
        return self.instance_id if self.instance_id is not None else f"{self.client_id}@{self.host}"


def infer_causes(
    before: Mapping[str, MemberView],
    after: Mapping[str, MemberView],
    *,
    leader_before: str | None = None,
    leader_after: str | None = None,
    partitions_before: Mapping[str, int] | None = None,
    partitions_after: Mapping[str, int] | None = None,
    metadata_changed: bool = False,
) -> tuple[tuple[RebalanceCause, ...], tuple[str, ...], tuple[str, ...]]:
    """``(causes, joined member ids, left member ids)`` of one generation/epoch change.

    A static member that came back under a new member id (same ``group.instance.id``) is
    STATIC_MEMBER_REJOINED, not a join plus a leave.
    """
    causes: list[RebalanceCause] = []
    joined_ids = [m for m in after if m not in before]
    left_ids = [m for m in before if m not in after]
    before_static = {v.instance_id: k for k, v in before.items() if v.instance_id is not None}
    rejoined = set()
    for m in joined_ids:
        inst = after[m].instance_id
        if inst is not None and inst in before_static and before_static[inst] in left_ids:
            rejoined.add(m)
            rejoined.add(before_static[inst])
    joined = tuple(sorted(m for m in joined_ids if m not in rejoined))
    left = tuple(sorted(m for m in left_ids if m not in rejoined))
    if joined:
        causes.append(RebalanceCause.MEMBER_JOINED)
    if left:
        causes.append(RebalanceCause.MEMBER_LEFT)
    if rejoined:
        causes.append(RebalanceCause.STATIC_MEMBER_REJOINED)
    if not after and before:
        causes.append(RebalanceCause.GROUP_EMPTIED)
    for m, v in after.items():
        old = before.get(m)
        if old is not None and old.topics != v.topics:
            causes.append(RebalanceCause.SUBSCRIPTION_CHANGED)
            break
    if partitions_before is not None and partitions_after is not None:
        if any(n > partitions_before.get(t, n) for t, n in partitions_after.items()):
            causes.append(RebalanceCause.PARTITIONS_ADDED)
        elif partitions_before != partitions_after:
            causes.append(RebalanceCause.METADATA_CHANGED)
    elif metadata_changed:
        causes.append(RebalanceCause.METADATA_CHANGED)
    if leader_before is not None and leader_after is not None and leader_before != leader_after:
        causes.append(RebalanceCause.LEADER_CHANGED)
    if not causes:
        causes.append(RebalanceCause.UNKNOWN)
    return tuple(dict.fromkeys(causes)), joined, left


def movement(
    before: Mapping[str, Iterable[TP]], after: Mapping[str, Iterable[TP]], identity: Mapping[str, str] | None = None
) -> tuple[int, int]:
    """``(moved, stayed)``: partitions owned before and after, by a different or the same owner.

    ``identity`` maps member ids to a stable identity so a static member's new member id keeps its partitions.
    """
    ident = identity or {}
    owner_before = {tp: ident.get(m, m) for m, tps in before.items() for tp in tps}
    moved = stayed = 0
    for m, tps in after.items():
        who = ident.get(m, m)
        for tp in tps:
            prev = owner_before.get(tp)
            if prev is None:
                continue
            if prev == who:
                stayed += 1
            else:
                moved += 1
    return moved, stayed
