"""The streaming query: Kafka source → fan-out by coordinator shard → stateful step → foreachBatch sinks.

Spark glue only; the domain work is in ``streaming.job.step`` (per shard) and ``streaming.job.batch_sink`` (driver).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from streaming.job.batch_sink import BatchSink
from streaming.job.bulk_files import INLINE_BELOW_ROWS, BulkWrite
from ..config import Settings
from ..model.knobs import build
from streaming.job.step import StepConfig
from streaming.kafka.range_read import RangeRead
from .checkpoint_files import use_for_query
from .source import KafkaRangeSource
from .stateful import OUTPUT_DDL, STATE_DDL, make_state_function

__all__ = ["JobPlan", "step_config", "start_query", "executor_written_tables", "builtin_source_assignment"]

log = logging.getLogger("groupscope.job")


@dataclass(frozen=True)
class JobPlan:
    offsets_partitions: int  # shards: partitions of __consumer_offsets
    heartbeat_topic: str
    offsets_topic: str


def step_config(settings: Settings) -> StepConfig:
    """The step's configuration: every knob from the ``model:`` section (streaming.model.knobs), the rest from the
    sections it belongs to."""
    return build(StepConfig, settings.model.model_dump(), heartbeat_topic=settings.heartbeat.topic,
                 offsets_topic=settings.source.offsets_topic,
                 partition_rows_every_snapshot=settings.partition_rows_on_driver)


BULK_TABLES = frozenset({"commits", "lag"})


def executor_written_tables(settings: Settings, sink: BatchSink) -> frozenset[str]:
    """The tables whose data files the executors write (none when the driver must write everything)."""
    d = settings.delta
    delta = getattr(sink, "delta", None)
    if not (d.enabled and d.write_on_executors and d.writer == "deltalake" and not d.storage_options
            and delta is not None):
        return frozenset()
    return BULK_TABLES


def builtin_source_assignment(settings: Settings, plan: JobPlan) -> str:
    """The ``assign`` option of Spark's own ``kafka`` source: every partition of ``__consumer_offsets`` and of the
    heartbeat topic, by name. With ``subscribe`` the consumer that looks up offsets on the driver joins a consumer
    group of its own (``spark-kafka-source-...``), which the job then watches as one more group; assigned
    partitions need no group. The heartbeat topic's partitions are looked up now (the emitter created it before
    the query starts)."""
    import json

    from streaming.kafka.client import KafkaAccess

    heartbeat = KafkaAccess(settings.kafka).partitions(plan.heartbeat_topic) or [0]
    return json.dumps({plan.offsets_topic: list(range(plan.offsets_partitions)), plan.heartbeat_topic: heartbeat})


def start_query(spark, settings: Settings, plan: JobPlan, sink: BatchSink, *, query_name: str = "groupscope",
                segments: str | None = None):
    """Starts the streaming query of one cluster (``query_name`` is unique within the Spark application).

    ``segments``: read ``__consumer_offsets`` from the segment files under this folder instead of from Kafka, once
    (``groupscope backfill``): the query stops by itself when it has read them all."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    spark.dataSource.register(KafkaRangeSource)
    src = settings.source
    if segments is not None:
        from .segment_source import SegmentSource

        spark.dataSource.register(SegmentSource)
        reader = (spark.readStream.format("groupscope_segments").option("path", segments)
                  .option("topic", plan.offsets_topic).option("readTasks", str(src.read_tasks)))
        if src.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(src.max_offsets_per_trigger))
    elif src.builtin_kafka_source:
        # Spark's default offset reader (Kafka's Admin API) finds no offsets for an internal topic, and the query
        # then reads nothing from __consumer_offsets, silently; the consumer-based reader it replaced finds them.
        spark.conf.set("spark.sql.streaming.kafka.useDeprecatedOffsetFetching", "true")
        reader = (spark.readStream.format("kafka")
                  .option("assign", builtin_source_assignment(settings, plan))
                  .option("startingOffsets", src.starting_offsets)
                  .option("kafka.isolation.level", "read_committed")
                  .option("failOnDataLoss", "false"))
        if src.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(src.max_offsets_per_trigger))
    else:
        reader = (spark.readStream.format("groupscope_kafka")
                  .option("topics", f"{plan.offsets_topic},{plan.heartbeat_topic}")
                  .option("startingOffsets", src.starting_offsets)
                  .option("readTasks", str(src.read_tasks))
                  .option("unlimitedTopics", plan.heartbeat_topic)
                  .option("timeoutSeconds", str(src.read_timeout_seconds))
                  .option("packed", "true")
                  .option("reader", src.reader))
        if src.read_in_steps:
            reader = reader.option("deferredTopics", plan.offsets_topic)
        if src.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(src.max_offsets_per_trigger))
    if segments is None:
        for key, value in settings.kafka.items():
            reader = reader.option(f"kafka.{key}", value)
    raw = reader.load()
    if src.builtin_kafka_source and segments is None:
        raw = raw.select("key", "value", "topic", "partition", "offset", "timestamp")

    # Heartbeats reach every shard; a record (or a packed chunk) belongs to the shard of its own __consumer_offsets
    # partition.
    shards = F.when(F.col("topic") == F.lit(plan.heartbeat_topic),
                    F.sequence(F.lit(0), F.lit(plan.offsets_partitions - 1))).otherwise(F.array(F.col("partition")))
    keyed = raw.withColumn("shard", F.explode(shards))
    # Live, a shard with no records still runs every few seconds (its groups' statuses age with the clock). A
    # backfill has no clock to follow, and Spark's available-now trigger would never end while timeouts are due.
    timeout_ms = None if segments is not None else \
        int(max(settings.model.snapshot_interval_seconds, settings.heartbeat.interval_seconds) * 2000)
    bulk = executor_written_tables(settings, sink)
    bulk_write = None
    if bulk:
        sink.delta.prepare_append_tables(sorted(bulk))
        bulk_write = BulkWrite(sink.delta.root, bulk, also_to_driver=(frozenset({"lag"})
                                                                      if settings.partition_rows_on_driver
                                                                      else frozenset()),
                               inline_below=INLINE_BELOW_ROWS)
        log.info("executors write the data files of %s; the driver commits them", ", ".join(sorted(bulk)))
    in_steps = src.read_in_steps and segments is None and not src.builtin_kafka_source
    ranges = RangeRead({str(k): str(v) for k, v in settings.kafka.items()}, src.read_timeout_seconds,
                       "read_committed", src.reader) if in_steps else None
    out = keyed.groupBy("shard").applyInPandasWithState(
        make_state_function(step_config(settings), timeout_ms, bulk_write, ranges,
                            keep_steps=spark.sparkContext.getConf().get("spark.python.worker.reuse", "true")
                            .strip().lower() == "true"),
        outputStructType=OUTPUT_DDL,
        stateStructType=STATE_DDL,
        outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout if timeout_ms is None else GroupStateTimeout.ProcessingTimeTimeout,
    )

    def foreach_batch(df, batch_id: int) -> None:
        # Arrow, not Row objects: the payloads (Arrow IPC of the shard steps' tables) reach the driver as buffers.
        out = df.toArrow()
        rows = list(zip(out.column("shard").to_pylist(), out.column("kind").to_pylist(),
                        out.column("payload").to_pylist()))
        sink.handle(batch_id, rows)

    # Read by Spark as the query starts: how it writes this checkpoint's files (see checkpoint_files).
    manager = use_for_query(spark, settings.spark.checkpoint, dict(settings.spark.conf))
    if manager is not None:
        log.debug("checkpoint files written with %s", manager)
    writer = (out.writeStream.foreachBatch(foreach_batch)
              .option("checkpointLocation", settings.spark.checkpoint)
              .queryName(query_name))
    trigger = settings.spark.trigger_seconds
    if segments is not None:
        writer = writer.trigger(availableNow=True)
    elif trigger > 0:
        writer = writer.trigger(processingTime=f"{trigger} seconds")
    return writer.start()
