"""``groupscope backfill``: the streaming job run once over a broker's segment files instead of a live Kafka.

Same query, same shard steps, same Delta writers (executors writing the bulk tables, one transaction per table and
batch with the exactly-once app id), fed by :mod:`streaming.spark.segment_source`: the tables end up holding what a
live job would have written had it read that history from the broker. Lag needs end offsets from heartbeats, which
segment files do not have, so a backfill writes commits, events and group states, not lag. The query runs with
Spark's available-now trigger and ends when every partition has been read; a second run with the same checkpoint
reads only what the files gained since.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from streaming.config import Settings
from streaming.job.batch_sink import BatchResult, BatchSink
from streaming.progress import OffsetsRead, Progress

__all__ = ["BackfillReport", "run_backfill"]

log = logging.getLogger("groupscope.backfill")


@dataclass
class BackfillReport:
    partitions: int = 0
    batches: int = 0
    records: int = 0
    commits: int = 0
    groups: int = 0
    seconds: float = 0.0
    spark_start_seconds: float = 0.0


def offsets_to_read(settings: Settings, segments_path: str) -> dict[int, tuple[int, int]]:
    """``{partition: (first offset to read, log end)}`` of the segment files: from where the checkpoint of an
    earlier run ended, else from each partition's first segment."""
    from streaming.driver.progress import checkpoint_position
    from streaming.offline.committed import log_end_offset
    from streaming.offline.segments import find_segments

    by_partition: dict[int, list] = {}
    for segment in find_segments(segments_path):
        if segment.partition is not None:
            by_partition.setdefault(segment.partition, []).append(segment)
    resumed = checkpoint_position(settings.spark.checkpoint, settings.source.offsets_topic)
    done = resumed[1] if resumed is not None else {}
    return {p: (max(done.get(p, 0), min(s.base_offset or 0 for s in segs)), log_end_offset(segs))
            for p, segs in by_partition.items()}


def run_backfill(settings: Settings, segments_path: str, *, jvm_log: str | None = None,
                 progress: Progress | None = None) -> BackfillReport:
    """Runs the job over the segment files under ``segments_path`` into the configured Delta tables; returns what
    it read and wrote. Raises ``SegmentPathError`` for a path without segments, ``RuntimeError`` for a failed query.
    ``progress``: told the offsets read of the total to read (markers and aborted records included), batch by
    batch."""
    from streaming.driver.runner import refuse_tables_of_another_checkpoint
    from streaming.offline.segments import find_segments
    from streaming.sinks.delta import DeltaSink
    from streaming.spark.job import JobPlan, start_query
    from streaming.spark.session import build_session, stop_session

    started = time.monotonic()
    report = BackfillReport()
    partitions = sorted({s.partition for s in find_segments(segments_path) if s.partition is not None})
    if not partitions:
        raise ValueError(f"{segments_path}: no {settings.source.offsets_topic}-N folders (segments outside one have no "
                         "partition, and the job needs it to find each group's shard)")
    report.partitions = len(partitions)
    s = settings
    delta = DeltaSink(s.delta.path, app_id=f"groupscope-{s.cluster}", storage_options=s.delta.storage_options) \
        if s.delta.enabled else None
    if delta is not None:
        refuse_tables_of_another_checkpoint(delta, s.spark.checkpoint)

    read = OffsetsRead(offsets_to_read(s, segments_path) if progress is not None else {})
    if progress is not None:
        progress.update(total_records=read.total)

    def counted(result: BatchResult) -> None:
        records = sum(h.records for h in result.health)
        report.batches += 1
        report.records += records
        report.commits += result.written.get("commits", 0)
        log.info("batch %d: %d records", result.batch_id, records)
        if progress is not None:
            progress.update(records=read.read_to({h.shard: h.last_offset + 1 for h in result.health}))

    sink = BatchSink(delta=delta, on_batch=counted)
    sp = s.spark
    spark = build_session(master=sp.master, app_name=f"{sp.app_name}-backfill", shuffle_partitions=sp.shuffle_partitions,
                          driver_memory=sp.driver_memory, conf=sp.conf, jvm_log=jvm_log,
                          class_archive=sp.class_archive)
    report.spark_start_seconds = time.monotonic() - started
    try:
        # No heartbeat topic in segment files: the plan names none, so no chunk is routed as a heartbeat.
        plan = JobPlan(max(partitions) + 1, heartbeat_topic="", offsets_topic=s.source.offsets_topic)
        query = start_query(spark, s, plan, sink, query_name="groupscope-backfill", segments=segments_path)
        from streaming.spark import worker_daemon

        worker_daemon.start_early(spark)  # while the first batch is planned
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
            raise
        failure = query.exception()
        if failure is not None:
            from streaming.driver.progress import query_error_line

            raise RuntimeError(f"the backfill query failed: {query_error_line(str(failure))}")
    finally:
        stop_session(spark)
    if delta is not None:
        report.groups = delta.read("groups").num_rows
    report.seconds = time.monotonic() - started
    return report
