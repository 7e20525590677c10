"""What the two Python streaming sources share: offsets per topic-partition in Spark's checkpoint, a read limit of
records per trigger, and a batch cut into read tasks of offset ranges (the rules themselves are the plain functions
of :mod:`streaming.kafka.planning`)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from ..kafka.planning import Offsets, from_json_offsets, limit_offsets, plan_ranges, split_tasks, to_json_offsets

__all__ = ["RangeTask", "RangeReader"]


@dataclass(frozen=True)
class RangeTask(InputPartition):
    ranges: tuple  # of OffsetRange


class RangeReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A stream reader over offset ranges; subclasses say where each partition ends (:meth:`ends`, None when the
    source cannot tell right now) and read a task's ranges."""

    max_rows: int | None = None
    read_tasks: int = 2
    unlimited: frozenset[str] = frozenset()
    deferred: frozenset[str] = frozenset()  # topics whose ranges the read tasks only name (see ``split_tasks``)

    def ends(self) -> Offsets | None:
        raise NotImplementedError

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark's name)
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
        ends = self.ends()
        if ends is None:
            return start  # no news; the next trigger asks again
        start_offsets = from_json_offsets(start or {})
        # Partitions a restart has not seen yet (new partitions) start from 0, like Spark's Kafka source.
        for tp in ends:
            start_offsets.setdefault(tp, 0)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return to_json_offsets(limit_offsets(start_offsets, ends, max_rows, unlimited_topics=self.unlimited))

    def partitions(self, start: dict, end: dict):
        ranges = plan_ranges(from_json_offsets(start or {}), from_json_offsets(end))
        return [RangeTask(tuple(group)) for group in split_tasks(ranges, self.read_tasks, self.deferred)]

    def commit(self, end: dict) -> None:
        pass  # offsets are in Spark's checkpoint; nothing is committed anywhere else
