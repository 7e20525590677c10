"""Writes a simulation as a *recording folder*, the layout of the real-Kafka recordings in
``shared/conformance/verdicts/<scenario>/`` that ``streaming.offline.recording.load_recording`` reads:

* ``records.jsonl``: one JSON object per ``__consumer_offsets`` record (control records included) with its
  ``partition``, ``offset``, ``timestamp``, ``key_hex``, ``value_hex`` (null: tombstone) and the batch header fields
  (``batch.is_transactional``, ``batch.is_control``, ``batch.producer_id`` ...; ``control.type`` COMMIT/ABORT for
  markers), in write order (the loader sorts by partition and offset);
* ``end_offsets.jsonl``: one line per simulated second, ``{"t_ms", "offsets": {"topic:partition": {"high",
  "stable", "low"}}}`` for every partition of the simulated data topics and every ``__consumer_offsets`` partition,
  on the simulation's own clock (what groupscope's heartbeat carries; a replay plays it as heartbeats at ``t_ms``);
* ``segments/__consumer_offsets-N/00000000000000000000.log``: the same records as broker segment files;
* ``client_events.jsonl``: what the simulated clients did (process starts, exits by close or crash, assignment
  callbacks), the counterpart of a real recording's client log that labels are derived from;
* ``simulation.json``: scenarios, seed, start (``t0_ms``) and end (``end_ms``) of the run.

A sample at ``t_ms`` is written once every record stamped ``<= t_ms`` has been appended, so its ``__consumer_offsets``
high watermarks count exactly the records a replay feeds with that sample. The data topics have no transactions and
no retention: ``stable == high`` and ``low == 0``. On ``__consumer_offsets`` the last stable offset stops at the first
record of a transaction that is still open, as the broker's LSO does.

``groupscope simulate --recording DIR`` writes one; :func:`write_recording` is the short form for tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from .sinks import Append, Marker, NullSink, SegmentSink

__all__ = ["RecordingSink", "write_recording", "SAMPLE_INTERVAL_MS"]

SAMPLE_INTERVAL_MS = 1000  # end_offsets.jsonl: one sample per simulated second, like the real recordings
OFFSETS_TOPIC = "__consumer_offsets"
_CONTROL_VALUE_HEX = "000000000000"  # EndTransactionMarker value: version 0, coordinator epoch 0


def _version(raw: bytes | None) -> int | None:
    return None if raw is None or len(raw) < 2 else int.from_bytes(raw[:2], "big", signed=True)


class RecordingSink(NullSink):
    """A :class:`~.sinks.Sink` that writes a recording folder under ``directory`` (created if needed).

    ``segments=False`` skips the segment files (``records.jsonl`` alone is a complete recording).
    """

    def __init__(self, directory: str | os.PathLike, *, segments: bool = True, leader_epoch: int = 0) -> None:
        self.directory = Path(directory)
        self.leader_epoch = leader_epoch
        self.segment_sink = SegmentSink(self.directory / "segments", leader_epoch=leader_epoch) if segments else None
        self.records = 0
        self.samples = 0
        self.offsets_partitions = 0
        self.log_end: list[int] = []
        self._open_txn: dict[tuple[int, int], int] = {}  # (offsets partition, producer id) -> first offset
        self._pending: tuple[int, dict[tuple[str, int], int]] | None = None  # the sample waiting for its records
        self._first_sample_ms: int | None = None
        self._last_sample_ms: int | None = None
        self._last_ends: dict[tuple[str, int], int] = {}
        self.first_ms: int | None = None
        self.last_ms: int | None = None
        self._records_fh = None
        self._ends_fh = None

    # ---- Sink ---------------------------------------------------------------------------------------------------

    def open(self, topics: Mapping[str, int], offsets_partitions: int) -> dict[tuple[str, int], int]:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.offsets_partitions = offsets_partitions
        self.log_end = [0] * offsets_partitions
        self._records_fh = open(self.directory / "records.jsonl", "w", encoding="utf-8", buffering=1 << 20)
        self._ends_fh = open(self.directory / "end_offsets.jsonl", "w", encoding="utf-8", buffering=1 << 16)
        if self.segment_sink is not None:
            self.segment_sink.open(topics, offsets_partitions)
        return {}  # fresh topics: every partition starts at offset 0

    def append(self, batch: Append) -> None:
        self._before(batch.timestamp)
        n = len(batch.records)
        header = {
            "base_offset": batch.base_offset, "last_offset": batch.base_offset + n - 1,
            "base_timestamp": batch.timestamp, "max_timestamp": batch.timestamp, "records_count": n,
            "is_control": False, "is_transactional": batch.transactional, "producer_id": batch.producer_id,
            "producer_epoch": batch.producer_epoch, "base_sequence": 0,  # as the broker writes (d_transactions)
            "partition_leader_epoch": self.leader_epoch, "magic": 2, "compression": "none",
            "timestamp_type": "CreateTime",
        }
        write = self._records_fh.write
        for i, (key, value) in enumerate(batch.records):
            write(json.dumps({
                "partition": batch.partition, "offset": batch.base_offset + i, "timestamp": batch.timestamp,
                "timestamp_type": "CreateTime", "key_hex": key.hex(), "value_hex": None if value is None else value.hex(),
                "key_version": _version(key), "value_version": _version(value), "tombstone": value is None,
                "is_control": False, "is_transactional": batch.transactional, "producer_id": batch.producer_id,
                "control": None, "batch": header,
            }, separators=(",", ":")) + "\n")
        if batch.transactional:
            self._open_txn.setdefault((batch.partition, batch.producer_id), batch.base_offset)
        self._extend(batch.partition, batch.base_offset + n)
        self.records += n
        if self.segment_sink is not None:
            self.segment_sink.append(batch)

    def marker(self, marker: Marker) -> None:
        self._before(marker.timestamp)
        kind = "COMMIT" if marker.commit else "ABORT"
        header = {
            "base_offset": marker.offset, "last_offset": marker.offset, "base_timestamp": marker.timestamp,
            "max_timestamp": marker.timestamp, "records_count": 1, "is_control": True, "is_transactional": True,
            "producer_id": marker.producer_id, "producer_epoch": marker.producer_epoch, "base_sequence": -1,
            "partition_leader_epoch": self.leader_epoch, "magic": 2, "compression": "none",
            "timestamp_type": "CreateTime",
        }
        self._records_fh.write(json.dumps({
            "partition": marker.partition, "offset": marker.offset, "timestamp": marker.timestamp,
            "timestamp_type": "CreateTime", "key_hex": "0000000" + ("1" if marker.commit else "0"),
            "value_hex": _CONTROL_VALUE_HEX, "key_version": None, "value_version": None, "tombstone": False,
            "is_control": True, "is_transactional": True, "producer_id": marker.producer_id,
            "control": {"type": kind, "coordinator_epoch": 0, "key_version": 0, "value_version": 0}, "batch": header,
        }, separators=(",", ":")) + "\n")
        self._open_txn.pop((marker.partition, marker.producer_id), None)
        self._extend(marker.partition, marker.offset + 1)
        if self.segment_sink is not None:
            self.segment_sink.marker(marker)

    def advance_topics(self, ends: Mapping[tuple[str, int], int], now_ms: int) -> None:
        """Called by the simulation every simulated second (and at the end of each run): one sample per second."""
        self._before(now_ms)
        self._last_ends.update(ends)
        if self._first_sample_ms is None:
            self._first_sample_ms = now_ms
        if (now_ms - self._first_sample_ms) % SAMPLE_INTERVAL_MS or \
                (self._last_sample_ms is not None and now_ms <= self._last_sample_ms):
            return  # off the one-second grid (a run that stopped between two ticks)
        self._pending = (now_ms, dict(self._last_ends))
        self._last_sample_ms = now_ms
        self.first_ms = now_ms if self.first_ms is None else self.first_ms

    def flush(self) -> None:
        self._write_pending()
        for fh in (self._records_fh, self._ends_fh):
            if fh is not None:
                fh.flush()
        if self.segment_sink is not None:
            self.segment_sink.flush()

    def close(self) -> None:
        self.flush()
        for fh in (self._records_fh, self._ends_fh):
            if fh is not None:
                fh.close()
        self._records_fh = self._ends_fh = None
        if self.segment_sink is not None:
            self.segment_sink.close()

    # ---- samples ------------------------------------------------------------------------------------------------

    def _extend(self, partition: int, end: int) -> None:
        if end > self.log_end[partition]:
            self.log_end[partition] = end

    def _before(self, t_ms: int) -> None:
        """Something stamped ``t_ms`` is about to be written: the pending sample is complete if it is older."""
        if self._pending is not None and t_ms > self._pending[0]:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending is None:
            return
        t_ms, ends = self._pending
        self._pending = None
        offsets: dict[str, dict[str, int]] = {}
        for p, high in enumerate(self.log_end):
            stable = min([high] + [first for (part, _), first in self._open_txn.items() if part == p])
            offsets[f"{OFFSETS_TOPIC}:{p}"] = {"high": high, "stable": stable, "low": 0}
        for (topic, p), high in sorted(ends.items()):
            offsets[f"{topic}:{p}"] = {"high": high, "stable": high, "low": 0}
        self._ends_fh.write(json.dumps({"t_ms": t_ms, "offsets": offsets}, separators=(",", ":")) + "\n")
        self.samples += 1
        self.last_ms = t_ms


def write_recording(sim, directory: str | os.PathLike, duration_ms: int, *, segments: bool = True) -> Path:
    """Runs ``sim`` (a fresh :class:`~.simulation.Simulation`) for ``duration_ms`` simulated ms into a recording
    folder at ``directory``; returns the folder. ``simulation.json`` there gives ``t0_ms`` (the simulated start,
    which scenario times are relative to) and ``end_ms`` (the last sample)."""
    sink = RecordingSink(directory, segments=segments)
    try:
        sim.run_until(duration_ms, sink)
    finally:
        sink.close()
    write_manifest(sim, sink)
    return Path(directory)


def write_manifest(sim, sink: RecordingSink) -> None:
    """``simulation.json`` (what was simulated, on which clock) and ``client_events.jsonl`` (what its clients did);
    neither is read by the loader."""
    info = {
        "scenarios": [s.name for s in sim.scenarios], "seed": sim.seed, "t0_ms": sim.sched.start_ms,
        "end_ms": sink.last_ms, "duration_ms": sim.elapsed_ms, "offsets_partitions": sim.offsets_partitions,
        "records": sink.records, "samples": sink.samples,
        "topics": {name: t.partitions for name, t in sorted(sim.topics.items())},
    }
    (sink.directory / "simulation.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    with open(sink.directory / "client_events.jsonl", "w", encoding="utf-8") as fh:
        for e in sim.client_events:
            fh.write(json.dumps(e, separators=(",", ":")) + "\n")
