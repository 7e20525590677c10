"""What every group class shares: identity, rebalance bookkeeping and the view helpers describe/snapshot use."""

from __future__ import annotations

from typing import Mapping

from protocol.records import TopicIdPartitions

from .states import GroupType

__all__ = ["GroupBase", "resolve", "TP"]

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
