"""Capturing a recording from a live cluster: what ``groupscope record`` writes.

Why: the verdicts are only as good as the evidence they are checked on. A recording taken from a real cluster,
while real clients do what they do, can be replayed through the model on any machine (``groupscope replay``) and
kept as a test. The capture writes exactly the layout ``streaming.offline.recording.load`` reads:

* ``records.jsonl``: the ``__consumer_offsets`` records a ``read_committed`` reader receives (so neither control
  records nor aborted transactional commits: the loader would drop those anyway), one JSON object per record with
  ``partition``, ``offset``, ``timestamp``, ``key_hex`` and ``value_hex``;
* ``end_offsets.jsonl``: once a second, the high watermark, last stable offset and log start of every partition of
  the watched groups' topics and of ``__consumer_offsets``: what the heartbeat carries;
* ``recording.json``: how it was taken (servers, groups, start and end, why it stopped). The loader ignores it.

With group patterns, only the records whose key names a matching group are kept (every coordinator record's key
starts with its group id). The topics sampled are the ones the kept records name (committed offsets, classic
subscriptions, consumer-protocol subscriptions), so a group's partitions are sampled from its first record on.

Each sample is stamped when the broker has answered, so its ``__consumer_offsets`` high watermarks never count a
record stamped after the sample: a replay feeds a sample with the records stamped up to its time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

from protocol import CodecError
from protocol.codec import decode_record
from protocol.records import CoordinatorRecord, GroupMetadataValue

from streaming.kafka.client import KafkaAccess, KafkaUnavailable

__all__ = ["CaptureOptions", "CaptureSummary", "CaptureError", "OFFSETS_TOPIC", "capture", "group_of_key",
           "topics_named", "record_line", "sample_line", "check_out_dir"]

OFFSETS_TOPIC = "__consumer_offsets"
SAMPLE_INTERVAL_S = 1.0  # one sample a second, like the heartbeat and the recordings the tests keep
PARTITION_REFRESH_S = 30.0  # partitions added to a sampled topic are picked up this often


class CaptureError(ValueError):
    """Input the capture cannot start with (an unusable output folder); the message is one line."""


@dataclass(frozen=True, slots=True)
class CaptureOptions:
    """What to capture, where to, and for how long."""

    out_dir: Path
    groups: tuple[re.Pattern[str], ...] = ()  # empty: every group; else a group id must match one in full
    duration_s: float | None = None  # None: until stopped
    max_bytes: int = 256 * 1024 * 1024  # records.jsonl and end_offsets.jsonl together
    from_beginning: bool = False

    def watches(self, group: str | None) -> bool:
        if not self.groups:
            return True
        return group is not None and any(p.fullmatch(group) for p in self.groups)


@dataclass(slots=True)
class CaptureSummary:
    """What a capture wrote, and why it ended: ``duration``, ``max_bytes`` or ``stopped`` (Ctrl-C, SIGTERM)."""

    records: int = 0
    samples: int = 0
    groups: set[str] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    bytes_written: int = 0
    started_ms: int = 0
    ended_ms: int = 0
    reason: str = "stopped"
    missed_samples: int = 0  # seconds the broker did not answer the end-offset queries (a gap, as in a heartbeat)

    def line(self, out_dir: Path) -> str:
        took = (self.ended_ms - self.started_ms) / 1000
        why = {"duration": "duration reached", "max_bytes": "size limit reached (--max-bytes)",
               "stopped": "stopped"}[self.reason]
        gaps = f", {self.missed_samples} s without end offsets" if self.missed_samples else ""
        return (f"groupscope record: {why} after {took:.0f} s: {self.records} records of {len(self.groups)} groups, "
                f"{self.samples} end-offset samples of {len(self.topics)} topics{gaps}, {self.bytes_written} bytes "
                f"in {out_dir}")


def check_out_dir(out_dir: Path) -> None:
    """A recording goes into a new or empty folder: mixing two captures would make one timeline of both."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CaptureError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()):
        raise CaptureError(f"{out_dir} is not empty: a recording goes into a new or empty folder")


def group_of_key(key: bytes | None) -> str | None:
    """The group id a coordinator record's key names, or None for a key that does not decode."""
    if key is None:
        return None
    try:
        record = decode_record(key, None)
    except CodecError:
        return None
    if isinstance(record, CoordinatorRecord):
        return record.group_id
    return record.group_id  # a type this codec does not know: named when its key still parses


def topics_named(key: bytes | None, value: bytes | None) -> set[str]:
    """The topics a record says its group consumes: a committed offset's topic, a classic member's subscription, a
    consumer-protocol member's subscribed topics. Records that do not decode name none."""
    if key is None:
        return set()
    try:
        record = decode_record(key, value)
    except CodecError:
        return set()
    if not isinstance(record, CoordinatorRecord):
        return set()
    topic = getattr(record.key, "topic", None)
    if topic:
        return {topic}
    out: set[str] = set()
    if isinstance(record.value, GroupMetadataValue):
        for member in record.value.members:
            if member.decoded_subscription is not None:
                out.update(member.decoded_subscription.topics)
    else:
        out.update(getattr(record.value, "subscribed_topic_names", None) or ())
    return out


