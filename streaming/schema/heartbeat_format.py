"""The heartbeat message: end offsets observed by the emitter, stamped with its clock.

One heartbeat tick is one or more messages (large clusters are split into chunks) on the heartbeat topic. The value
is compact JSON so a person can read it with any console consumer::

    {"v": 1, "ts": 1767225600000, "emitter": "host:1234", "seq": 42, "chunk": 0, "chunks": 1,
     "ends": [["orders", 0, 1500, 1500, 0], ...],      # topic, partition, high watermark, LSO, low watermark
     "quiet": [["payments", 3, 812, 801], ...],         # topic, partition, end offset, quiet from (optional)
     "oldest": [["orders", 0, 1200, 1203, 1767225512345], ...],  # topic, partition, from, record offset, its
                                                        # timestamp (optional)
     "topic_ids": [["orders", "XuMxlfAoToyPp6uhLLiU4w"], ...]}  # topic, its id (optional, first chunk only)

``quiet`` says, for a partition whose end offset has not moved, the first offset from which a ``read_committed``
consumer gets no more records up to that end: what lies there is only transaction markers and aborted records (the
emitter reads the partition's tail to find out, see ``streaming.kafka.tail_probe``). A consumer whose committed
offset is at or past it has read everything there is. ``topic_ids`` names the id of topics whose id the emitter
has just learnt, and every few minutes of all (``streaming.kafka.topic_ids`` says why the model needs them).
``oldest`` gives, for a committed offset of a lagging consumer (``from``), the offset and timestamp (ms) of the first
record a ``read_committed`` consumer gets at or after it: the oldest record that consumer has not processed. It is
usually the record at ``from`` itself; where that offset is a transaction marker, an aborted record or compacted
away, it is the next record delivered, so the same answer holds for every committed offset from ``from`` up to the
record's offset (the emitter reads it, see ``streaming.kafka.oldest_probe``). Readers that do not know a key ignore
it, so none of them needs a new version.

This module only encodes and decodes; the emitter lives in ``streaming.kafka.heartbeat``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = ["Heartbeat", "EndOffsets", "QuietTail", "OldestRecord", "encode_heartbeats", "decode_heartbeat",
           "HeartbeatError"]

VERSION = 1
EndOffsets = tuple[str, int, int, int, int]  # topic, partition, high watermark, last stable offset, low watermark
QuietTail = tuple[str, int, int, int]  # topic, partition, the end offset it was read at, the first quiet offset


class HeartbeatError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class OldestRecord:
    """The first record a ``read_committed`` consumer positioned at ``from_offset`` gets: its offset and timestamp
    (ms, the record's own: CreateTime or LogAppendTime, as the topic says). Holds for every position from
    ``from_offset`` up to ``offset``."""

    topic: str
    partition: int
    from_offset: int
    offset: int
    timestamp_ms: int

    def covers(self, committed: int) -> bool:
        """Whether a consumer committed at ``committed`` gets this record next."""
        return self.from_offset <= committed <= self.offset


@dataclass(frozen=True, slots=True)
class Heartbeat:
    timestamp_ms: int
    emitter: str
    seq: int
    chunk: int
    chunks: int
    ends: tuple[EndOffsets, ...]
    quiet: tuple[QuietTail, ...] = ()
    topic_ids: tuple[tuple[str, str], ...] = ()  # (topic, id in Kafka's text form)
    oldest: tuple[OldestRecord, ...] = ()


def encode_heartbeats(timestamp_ms: int, emitter: str, seq: int, ends: Sequence[EndOffsets],
                      chunk_size: int = 5000, quiet: Sequence[QuietTail] = (),
                      topic_ids: Sequence[tuple[str, str]] = (), oldest: Sequence[OldestRecord] = ()) -> list[bytes]:
    """Splits one tick's end offsets into messages of at most ``chunk_size`` partitions; a partition's quiet tail
    and oldest records travel in the message that carries its end offsets, the topic ids in the first message."""
    chunks = [ends[i : i + chunk_size] for i in range(0, len(ends), chunk_size)] or [[]]
    quiet_of = {(q[0], q[1]): q for q in quiet}
    oldest_of: dict[tuple[str, int], list[list]] = {}
    for o in oldest:
        oldest_of.setdefault((o.topic, o.partition), []).append(
            [o.topic, o.partition, o.from_offset, o.offset, o.timestamp_ms])
    out = []
    for i, chunk in enumerate(chunks):
        obj = {"v": VERSION, "ts": timestamp_ms, "emitter": emitter, "seq": seq, "chunk": i, "chunks": len(chunks),
               "ends": [list(e) for e in chunk]}
        tails = [list(quiet_of[e[0], e[1]]) for e in chunk if (e[0], e[1]) in quiet_of] if quiet_of else []
        if tails:
            obj["quiet"] = tails
        records = [r for e in chunk for r in oldest_of.get((e[0], e[1]), ())] if oldest_of else []
        if records:
            obj["oldest"] = records
        if i == 0 and topic_ids:
            obj["topic_ids"] = [[t, tid] for t, tid in topic_ids]
        out.append(json.dumps(obj, separators=(",", ":")).encode())
    return out


def decode_heartbeat(value: bytes | None) -> Heartbeat:
    """Raises :class:`HeartbeatError` for anything that is not a heartbeat of a known version."""
    if value is None:
        raise HeartbeatError("heartbeat without a value")
    try:
        obj = json.loads(value)
        if obj.get("v") != VERSION:
            raise HeartbeatError(f"unknown heartbeat version {obj.get('v')!r}")
        ends = tuple((str(t), int(p), int(h), int(s), int(lw)) for t, p, h, s, lw in obj["ends"])
        quiet = tuple((str(t), int(p), int(end), int(q)) for t, p, end, q in obj.get("quiet", ()))
        topic_ids = tuple((str(t), str(tid)) for t, tid in obj.get("topic_ids", ()))
        oldest = tuple(OldestRecord(str(t), int(p), int(f), int(o), int(ts))
                       for t, p, f, o, ts in obj.get("oldest", ()))
        return Heartbeat(int(obj["ts"]), str(obj.get("emitter", "")), int(obj.get("seq", 0)),
                         int(obj.get("chunk", 0)), int(obj.get("chunks", 1)), ends, quiet, topic_ids, oldest)
    except HeartbeatError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HeartbeatError(f"not a heartbeat: {exc}") from None


def iter_ends(heartbeats: Iterable[Heartbeat]) -> Iterable[tuple[int, EndOffsets]]:
    for hb in heartbeats:
        for e in hb.ends:
            yield hb.timestamp_ms, e
