"""Reads explicit offset ranges of Kafka partitions into Arrow batches (the executor side of the Spark source).

A range reader, not a group consumer: Spark decides the ranges (its checkpoint holds the offsets), so the consumer
uses ``assign`` and never commits. With ``isolation.level=read_committed`` aborted records and control markers are
never delivered, so a range is complete when the consumer's *position* reaches its end, not when a record with
offset ``end - 1`` arrives (that offset may be a marker).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import pyarrow as pa
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, TopicPartition

from ..tables import SOURCE
from .client import consumer_config

__all__ = ["OffsetRange", "read_ranges", "RANGE_SCHEMA", "ReadTimeout"]

RANGE_SCHEMA = SOURCE


class ReadTimeout(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # inclusive
    end: int  # exclusive

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def _batch(keys, values, topics, partitions, offsets, timestamps) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.binary()), pa.array(values, pa.binary()), pa.array(topics, pa.string()),
         pa.array(partitions, pa.int32()), pa.array(offsets, pa.int64()),
         pa.array([t * 1000 for t in timestamps], pa.int64()).cast(SOURCE.field("timestamp").type)],
        schema=RANGE_SCHEMA,
    )


def read_ranges(
    kafka: Mapping[str, str],
    ranges: Sequence[OffsetRange],
    *,
    batch_rows: int = 50_000,
    timeout_s: float = 300.0,
    isolation: str = "read_committed",
) -> Iterator[pa.RecordBatch]:
    """Yields every record of ``ranges`` as Arrow batches; raises :class:`ReadTimeout` if a range cannot be
    completed within ``timeout_s`` of no progress (broker gone for good: Spark then retries the task)."""
    todo = [r for r in ranges if r.size > 0]
    if not todo:
        return
    consumer = Consumer(consumer_config(kafka, isolation=isolation))
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in todo])
        remaining = {(r.topic, r.partition): r for r in todo}
        cols: tuple[list, ...] = ([], [], [], [], [], [])
        keys, values, topics, partitions, offsets, timestamps = cols
        last_progress = time.monotonic()
        next_offset = {tp: r.start for tp, r in remaining.items()}
        while remaining:
            # consume() returns once it has num_messages or the timeout passed: asking for no more than the ranges
            # still hold lets a small read return as soon as its records are in, instead of after the timeout.
            expected = sum(r.end - next_offset[tp] for tp, r in remaining.items())
            messages = consumer.consume(num_messages=max(1, min(10_000, expected, batch_rows - len(keys))),
                                        timeout=0.2)
            for m in messages:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if err.fatal():
                        raise RuntimeError(f"Kafka consumer failed: {err}")
                    continue  # transient (broker down, leader change): librdkafka retries by itself
                tp = (m.topic(), m.partition())
                r = remaining.get(tp)
                off = m.offset()
                if r is None or off >= r.end:
                    continue
                next_offset[tp] = off + 1
                keys.append(m.key())
                values.append(m.value())
                topics.append(tp[0])
                partitions.append(tp[1])
                offsets.append(off)
                timestamps.append(m.timestamp()[1])
                if off == r.end - 1:
                    del remaining[tp]
                    consumer.pause([TopicPartition(*tp)])
            if messages:
                last_progress = time.monotonic()
            if len(keys) >= batch_rows:
                yield _batch(*cols)
                for c in cols:
                    c.clear()
            if remaining and not messages:
                # read_committed skips markers and aborted records: the position can pass ``end`` silently.
                done = [tp for tp, pos in _positions(consumer, remaining) if pos >= remaining[tp].end]
                for tp in done:
                    del remaining[tp]
                if time.monotonic() - last_progress > timeout_s:
                    missing = ", ".join(f"{t}-{p}@{remaining[(t, p)].start}..{remaining[(t, p)].end}"
                                        for t, p in remaining)
                    raise ReadTimeout(f"no progress for {timeout_s:.0f} s reading {missing}")
        if keys:
            yield _batch(*cols)
    finally:
        consumer.close()


def _positions(consumer: Consumer, remaining) -> list[tuple[tuple[str, int], int]]:
    out = []
    for tp in consumer.position([TopicPartition(t, p) for t, p in remaining]):
        if tp.offset != OFFSET_INVALID and tp.offset >= 0:
            out.append(((tp.topic, tp.partition), tp.offset))
    return out