def record_line(partition: int, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> str:
    """One ``records.jsonl`` line (what :func:`streaming.offline.recording.load.load_recording` reads)."""
    return json.dumps({"partition": partition, "offset": offset, "timestamp": timestamp,
                       "key_hex": None if key is None else key.hex(),
                       "value_hex": None if value is None else value.hex()}, separators=(",", ":")) + "\n"


def sample_line(t_ms: int, ends: dict[tuple[str, int], tuple[int, int, int]]) -> str:
    """One ``end_offsets.jsonl`` line: ``(topic, partition) -> (high, stable, low)`` at ``t_ms``."""
    offsets = {f"{t}:{p}": {"high": h, "stable": s, "low": lo} for (t, p), (h, s, lo) in sorted(ends.items())}
    return json.dumps({"t_ms": t_ms, "offsets": offsets}, separators=(",", ":")) + "\n"


class _Budget:
    """Bytes left under ``--max-bytes``: a line that does not fit ends the capture, so the files stay under it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True


class _Topics:
    """The sampled topics and their partitions, looked up once and refreshed now and then."""

    def __init__(self, access: KafkaAccess) -> None:
        self.access = access
        self.partitions: dict[str, list[int]] = {}
        self.refreshed = 0.0

    def add(self, topics: Iterable[str]) -> None:
        for topic in topics:
            if topic not in self.partitions:
                self.partitions[topic] = self._lookup(topic)

    def refresh(self, now: float) -> None:
        if now - self.refreshed >= PARTITION_REFRESH_S:
            self.refreshed = now
            for topic in self.partitions:
                self.partitions[topic] = self._lookup(topic) or self.partitions[topic]

    def _lookup(self, topic: str) -> list[int]:
        try:
            return self.access.partitions(topic)
        except KafkaUnavailable:
            return []

    def all(self) -> list[tuple[str, int]]:
        return [(t, p) for t, parts in sorted(self.partitions.items()) for p in parts]


def capture(access: KafkaAccess, options: CaptureOptions, stop: threading.Event,
            clock: Callable[[], float] = time.time) -> CaptureSummary:
    """Captures into ``options.out_dir`` (created; it must be new or empty) until the duration is over, the size
    limit is reached or ``stop`` is set. The cluster must have answered already (``access.wait_reachable``)."""
    out = options.out_dir
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = CaptureSummary(started_ms=int(clock() * 1000))
    budget = _Budget(options.max_bytes)
    topics = _Topics(access)
    consumer = access.consumer(isolation="read_committed")
    offsets_partitions: list[int] = []
    first_look = True
    started = time.monotonic()
    next_sample = started
    try:
        with open(out / "records.jsonl", "w", encoding="utf-8") as records, \
                open(out / "end_offsets.jsonl", "w", encoding="utf-8") as samples:
            while not stop.is_set():
                now = time.monotonic()
                if options.duration_s is not None and now - started >= options.duration_s:
                    summary.reason = "duration"
                    break
                if not offsets_partitions:
                    # A fresh cluster has no __consumer_offsets until a group first looks for its coordinator: what
                    # it then holds was all written during the capture, so it is read from its beginning.
                    offsets_partitions = _offsets_partitions(access)
                    if offsets_partitions:
                        start = OFFSET_END if first_look and not options.from_beginning else OFFSET_BEGINNING
                        consumer.assign([TopicPartition(OFFSETS_TOPIC, p, start) for p in offsets_partitions])
                    first_look = False
                if offsets_partitions:
                    if not _take_records(consumer, options, summary, topics, records, budget):
                        summary.reason = "max_bytes"
                        break
                else:
                    stop.wait(0.2)
                if time.monotonic() >= next_sample:
                    next_sample += SAMPLE_INTERVAL_S
                    if next_sample < time.monotonic():  # a slow answer: keep to the grid, skip what was missed
                        next_sample = time.monotonic() + SAMPLE_INTERVAL_S
                    records.flush()
                    topics.refresh(time.monotonic())
                    wanted = topics.all() + [(OFFSETS_TOPIC, p) for p in offsets_partitions]
                    try:
                        ends = access.end_offsets(wanted)
                    except KafkaUnavailable:
                        summary.missed_samples += 1
                        continue
                    line = sample_line(int(clock() * 1000), {k: (e.high_watermark, e.last_stable, e.low_watermark)
                                                             for k, e in ends.items()})
                    if not budget.take(len(line.encode())):
                        summary.reason = "max_bytes"
                        break
                    samples.write(line)
                    samples.flush()
                    summary.samples += 1
    finally:
        consumer.close()
        summary.ended_ms = int(clock() * 1000)
        summary.bytes_written = budget.used
        summary.topics = set(topics.partitions)
        _write_manifest(access, options, summary)
    return summary


def _offsets_partitions(access: KafkaAccess) -> list[int]:
    try:
        return access.partitions(OFFSETS_TOPIC)
    except KafkaUnavailable:
        return []


def _take_records(consumer, options: CaptureOptions, summary: CaptureSummary, topics: _Topics, out,
                  budget: _Budget) -> bool:
    """Writes what one short poll brought; False when the size limit stops the capture."""
    for message in consumer.consume(num_messages=1000, timeout=0.2):
        if message.error() is not None:
            continue  # a partition's end, a transient fetch error: librdkafka retries on its own
        key, value = message.key(), message.value()
        group = group_of_key(key)
        if not options.watches(group):
            continue
        line = record_line(message.partition(), message.offset(), message.timestamp()[1], key, value)
        if not budget.take(len(line.encode())):
            return False
        out.write(line)
        summary.records += 1
        if group is not None:
            summary.groups.add(group)
        named = topics_named(key, value)
        if named:
            topics.add(named)
    return True


def _write_manifest(access: KafkaAccess, options: CaptureOptions, summary: CaptureSummary) -> None:
    info = {
        "bootstrap": access.bootstrap, "groups": [p.pattern for p in options.groups],
        "from_beginning": options.from_beginning, "isolation": "read_committed",
        "started_ms": summary.started_ms, "ended_ms": summary.ended_ms, "stopped_by": summary.reason,
        "records": summary.records, "samples": summary.samples, "missed_samples": summary.missed_samples,
        "recorded_groups": sorted(summary.groups), "topics": sorted(summary.topics),
    }
    (options.out_dir / "recording.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
