"""The driver's state store: the latest read model of every group, fed by micro-batches and read by ``/metrics``, the
HTTP API and the demo's live view.

Each batch arrives as one :class:`~streaming.schema.read_model.BatchView` (typed once from the batch's rows);
readers take a :class:`StateView`, a consistent copy, and read attributes: nothing here or after coerces a row.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streaming.schema.read_model import (ACTIVITY_EVENT_KINDS, RECENT_WINDOW_MS, BatchView, GroupActivity, GroupView,
                                         PartitionView)
from streaming.sinks.monitor_health import MonitorHealth

__all__ = ["StateView", "MetricsState", "METRIC_EVENT_KINDS", "STORE_EVENT_KINDS"]

# The event kinds that change /metrics; the others (status changes, rebalances, joins) reach the metrics through the
# group rows' counters and statuses.
METRIC_EVENT_KINDS: tuple[str, ...] = ("GroupDeleted", "OffsetDeleted", "Anomaly")
# The event kinds the store acts on at all: those, and the rebalances and verdicts of each group's recent activity
# (the live view's). A cold start's first batch carries one status event per group-partition, so a caller leaves
# the rest out before turning rows into Python values (tens of thousands of rows).
STORE_EVENT_KINDS: tuple[str, ...] = (*METRIC_EVENT_KINDS, *ACTIVITY_EVENT_KINDS)


@dataclass(frozen=True, slots=True)
class StateView:
    """A consistent copy of the state for one scrape or request. Values are shared, never mutated (copy on write).

    ``activity``: each group's rebalances and verdicts of the last hour or so this job has seen (the live view's
    REB and VERDICT columns)."""

    groups: Mapping[str, GroupView]
    partitions: Mapping[str, Mapping[tuple[str, int], PartitionView]]
    health: MonitorHealth
    anomalies: int
    activity: Mapping[str, GroupActivity] = field(default_factory=dict)
    version: int = 0  # counts the batches applied: equal versions, equal groups and partitions

    def group_partitions(self, group: str) -> list[tuple[str, int, PartitionView]]:
        """The group's partitions with a committed offset, by topic then partition."""
        return [(t, n, p) for (t, n), p in sorted(self.partitions.get(group, {}).items())]

    def topic_end_offsets(self) -> dict[str, dict[int, int]]:
        """Per topic and partition, the newest end offset any group's lag was measured against (-1 where some group
        commits to the partition but no end is known): groupscope keeps end offsets only beside a committed one."""
        out: dict[str, dict[int, int]] = {}
        for parts in self.partitions.values():
            for (topic, partition), p in parts.items():
                ends = out.setdefault(topic, {})
                end = p.log_end_offset
                if end is not None and end > ends.get(partition, -1):
                    ends[partition] = end
                else:
                    ends.setdefault(partition, -1)
        return out


