"""A Spark Python Data Source reading ``__consumer_offsets`` from segment files: ``format("groupscope_segments")``.

``groupscope backfill`` runs the streaming job on a copy of a broker's log directory (a backup, a decommissioned
cluster, a snapshot taken for forensics), so the history it holds reaches the Delta tables through the same shard
steps as live records. The rows are those of the Kafka source (packed per partition chunk, see
:mod:`streaming.job.packed`) and hold exactly what a ``read_committed`` consumer of that broker would read
(:mod:`streaming.offline.committed`). The executors read the files, so on a cluster the folder must be on a file
system every executor reaches.

Offsets are Kafka's own record offsets per partition, kept in Spark's checkpoint like the Kafka source's; a
partition ends one past its last record. Options: ``path`` (a log directory or ``__consumer_offsets-N`` folders),
``topic`` (the name the rows carry, ``__consumer_offsets``), ``maxoffsetspertrigger``, ``readtasks``.
"""

from __future__ import annotations

import logging
from typing import Iterator

from pyspark.sql.datasource import DataSource

from streaming.job.packed import PACKED_DDL
from ..kafka.planning import to_json_offsets
from .ranges import RangeReader, RangeTask

__all__ = ["SegmentSource"]

log = logging.getLogger("groupscope.backfill")


class SegmentSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "groupscope_segments"

    def schema(self) -> str:
        return PACKED_DDL

    def streamReader(self, schema):  # noqa: N802 (Spark's name)
        return _Reader(self.options)


class _Reader(RangeReader):
    def __init__(self, options) -> None:
        opts = {str(k).lower(): str(v) for k, v in dict(options).items()}
        if not opts.get("path"):
            raise ValueError("groupscope_segments source needs the option path")
        self.path = opts["path"]
        self.topic = opts.get("topic", "__consumer_offsets")
        self.max_rows = int(opts["maxoffsetspertrigger"]) if opts.get("maxoffsetspertrigger") else None
        self.read_tasks = int(opts.get("readtasks", "2"))

    def _segments(self) -> dict[int, list]:
        from ..offline.segments import find_segments

        by_partition: dict[int, list] = {}
        for segment in find_segments(self.path):
            if segment.partition is None:
                raise ValueError(f"{segment.path}: a segment outside a {self.topic}-N folder has no partition")
            by_partition.setdefault(segment.partition, []).append(segment)
        return by_partition

    def ends(self) -> dict[tuple[str, int], int]:
        from ..offline.committed import log_end_offset

        return {(self.topic, p): log_end_offset(s) for p, s in self._segments().items()}

    def initialOffset(self) -> dict:  # noqa: N802
        return to_json_offsets({(self.topic, p): min(s.base_offset or 0 for s in segs)
                                for p, segs in self._segments().items()})

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        pass  # the files do not grow: every trigger's end is where they end

    def read(self, partition: RangeTask) -> Iterator:
        from streaming.job.packed import pack
        from ..offline.committed import CommittedReader

        segments = self._segments()
        for r in partition.ranges:
            reader = CommittedReader(segments.get(r.partition, []), topic=self.topic, partition=r.partition)
            for batch in reader.read(r.start, r.end):
                yield from pack(batch)
            for problem in reader.report.problems:
                log.warning("%s", problem)
