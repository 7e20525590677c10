"""Rebalances: their causes from the records, partition movement, and storm versus rolling-restart detection.

Kafka writes nothing when a rebalance starts (spec §5.2: PreparingRebalance is in memory only); what the log shows is
its outcome: a new classic generation with its members and assignments, or a KIP-848 group-epoch bump preceded by
member records and followed by a new target assignment. Causes are therefore inferred by comparing the membership
before and after, which is exactly as far as the records go: the log cannot tell a LeaveGroup from a session expiry
(both are MEMBER_LEFT), nor which join triggered a rebalance that several members joined.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable, Mapping

from .events import RebalanceCause, RebalanceStorm, RollingRestart

__all__ = ["MemberView", "RebalanceConfig", "infer_causes", "movement", "StormDetector"]

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


@dataclass(frozen=True, slots=True)
class RebalanceConfig:
    """Storm detection: ``storm_rebalances`` within ``storm_window_ms``.

    Raises:
        ValueError: non-positive values.
    """

    storm_rebalances: int = 5
    storm_window_ms: int = 600_000

    def __post_init__(self) -> None:
        if self.storm_rebalances < 2 or self.storm_window_ms <= 0:
            raise ValueError("rebalance config: storm_rebalances >= 2 and storm_window_ms > 0 required")


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


class StormDetector:
    """Counts rebalances per group in a sliding window and tells a storm from a rolling restart.

    A rolling restart (a deploy) bounces each member identity once: in the window only membership changed, every
    identity left at most once, and the group ends the window as large as it started it, give or take the one
    member being restarted right now (each departure was replaced). A storm is anything else that reaches the threshold: the same identities flapping, a group that keeps
    shrinking or growing, or rebalances with no membership cause (metadata churn, unknown). Cooperative follow-up
    rebalances are not reported here by the callers: they are the second half of one incremental rebalance.

    One event is emitted when the window first reaches the threshold, and again for every further full window the
    group stays at or above it (a storm that lasts an hour is reported six times at a 10-minute window, so a
    counter of storms keeps rising while it lasts and alerts on its increase keep firing). Once the window drains
    below the threshold the next event starts a new storm.
    """

    __slots__ = ("config", "recent", "alerting")

    def __init__(self, config: RebalanceConfig = RebalanceConfig()) -> None:
        self.config = config
        self.recent: dict[str, deque] = {}
        self.alerting: dict[str, int] = {}  # group -> timestamp of its last storm / rolling-restart event

    def observe(self, group_id: str, offset: int, timestamp: int, causes: tuple[RebalanceCause, ...],
                left_identities: tuple[str, ...], members_before: int = 0, members_after: int = 0):
        """Records one rebalance; returns a RebalanceStorm, a RollingRestart or None."""
        cfg = self.config
        q = self.recent.setdefault(group_id, deque())
        q.append((timestamp, causes, left_identities, members_before, members_after))
        while q and q[0][0] < timestamp - cfg.storm_window_ms:
            q.popleft()
        if len(q) < cfg.storm_rebalances:
            self.alerting.pop(group_id, None)
            return None
        last = self.alerting.get(group_id)
        if last is not None and timestamp - last < cfg.storm_window_ms:
            return None
        self.alerting[group_id] = timestamp
        seen: dict[str, int] = {}
        membership_only = True
        for _, cs, left, _, _ in q:
            for ident in left:
                seen[ident] = seen.get(ident, 0) + 1
            if not set(cs) & {RebalanceCause.MEMBER_JOINED, RebalanceCause.MEMBER_LEFT,
                              RebalanceCause.STATIC_MEMBER_REJOINED}:
                membership_only = False
        window_s = (timestamp - q[0][0]) / 1000.0
        size_restored = q[-1][4] >= q[0][3] - 1  # mid-deploy, the member being restarted may still be out
        if membership_only and seen and size_restored and all(n == 1 for n in seen.values()):
            return RollingRestart(group_id, offset, timestamp, len(q), window_s, q[0][0], tuple(sorted(seen)))
        return RebalanceStorm(group_id, offset, timestamp, len(q), window_s, q[0][0])

    def forget(self, group_id: str) -> None:
        self.recent.pop(group_id, None)
        self.alerting.pop(group_id, None)

    def to_tuple(self) -> tuple:
        return (tuple((g, tuple((t, tuple(c.value for c in cs), left, mb, ma) for t, cs, left, mb, ma in q))
                      for g, q in self.recent.items()), tuple(self.alerting.items()))

    def load(self, t: tuple) -> None:
        for g, items in t[0]:
            self.recent[g] = deque((ts, tuple(RebalanceCause(c) for c in cs), left, mb, ma)
                                   for ts, cs, left, mb, ma in items)
        # Older states listed alerting groups without the time of their event: count that as "just now".
        if all(isinstance(a, (tuple, list)) for a in t[1]):
            self.alerting = {g: ts for g, ts in t[1]}
        else:
            self.alerting = {g: (self.recent[g][-1][0] if self.recent.get(g) else 0) for g in t[1]}
