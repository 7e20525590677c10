"""Reading a recording folder: its ``__consumer_offsets`` records and its end-offset samples.

Records come from ``records.jsonl`` when present (one JSON object per record, with its batch header) or else from
``segments/`` (broker segment files). Either way only what a ``read_committed`` reader would receive is kept:
control records are dropped, and a transactional record is kept only when its producer's next marker on that
partition is a COMMIT. That is exactly the input the streaming job gets from Kafka.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from protocol.batch import CorruptBatch

from streaming.offline.segments import SegmentPathError, find_segments, read_segment

__all__ = ["OffsetsRecord", "EndOffsetSample", "Recording", "RecordingError", "load_recording", "clock_samples",
           "recording_folder"]


class RecordingError(ValueError):
    """A folder that is not a readable recording; the message says what is missing or wrong."""


@dataclass(frozen=True, slots=True)
class OffsetsRecord:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class EndOffsetSample:
    """One sample: at ``t_ms``, ``(topic, partition) -> (high watermark, last stable offset, log start)``."""

    t_ms: int
    ends: dict[tuple[str, int], tuple[int, int, int]]


@dataclass(frozen=True, slots=True)
class Recording:
    name: str
    records: tuple[OffsetsRecord, ...]  # in (partition, offset) order
    samples: tuple[EndOffsetSample, ...]  # in time order

    @property
    def partitions(self) -> list[int]:
        return sorted({r.partition for r in self.records})


def _visible(rows: list[tuple[int, int, int, bool, int, int | None, bytes | None, bytes | None]]):
    """Keeps committed, non-control records. Rows: (partition, offset, ts, transactional, producer id,
    control type or None, key, value), sorted by partition and offset."""
    outcome: dict[tuple[int, int, int], bool] = {}  # (partition, producer, offset of a txn record) -> committed
    pending: dict[tuple[int, int], list[int]] = {}
    for partition, offset, _, txn, pid, control, _, _ in rows:
        if control is not None:
            for o in pending.pop((partition, pid), []):
                outcome[(partition, pid, o)] = control == 1
        elif txn:
            pending.setdefault((partition, pid), []).append(offset)
    out = []
    for partition, offset, ts, txn, pid, control, key, value in rows:
        if control is not None:
            continue
        if txn and not outcome.get((partition, pid, offset), False):
            continue  # aborted, or still open at the end of the recording: a read_committed reader never sees it
        out.append(OffsetsRecord(partition, offset, ts, key, value))
    return out


def _from_jsonl(path: Path):
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                batch = r.get("batch") or {}
                control = None
                if batch.get("is_control", r.get("is_control", False)):
                    ctype = (r.get("control") or {}).get("type")
                    control = 1 if str(ctype).upper() in ("1", "COMMIT") else 0
                rows.append((int(r["partition"]), int(r["offset"]), int(r["timestamp"]),
                             bool(batch.get("is_transactional", r.get("is_transactional", False))),
                             int(batch.get("producer_id", r.get("producer_id", -1))), control,
                             None if r.get("key_hex") is None else bytes.fromhex(r["key_hex"]),
                             None if r.get("value_hex") is None else bytes.fromhex(r["value_hex"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise RecordingError(f"{path}:{n}: not a record line ({exc})") from None
    rows.sort(key=lambda x: (x[0], x[1]))
    return rows


def _from_segments(path: Path):
    rows = []
    try:
        segments = find_segments(path)
    except SegmentPathError as exc:
        raise RecordingError(str(exc)) from None
    for segment in segments:
        partition = segment.partition if segment.partition is not None else -1
        for batch in read_segment(segment):
            if isinstance(batch, CorruptBatch):
                raise RecordingError(f"{segment.path}: batch at byte {batch.position}: {batch.reason}")
            h = batch.header
            control = None
            if h.is_control:
                control = 1 if batch.control is not None and int(batch.control.control_type) == 1 else 0
            for rec in batch.records:
                rows.append((partition, rec.offset, rec.timestamp, h.is_transactional, h.producer_id, control,
                             rec.key, rec.value))
    rows.sort(key=lambda x: (x[0], x[1]))
    return rows


def _samples(path: Path) -> tuple[EndOffsetSample, ...]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                s = json.loads(line)
                ends = {}
                for key, v in s["offsets"].items():
                    topic, _, part = key.rpartition(":")
                    ends[(topic, int(part))] = (int(v["high"]), int(v.get("stable", -1)), int(v.get("low", -1)))
                out.append(EndOffsetSample(int(s["t_ms"]), ends))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise RecordingError(f"{path}:{n}: not an end-offset sample ({exc})") from None
    out.sort(key=lambda s: s.t_ms)
    return tuple(out)


def recording_folder(path: str | Path) -> Path:
    """The recording a path names: its folder, or a file or the ``segments/`` folder in it."""
    root = Path(path)
    if root.is_file() and root.name in ("records.jsonl", "end_offsets.jsonl"):
        return root.parent
    if root.is_dir() and root.name == "segments" and not (root / "records.jsonl").exists() and (
            (root.parent / "end_offsets.jsonl").is_file() or (root.parent / "records.jsonl").is_file()):
        return root.parent
    return root


def load_recording(path: str | Path, *, end_offsets_required: bool = True) -> Recording:
    """Reads a recording folder (or the folder of a ``records.jsonl``, ``end_offsets.jsonl`` or ``segments/``
    named in it). Without ``end_offsets_required``, a recording without end-offset samples has none.

    Raises:
        RecordingError: no ``end_offsets.jsonl`` (when required), neither ``records.jsonl`` nor ``segments/``,
            or a bad line.
    """
    root = recording_folder(path)
    if not root.is_dir():
        raise RecordingError(f"{root}: not a folder (a recording is a folder with records.jsonl or segments/ "
                             "and end_offsets.jsonl)")
    ends = root / "end_offsets.jsonl"
    if not ends.is_file() and end_offsets_required:
        raise RecordingError(f"{root}: no end_offsets.jsonl (the end-offset samples that play the heartbeats)")
    if (root / "records.jsonl").is_file():
        rows = _from_jsonl(root / "records.jsonl")
    elif (root / "segments").is_dir():
        rows = _from_segments(root / "segments")
    else:
        raise RecordingError(f"{root}: neither records.jsonl nor segments/ found")
    return Recording(root.name, tuple(_visible(rows)), _samples(ends) if ends.is_file() else ())


def clock_samples(records: tuple[OffsetsRecord, ...], *, step_ms: int = 1_000, tail_ms: int = 240_000
                  ) -> tuple[EndOffsetSample, ...]:
    """Samples without end offsets, one every ``step_ms`` from the first record to ``tail_ms`` after the last: the
    clock a recording without ``end_offsets.jsonl`` is replayed on. The tail lets the verdicts that wait for
    quiet (an episode settling, a group that shrank waiting for its members' return, a storm ending) be taken."""
    if not records:
        return ()
    first = min(r.timestamp for r in records)
    last = max(r.timestamp for r in records)
    return tuple(EndOffsetSample(t, {}) for t in range(first, last + tail_ms + 1, step_ms))
