"""What a ``read_committed`` consumer would read from a partition, taken from its segment files instead of a broker.

``groupscope backfill`` feeds the streaming job from a copy of a broker's log directory, and the job must see
exactly what it sees when it tails the topic through Kafka: records in offset order, control batches (transaction
markers) left out, records of aborted transactions left out, and nothing at or after the last stable offset (the
first offset of a transaction that has no marker yet), since a ``read_committed`` fetch stops there.

One pass: records are held back only while the transaction they belong to is open. Each batch's records join a
queue in offset order; the head of the queue is released as soon as its fate is known (always, for a
non-transactional batch; at its producer's COMMIT or ABORT marker for a transactional one). What is still queued
when the files end is after the last stable offset and is not read.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from protocol.batch import ControlType, CorruptBatch, RecordBatch, TimestampType, iter_batches
from streaming.offline.segments import Segment, open_segment
from streaming.schema.tables import SOURCE

__all__ = ["CommittedReader", "ReadReport", "log_end_offset"]

_PREFIX = struct.Struct(">qi")  # base offset, batch length: the first 12 bytes of every log entry
_LAST_DELTA = struct.Struct(">i")  # a magic 2 batch's last offset delta, at byte 23
_MAGIC_AT, _LAST_DELTA_AT = 16, 23


@dataclass
class ReadReport:
    """What one read found besides records: problems (damaged batches), and the records held back at the end
    because their transaction had no marker in the files (they lie past the last stable offset)."""

    problems: list[str] = field(default_factory=list)
    pending_at_end: int = 0
    markers: int = 0
    aborted: int = 0


@dataclass
class _Held:
    """Records of one batch waiting in the queue; ``keep`` is None while their transaction is open."""

    producer_id: int
    records: list[tuple[bytes | None, bytes | None, int, int]]  # key, value, offset, timestamp (ms)
    keep: bool | None


class CommittedReader:
    """The ``read_committed`` records of one partition's segments with offsets in ``[start, end)``, as Arrow
    batches of ``SOURCE`` rows (``batch_rows`` at most each)."""

    def __init__(self, segments: Sequence[Segment], *, topic: str, partition: int, batch_rows: int = 50_000,
                 verify_crc: bool = True) -> None:
        self.segments = sorted(segments, key=lambda s: s.base_offset or 0)
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self.verify_crc = verify_crc
        self.report = ReadReport()

    def read(self, start: int, end: int) -> Iterator[pa.RecordBatch]:
        queue: deque[_Held] = deque()
        open_by_producer: dict[int, list[_Held]] = {}
        out: list[tuple[bytes | None, bytes | None, int, int]] = []

        def release() -> Iterator[pa.RecordBatch]:
            while queue and queue[0].keep is not None:
                held = queue.popleft()
                if held.keep:
                    out.extend(r for r in held.records if start <= r[2] < end)
                if len(out) >= self.batch_rows:
                    yield self._arrow(out)
                    out.clear()

        for batch in self._batches_from(start):
            if isinstance(batch, CorruptBatch):
                if not batch.truncated:  # a segment still being written ends in a partial batch: not a problem
                    self.report.problems.append(f"partition {self.partition}: {batch.reason}")
                continue
            h = batch.header
            if h.base_offset >= end and not open_by_producer:
                break  # past the range, and nothing in it waits for a marker
            if h.is_control:
                self._settle(batch, open_by_producer)
                yield from release()
                continue
            if h.base_offset >= end:
                continue  # read only to find the markers of transactions open in the range
            held = _Held(h.producer_id, self._records(batch), None if h.is_transactional else True)
            queue.append(held)
            if held.keep is None:
                open_by_producer.setdefault(h.producer_id, []).append(held)
            yield from release()
        self.report.pending_at_end += sum(len(h.records) for h in queue)
        if out:
            yield self._arrow(out)

    def _settle(self, batch: RecordBatch, open_by_producer: dict[int, list[_Held]]) -> None:
        marker = batch.control
        if marker is None:
            return  # a control batch the cleaner emptied, or of a kind that settles nothing
        self.report.markers += 1
        keep = marker.control_type == ControlType.COMMIT
        for held in open_by_producer.pop(batch.header.producer_id, ()):
            held.keep = keep
            if not keep:
                self.report.aborted += len(held.records)

    def _records(self, batch: RecordBatch) -> list[tuple[bytes | None, bytes | None, int, int]]:
        h = batch.header
        if h.timestamp_type == TimestampType.LOG_APPEND_TIME:  # consumers see the broker's append time
            return [(r.key, r.value, r.offset, h.max_timestamp) for r in batch.records]
        return [(r.key, r.value, r.offset, r.timestamp) for r in batch.records]

    def _batches_from(self, start: int) -> Iterator[RecordBatch | CorruptBatch]:
        """Every batch from the one holding ``start`` on, over the segments in order. The batches before it are
        skipped by their length fields alone (hand-written walk: decoding them would cost as much as the read)."""
        first = max((i for i, s in enumerate(self.segments) if (s.base_offset or 0) <= start), default=0)
        for segment in self.segments[first:]:
            with open_segment(segment) as view:
                position = _position_of(view, start)
                if position < len(view):
                    yield from iter_batches(view[position:], verify_crc=self.verify_crc)

    def _arrow(self, rows: list[tuple[bytes | None, bytes | None, int, int]]) -> pa.RecordBatch:
        keys, values, offsets, stamps = zip(*rows)
        n = len(rows)
        return pa.RecordBatch.from_arrays([
            pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.array([self.topic] * n, pa.string()), pa.array([self.partition] * n, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array([t * 1000 for t in stamps], pa.int64()).cast(SOURCE.field("timestamp").type),
        ], schema=SOURCE)


def _position_of(view: memoryview, offset: int) -> int:
    """The byte position of the first batch whose records may reach ``offset`` (magic 2 batches whose last offset
    is below it are stepped over; an older or unreadable entry stops the walk, and decoding takes over there)."""
    position, size = 0, len(view)
    while position + _LAST_DELTA_AT + 4 <= size:
        base, length = _PREFIX.unpack_from(view, position)
        if view[position + _MAGIC_AT] != 2 or length < 0:
            break
        if base + _LAST_DELTA.unpack_from(view, position + _LAST_DELTA_AT)[0] >= offset:
            break
        position += 12 + length
    return position


def log_end_offset(segments: Sequence[Segment]) -> int:
    """One past the last offset in the partition's segments (0 when they hold no batch): read from the last
    non-empty segment's batch headers only."""
    for segment in sorted(segments, key=lambda s: s.base_offset or 0, reverse=True):
        with open_segment(segment) as view:
            position, size, end = 0, len(view), None
            while position + _LAST_DELTA_AT + 4 <= size:
                base, length = _PREFIX.unpack_from(view, position)
                if length < 0 or position + 12 + length > size:
                    break  # a partial batch at the end of a segment being written
                if view[position + _MAGIC_AT] == 2:
                    end = base + _LAST_DELTA.unpack_from(view, position + _LAST_DELTA_AT)[0] + 1
                else:
                    end = base + 1  # a legacy entry's offset is its (last) message's
                position += 12 + length
            if end is not None:
                return end
    return 0