class MetricsState:
    """Thread-safe latest state of every group, fed by micro-batches on the driver and read by scrapes.

    * Group views replace the group's previous one; ``deleted`` removes the group.
    * Partition views come per group snapshot, all of a group's partitions at once: they replace that group's
      partitions, so an offset that is gone from the snapshot is gone here. A group with no partitions clears them.
    * Group views carry every per-group counter (rebalances, verdicts, partitions moved, causes): they come from
      the checkpointed model, so a restarted job exports the same totals, never counts restarting from 0.
    * Deletions: ``OffsetDeleted`` removes the partition; ``GroupDeleted`` or ``OffsetDeleted`` for a group that has
      no live view in the same batch removes the group (the step emits a row for every group its records touched
      while the model still knows it, so no row means the group is gone).
    * Anomalies and activity are counted once per ``batch_id``: a micro-batch that Spark re-runs after a failure
      does not count them twice.

    ``keep_partitions=False`` (partition-level series off) ignores partition views, so the driver holds nothing per
    partition.
    """

    def __init__(self, *, keep_partitions: bool = True) -> None:
        self.keep_partitions = keep_partitions
        self._lock = threading.Lock()
        self._groups: dict[str, GroupView] = {}
        self._partitions: dict[str, Mapping[tuple[str, int], PartitionView]] = {}
        self._activity: dict[str, GroupActivity] = {}
        self._health = MonitorHealth()
        self._anomalies = 0
        self._last_batch_id: int | None = None
        self._version = 0

    def apply_batch(self, group_rows: Iterable[Mapping[str, Any]] = (),
                    partition_rows: Iterable[Mapping[str, Any]] | None = None,
                    event_rows: Iterable[Mapping[str, Any]] = (), health: MonitorHealth | None = None, *,
                    batch_id: int | None = None) -> None:
        """:meth:`apply` of a batch given as rows of ``streaming.schema.tables`` (any part may be empty).

        Raises:
            ValueError: a row without ``group_id`` (or a partition row without topic/partition).
        """
        self.apply(BatchView.of_rows(group_rows, partition_rows if self.keep_partitions else None, event_rows),
                   health, batch_id=batch_id)

    def apply(self, batch: BatchView, health: MonitorHealth | None = None, *, batch_id: int | None = None) -> None:
        """Applies one micro-batch; then the next scrape sees it."""
        with self._lock:
            self._version += 1
            count_events = batch_id is None or self._last_batch_id is None or batch_id > self._last_batch_id
            if batch_id is not None and count_events:
                self._last_batch_id = batch_id
            if count_events:
                self._anomalies += batch.anomalies
                self._add_activity(batch.activity)
            for gid, topic, partition in batch.offsets_deleted:
                parts = self._partitions.get(gid)
                if parts is not None and (topic, partition) in parts:
                    parts = dict(parts)  # copy on write: a view handed to a scrape may hold the old mapping
                    del parts[(topic, partition)]
                    self._partitions[gid] = parts
            live = set()
            for g in batch.groups:
                if g.deleted:
                    self._forget(g.group_id)
                    continue
                live.add(g.group_id)
                self._groups[g.group_id] = g
                if not g.partition_count:
                    self._partitions.pop(g.group_id, None)
            if self.keep_partitions:
                self._partitions.update(batch.partitions)
            for gid in batch.deletions - live:
                self._forget(gid)
            if health is not None:
                self._health = health

    def set_health(self, health: MonitorHealth) -> None:
        """Replaces the monitor's health (between batches, e.g. the query restart count)."""
        with self._lock:
            self._health = health

    @property
    def health(self) -> MonitorHealth:
        with self._lock:
            return self._health

    def view(self) -> StateView:
        """A consistent copy for one scrape; building families then needs no lock."""
        with self._lock:
            return StateView(dict(self._groups), dict(self._partitions), self._health, self._anomalies,
                             dict(self._activity), self._version)

    # ---- internals ------------------------------------------------------------------------------------------

    def _add_activity(self, batch: Mapping[str, GroupActivity]) -> None:
        """Merges the batch's activity and forgets rebalances more than the recent window before the newest event
        seen, so the store stays as small as the window however long the job runs."""
        if not batch:
            return
        newest = max((a.last_event_ms for a in batch.values() if a.last_event_ms is not None), default=0)
        for gid, new in batch.items():
            old = self._activity.get(gid)
            self._activity[gid] = new if old is None else old.merged(new)
        cutoff = newest - RECENT_WINDOW_MS
        for gid, a in list(self._activity.items()):
            a = a.since(cutoff)
            if a.rebalance_ms or (a.last_verdict_ms is not None and a.last_verdict_ms >= cutoff):
                self._activity[gid] = a
            else:  # nothing left that is recent: a group that rebalanced once, long ago, costs nothing
                del self._activity[gid]

    def _forget(self, gid: str) -> None:
        self._groups.pop(gid, None)
        self._partitions.pop(gid, None)
        self._activity.pop(gid, None)
