"""What the API reads for one cluster: its name, how it is reached, and a function returning its latest state.

A :class:`ClusterSource` takes a fresh :class:`~streaming.sinks.prometheus.StateView` per request, so every response
is built from one consistent copy (a batch applied mid-request changes the next response, never half of this one).
The API serves a mapping of cluster name to source; the job has one cluster today, several later.

The helpers below read the rows of ``streaming.schema.tables`` as the metrics state keeps them: times arrive as
epoch milliseconds (rows built by ``tables.group_row``) or as ``datetime`` (rows read back from Arrow), statuses as
names on group rows and as ``Status`` numbers on partition figures.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streaming.model.rules import Status
from streaming.sinks.prometheus import MetricsState, PartitionFigures, StateView

__all__ = ["ClusterInfo", "ClusterSource", "time_ms", "number", "int_or_none", "group_status",
           "partition_status", "group_partitions", "members_by_id", "topic_end_offsets"]


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """How groupscope reaches a cluster, for Burrow's cluster detail (no secrets: names and intervals only)."""

    servers: tuple[str, ...] = ()
    client_id: str = "groupscope"
    # How often end offsets are listed (the heartbeat interval): Burrow's topic-refresh and offset-refresh.
    refresh_seconds: float = 0.0
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    sasl_username: str = ""


@dataclass(frozen=True)
class ClusterSource:
    """One cluster the API serves: ``view()`` returns its latest state (called once per request)."""

    name: str
    view: Callable[[], StateView]
    info: ClusterInfo = field(default_factory=ClusterInfo)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"a cluster name must be non-empty and without '/', got {self.name!r}")

    @classmethod
    def of_state(cls, name: str, state: MetricsState, info: ClusterInfo | None = None) -> ClusterSource:
        return cls(name, state.view, info or ClusterInfo())


def time_ms(value: Any) -> int | None:
    """A row time as epoch milliseconds: epoch ms, Unix seconds as float (partition figures), ``datetime``,
    pandas ``Timestamp`` or None."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return round(value.timestamp() * 1000)
    if hasattr(value, "timestamp"):
        return round(float(value.timestamp()) * 1000)
    if isinstance(value, float):
        return None if math.isnan(value) else round(value * 1000)
    return int(value)


def number(value: Any) -> float | None:
    if value is None:
        return None
    f = float(value)
    return None if math.isnan(f) else f


def int_or_none(value: Any) -> int | None:
    f = number(value)
    return None if f is None else int(f)


def group_status(row: Mapping[str, Any]) -> Status | None:
    try:
        return Status[str(row["status"])] if row.get("status") else None
    except KeyError:
        return None


def partition_status(p: PartitionFigures) -> Status | None:
    return None if p.status is None else Status(int(p.status))


def group_partitions(view: StateView, group: str) -> list[tuple[str, int, PartitionFigures]]:
    """The group's partitions with a committed offset, by topic then partition."""
    return [(t, n, p) for (t, n), p in sorted(view.partitions.get(group, {}).items())]


def members_by_id(row: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(m.get("member_id")): m for m in row.get("members") or () if m.get("member_id")}


def topic_end_offsets(view: StateView) -> dict[str, dict[int, int]]:
    """Per topic and partition, the newest end offset any group's lag was measured against (groupscope lists end
    offsets for the heartbeat, and the state keeps them only beside some group's committed offset)."""
    out: dict[str, dict[int, int]] = {}
    for parts in view.partitions.values():
        for (topic, partition), p in parts.items():
            ends = out.setdefault(topic, {})
            end = int_or_none(p.log_end_offset)
            if end is not None and end > ends.get(partition, -1):
                ends[partition] = end
            else:
                ends.setdefault(partition, -1)
    return out
