"""The heartbeat message: end offsets observed by the emitter, stamped with its clock.

One heartbeat tick is one or more messages (large clusters are split into chunks) on the heartbeat topic. The value
is compact JSON so a person can read it with any console consumer::

    {"v": 1, "ts": 1767225600000, "emitter": "host:1234", "seq": 42, "chunk": 0, "chunks": 1,
     "ends": [["orders", 0, 1500, 1500, 0], ...],      # topic, partition, high watermark, LSO, low watermark
     "quiet": [["payments", 3, 812, 801], ...],         # topic, partition, end offset, quiet from (optional)
     "topic_ids": [["orders", "XuMxlfAoToyPp6uhLLiU4w"], ...]}  # topic, its id (optional, first chunk only)

``quiet`` says, for a partition whose end offset has not moved, the first offset from which a ``read_committed``
consumer gets no more records up to that end: what lies there is only transaction markers and aborted records (the
emitter reads the partition's tail to find out, see ``streaming.kafka.tail_probe``). A consumer whose committed
offset is at or past it has read everything there is. ``topic_ids`` names the id of topics whose id the emitter
has just learnt, and every few minutes of all (``streaming.kafka.topic_ids`` says why the model needs them).
Readers that do not know a key ignore it, so neither needs a new version.

This module only encodes and decodes; the emitter lives in ``streaming.kafka.heartbeat``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = ["Heartbeat", "EndOffsets", "QuietTail", "encode_heartbeats", "decode_heartbeat", "HeartbeatError"]

VERSION = 1
EndOffsets = tuple[str, int, int, int, int]  # topic, partition, high watermark, last stable offset, low watermark
QuietTail = tuple[str, int, int, int]  # topic, partition, the end offset it was read at, the first quiet offset


class HeartbeatError(ValueError):
    pass


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


def encode_heartbeats(timestamp_ms: int, emitter: str, seq: int, ends: Sequence[EndOffsets],
                      chunk_size: int = 5000, quiet: Sequence[QuietTail] = (),
                      topic_ids: Sequence[tuple[str, str]] = ()) -> list[bytes]:
    """Splits one tick's end offsets into messages of at most ``chunk_size`` partitions; a partition's quiet tail
    travels in the message that carries its end offsets, the topic ids in the first message."""
    chunks = [ends[i : i + chunk_size] for i in range(0, len(ends), chunk_size)] or [[]]
    quiet_of = {(q[0], q[1]): q for q in quiet}
    out = []
    for i, chunk in enumerate(chunks):
        obj = {"v": VERSION, "ts": timestamp_ms, "emitter": emitter, "seq": seq, "chunk": i, "chunks": len(chunks),
               "ends": [list(e) for e in chunk]}
        tails = [list(quiet_of[e[0], e[1]]) for e in chunk if (e[0], e[1]) in quiet_of] if quiet_of else []
        if tails:
            obj["quiet"] = tails
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
        return Heartbeat(int(obj["ts"]), str(obj.get("emitter", "")), int(obj.get("seq", 0)),
                         int(obj.get("chunk", 0)), int(obj.get("chunks", 1)), ends, quiet, topic_ids)
    except HeartbeatError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HeartbeatError(f"not a heartbeat: {exc}") from None


def iter_ends(heartbeats: Iterable[Heartbeat]) -> Iterable[tuple[int, EndOffsets]]:
    for hb in heartbeats:
        for e in hb.ends:
            yield hb.timestamp_ms, e
