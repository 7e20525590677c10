"""Reads explicit offset ranges of Kafka partitions into Arrow batches (the executor side of the Spark source).

A range reader, not a group consumer: Spark decides the ranges (its checkpoint holds the offsets), so the consumer
uses ``assign`` and never commits. With ``isolation.level=read_committed`` aborted records and control markers are
never delivered, so a range is complete when the consumer's *position* reaches its end, not when a record with
offset ``end - 1`` arrives (that offset may be a marker).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import compress
from typing import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, TopicPartition

from streaming.schema.tables import SOURCE
from .client import consumer_config, with_logger

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


def _batch(keys: list, values: list, topic_codes: list, partitions: list, offsets: list, timestamps: list,
           topic_names: pa.Array) -> pa.RecordBatch:
    """One ``RANGE_SCHEMA`` batch from the accumulated columns: keys, values and timestamps as Python lists, topics
    (codes into ``topic_names``), partitions and offsets as numpy chunks."""
    codes = np.concatenate(topic_codes)
    return pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.binary()), pa.array(values, pa.binary()), topic_names.take(pa.array(codes)),
         pa.array(np.concatenate(partitions), pa.int32()), pa.array(np.concatenate(offsets), pa.int64()),
         pc.multiply(pa.array(timestamps, pa.int64()), 1000).cast(SOURCE.field("timestamp").type)],  # ms -> us
        schema=RANGE_SCHEMA,
    )


def read_ranges(
    kafka: Mapping[str, str],
    ranges: Sequence[OffsetRange],
    *,
    batch_rows: int = 50_000,
    timeout_s: float = 300.0,
    isolation: str = "read_committed",
    fail_on: frozenset[int] = frozenset(),
) -> Iterator[pa.RecordBatch]:
    """Yields every record of ``ranges`` as Arrow batches; raises :class:`ReadTimeout` if a range cannot be
    completed within ``timeout_s`` of no progress (broker gone for good: Spark then retries the task), and
    RuntimeError at once on a fatal error or one whose code is in ``fail_on`` (librdkafka retries the others)."""
    todo = [r for r in ranges if r.size > 0]
    if not todo:
        return
    names = sorted({r.topic for r in todo})
    topic_names = pa.array(names, pa.string())
    codes = {t: i for i, t in enumerate(names)}
    by_partition: dict[int, set[str]] = {}
    for r in todo:
        by_partition.setdefault(r.partition, set()).add(r.topic)
    # Where no two topics of the task share a partition number (the usual case), a message's partition says its
    # topic too and ``Message.topic()`` (a new str per record) is never called.
    topic_of = {p: codes[next(iter(ts))] for p, ts in by_partition.items()} \
        if all(len(ts) == 1 for ts in by_partition.values()) else None
    consumer = Consumer(with_logger(consumer_config(kafka, isolation=isolation)))
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in todo])
        remaining = {(r.topic, r.partition): r for r in todo}
        # key, value, timestamp: lists of the records' own objects; topic codes, partition, offset: numpy chunks
        cols: tuple[list, ...] = ([], [], [], [], [], [])
        keys = cols[0]
        last_progress = time.monotonic()
        next_offset = {tp: r.start for tp, r in remaining.items()}
        while remaining:
            # consume() returns once it has num_messages or the timeout passed: asking for no more than the ranges
            # still hold lets a small read return as soon as its records are in, instead of after the timeout.
            expected = sum(r.end - next_offset[tp] for tp, r in remaining.items())
            messages = consumer.consume(num_messages=max(1, min(10_000, expected, batch_rows - len(keys))),
                                        timeout=0.2)
            if messages:
                _take(messages, remaining, next_offset, cols, consumer, names, codes, topic_of, fail_on)
                last_progress = time.monotonic()
            if len(keys) >= batch_rows:
                yield _batch(*cols, topic_names)
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
            yield _batch(*cols, topic_names)
    finally:
        consumer.close()


def _take(messages: list, remaining: dict, next_offset: dict, cols: tuple[list, ...], consumer: Consumer,
          names: list[str], codes: dict[str, int], topic_of: dict[int, int] | None,
          fail_on: frozenset[int] = frozenset()) -> None:
    """Appends the in-range records of one ``consume()`` result to the columns; completes and pauses the ranges
    they finish.

    Hand-written for speed: a read task is bound by Python work per record. Per record it only asks the message
    for what has no cheaper source (partition, offset, key, value, timestamp; the topic only where the partition
    does not imply it), one comprehension each; the range checks and the per-partition bookkeeping run on numpy
    arrays, per run of consecutive records of one partition (librdkafka hands them over a fetched batch at a time),
    not per record. A per-record loop cost ~2 µs a record, comprehensions with per-record range checks ~1 µs.
    """
    good = [m for m in messages if m.error() is None]
    if len(good) != len(messages):
        for m in messages:
            err = m.error()
            # End-of-partition events are expected; other errors are transient (librdkafka retries) unless fatal.
            if err is not None and err.code() != KafkaError._PARTITION_EOF and (err.fatal() or err.code() in fail_on):
                raise RuntimeError(f"Kafka consumer failed: {err.str()}")
    if not good:
        return
    parts = np.array([m.partition() for m in good], np.int64)
    offs = np.array([m.offset() for m in good], np.int64)
    if topic_of is not None:
        tcodes = None
        ids = parts
    else:
        tcodes = np.array([codes[m.topic()] for m in good], np.int64)
        ids = tcodes * (1 << 32) + parts
    # Runs of one topic-partition: their start index, key and the end of its range (-1: not being read any more).
    starts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    bounds = [0, *starts.tolist(), len(ids)]
    run_keys = []
    for lo in bounds[:-1]:
        p = int(parts[lo])
        run_keys.append((names[topic_of[p] if tcodes is None else int(tcodes[lo])], p))
    run_ends = np.array([remaining[k].end if k in remaining else -1 for k in run_keys], np.int64)
    lengths = np.diff(bounds)
    keep = offs < np.repeat(run_ends, lengths)
    if not keep.all():
        good = list(compress(good, keep.tolist()))
        parts, offs = parts[keep], offs[keep]
        if tcodes is not None:
            tcodes = tcodes[keep]
        # Runs again over the kept records (a run may have lost its tail or all of it).
        kept_per_run = np.add.reduceat(keep.astype(np.int64), bounds[:-1])
        run_keys = [k for k, n in zip(run_keys, kept_per_run.tolist()) if n]
        lengths = kept_per_run[kept_per_run > 0]
        if not good:
            return
    keys, values, topics, partitions, offsets, timestamps = cols
    keys.extend([m.key() for m in good])
    values.extend([m.value() for m in good])
    timestamps.extend([m.timestamp()[1] for m in good])
    topics.append(tcodes if tcodes is not None else
                  np.repeat(np.array([codes[t] for t, _ in run_keys], np.int64), lengths))
    partitions.append(parts)
    offsets.append(offs)
    last_index = np.cumsum(lengths) - 1
    last = dict(zip(run_keys, offs[last_index].tolist()))  # the last offset per partition
    for tp, off in last.items():
        next_offset[tp] = off + 1
        if off >= remaining[tp].end - 1:
            del remaining[tp]
            consumer.pause([TopicPartition(*tp)])


def _positions(consumer: Consumer, remaining) -> list[tuple[tuple[str, int], int]]:
    out = []
    for tp in consumer.position([TopicPartition(t, p) for t, p in remaining]):
        if tp.offset != OFFSET_INVALID and tp.offset >= 0:
            out.append(((tp.topic, tp.partition), tp.offset))
    return out
