"""Replays broker segment files of ``__consumer_offsets`` into the group model (offline forensics).

Segment files carry batch headers, so this path applies Kafka's own transactional replay: transactional commits wait
per producer id and COMMIT / ABORT markers settle them, exactly as the broker's loader does. Undecodable records and
corrupt batches are counted and reported, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from protocol.batch import CorruptBatch
from protocol.codec import decode_record
from protocol.errors import CodecError

from streaming.model.shard import CoordinatorModel, ModelConfig
from streaming.offline.segments import find_segments, read_segment, segment_size
from streaming.progress import Progress

__all__ = ["ReplayReport", "replay_segments"]


@dataclass
class ReplayReport:
    records: int = 0
    markers: int = 0
    problems: list[str] = field(default_factory=list)
    last_timestamp: int = -1


def replay_segments(
    path: str | Path,
    *,
    until: Mapping[int, int] | None = None,
    config: ModelConfig = ModelConfig(),
    model: CoordinatorModel | None = None,
    on_problem: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> tuple[CoordinatorModel, ReplayReport]:
    """Replays every segment under ``path``; ``until`` maps a partition to an exclusive end offset.

    Partitions missing from ``until`` are replayed to their end. Raises ``SegmentPathError`` for a path with no
    segments. ``progress``: told the records and bytes done, batch by batch.
    """
    model = model if model is not None else CoordinatorModel(config)
    report = ReplayReport()

    def problem(text: str) -> None:
        report.problems.append(text)
        if on_problem is not None:
            on_problem(text)

    read_before = 0  # bytes of the segments already replayed
    for segment in find_segments(path):
        partition = segment.partition if segment.partition is not None else -1
        stop = None if until is None else until.get(partition)
        shard = model.shard(partition)
        for batch in read_segment(segment):
            if progress is not None:
                at = batch.position if isinstance(batch, CorruptBatch) else batch.header.position
                progress.update(records=report.records, bytes=read_before + at)
            if isinstance(batch, CorruptBatch):
                problem(f"{segment.path}: batch at byte {batch.position}: {batch.reason}")
                continue
            header = batch.header
            if stop is not None and header.base_offset >= stop:
                break
            if header.is_control:
                marker = batch.control
                for rec in batch.records:
                    if stop is not None and rec.offset >= stop:
                        break
                    if marker is not None:
                        report.markers += 1
                        shard.replay_end_txn_marker(header.producer_id, int(marker.control_type), rec.offset,
                                                    rec.timestamp)
                continue
            for rec in batch.records:
                if stop is not None and rec.offset >= stop:
                    break
                report.records += 1
                report.last_timestamp = max(report.last_timestamp, rec.timestamp)
                try:
                    decoded = decode_record(rec.key, rec.value)
                except CodecError as exc:
                    problem(f"{segment.path}: partition {partition} offset {rec.offset}: {exc}")
                    continue
                shard.replay(rec.offset, rec.timestamp, decoded, header.producer_id, header.producer_epoch,
                             header.is_transactional)
        read_before += segment_size(segment)
    return model, report
