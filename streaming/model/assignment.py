"""Assignment analysis: skew per group and topic now, and what each classic assignor would do instead.

Uses ``streaming.model.assignors`` (Kafka's range / roundrobin / sticky / cooperative-sticky, step by step) for the
what-if: for the group's current subscriptions and partition counts, the assignment each strategy would compute,
its balance, and how many partitions would move from the current owners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from .assignors import STRATEGIES, analyse, assign, movement
from .shard import GroupCoordinatorShard

__all__ = ["Skew", "WhatIf", "skew", "what_if", "what_if_document", "partitions_per_topic"]


@dataclass(frozen=True, slots=True)
class Skew:
    """Partitions per member: overall and per topic (max − min among the members that hold or want the topic)."""

    loads: tuple[tuple[str, int], ...]
    skew: int
    topic_skew: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class WhatIf:
    strategy: str
    assignment: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    skew: int
    is_balanced: bool
    moved: int
    stayed: int


def skew(assignment: Mapping[str, Sequence[tuple[str, int]]], subscriptions: Mapping[str, Sequence[str]]) -> Skew:
    """Skew of an assignment: a member subscribed to a topic but holding none of it counts as 0."""
    loads = {m: len(tps) for m, tps in assignment.items()}
    topics = sorted({t for subs in subscriptions.values() for t in subs} | {t for tps in assignment.values()
                                                                             for t, _ in tps})
    per_topic = []
    for t in topics:
        counts = [sum(1 for tt, _ in assignment.get(m, ()) if tt == t) for m in assignment
                  if t in subscriptions.get(m, ()) or any(tt == t for tt, _ in assignment[m])]
        per_topic.append((t, (max(counts) - min(counts)) if counts else 0))
    vals = list(loads.values())
    return Skew(tuple(sorted(loads.items())), (max(vals) - min(vals)) if vals else 0, tuple(per_topic))


def partitions_per_topic(shard: GroupCoordinatorShard, group_id: str) -> dict[str, int]:
    """Partition counts as far as the shard knows them: KIP-848 subscription metadata, else end offsets seen,
    else the highest partition assigned or committed."""
    g = shard.groups.get(group_id)
    counts: dict[str, int] = {}
    if g is not None:
        counts.update(g.partition_counts())
    for (topic, p) in shard.ends:
        counts[topic] = max(counts.get(topic, 0), p + 1)
    for m in shard.member_views(group_id):
        for topic, p in m.assignment:
            counts[topic] = max(counts.get(topic, 0), p + 1)
    for topic, p, *_ in shard.offsets.iter_group(group_id):
        counts[topic] = max(counts.get(topic, 0), p + 1)
    return counts


def what_if(shard: GroupCoordinatorShard, group_id: str, strategies: Sequence[str] = STRATEGIES,
            counts: Mapping[str, int] | None = None) -> list[WhatIf]:
    """Each strategy's assignment for the group's current members and subscriptions, with movement vs now.

    Raises:
        KeyError: the shard has no such group.
        ValueError: an unknown strategy.
    """
    g = shard.groups[group_id]
    members = shard.member_views(group_id)
    subs = g.subscriptions()
    current = {m.member_id: list(m.assignment) for m in members}
    counts = dict(counts) if counts is not None else partitions_per_topic(shard, group_id)
    counts = {t: n for t, n in counts.items() if any(t in s for s in subs.values())}
    instance_ids = {m.member_id: m.instance_id for m in members}
    owned = current if g.assigns_on_client else None
    out = []
    for strategy in strategies:
        result = assign(strategy, subs, counts, owned=owned, instance_ids=instance_ids)
        stats = analyse(result, subs, counts)
        mv = movement(current, result)
        out.append(WhatIf(strategy, tuple((m, tuple(tps)) for m, tps in sorted(result.items())), stats.skew,
                          stats.is_balanced, len(mv.moved), len(mv.stayed)))
    return out


def what_if_document(shard: GroupCoordinatorShard, group_id: str,
                     end_offsets: Mapping[tuple[str, int], int] | None = None) -> dict:
    """What ``groupscope describe --what-if`` prints: the group's members now and, per strategy, the assignment it
    would compute with what moves. Partition counts come from ``end_offsets`` (the log ends the user gave) where
    they name a topic, else from what the shard knows (:func:`partitions_per_topic`).

    Raises:
        KeyError: the shard has no such group.
    """
    counts = partitions_per_topic(shard, group_id)
    for topic, partition in end_offsets or ():
        counts[topic] = max(counts.get(topic, 0), partition + 1)
    members = shard.member_views(group_id)
    results = what_if(shard, group_id, counts=counts)
    return {
        "group_id": group_id,
        "members": [{"member_id": m.member_id, "assignment": [list(tp) for tp in m.assignment]} for m in members],
        "partitions": dict(sorted(counts.items())),
        "strategies": [{"strategy": r.strategy, "moved": r.moved, "stayed": r.stayed, "skew": r.skew,
                        "balanced": r.is_balanced,
                        "assignment": {m: [list(tp) for tp in tps] for m, tps in r.assignment}} for r in results],
    }
