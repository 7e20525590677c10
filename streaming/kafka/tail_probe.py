"""Reading the tail of transactional partitions: where does the last record a ``read_committed`` consumer gets end?

A producer whose last transaction was aborted (it called abort, or it died and the transaction timed out) leaves
the aborted records and an ABORT marker at the end of each partition it wrote. No ``read_committed`` consumer ever
receives them, and a consumer that commits the offset after the last record it processed (librdkafka's stored
offsets, ``record.offset() + 1`` in most frameworks) stays that many offsets "behind" forever: end-offset lag
alone says it stopped with lag, which pages someone for a consumer that has read everything there is.

So the heartbeat emitter reads the tail of such partitions once, with ``read_committed``, and reports the first
offset from which nothing more is delivered up to the end (its *quiet* offset). The model then counts a consumer
committed at or past it as caught up (``streaming.model.lag``).

Which partitions, and why:

* only those seen carrying an open transaction (LSO below the high watermark at a tick) or whose tail was found
  quiet before: a partition without transactions never has an undeliverable tail, and reading the tail of every
  partition would cost a fetch per partition whenever one goes idle. A producer that dies inside a transaction
  leaves it open until ``transaction.timeout.ms``, long enough to be seen;
* only once the end offset stayed put for a whole tick, with nothing open: a tail that is still growing is read
  by its consumers anyway, and is about to change;
* once per end offset, at most ``max_partitions`` per tick, the last ``window`` offsets: a quiet stretch longer than
  the window is reported from the window's start, which is true, only less than the whole stretch.

The probe needs read access to the topics; where this monitor may only describe them the read fails, which is said
once per topic, and lag there counts every offset, as it does without a probe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .reader import OffsetRange, read_ranges

__all__ = ["TailProbe", "read_last_offsets"]

log = logging.getLogger("groupscope.heartbeat")

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class _Tail:
    end: int  # the high watermark the tail was read at
    quiet_from: int  # first offset from which nothing is delivered up to ``end`` (-1: the read failed)


def read_last_offsets(kafka: Mapping[str, str], ranges: list[OffsetRange],
                      timeout_s: float = 10.0) -> dict[TopicPartition, int]:
    """The offset of the last record a ``read_committed`` consumer gets in each range (absent: none at all)."""
    last: dict[TopicPartition, int] = {}
    for batch in read_ranges(kafka, ranges, timeout_s=timeout_s, isolation="read_committed"):
        topics = batch.column("topic").to_pylist()
        partitions = batch.column("partition").to_pylist()
        for t, p, off in zip(topics, partitions, batch.column("offset").to_pylist()):
            if off > last.get((t, p), -1):
                last[(t, p)] = off
    return last


class TailProbe:
    """Which transactional tails to read at a tick, and what the heartbeat says about them."""

    def __init__(self, read: Callable[[list[OffsetRange]], Mapping[TopicPartition, int]], *,
                 window: int = 1000, max_partitions: int = 200) -> None:
        self.read = read
        self.window = window
        self.max_partitions = max_partitions
        self._transactional: set[TopicPartition] = set()
        self._previous: dict[TopicPartition, tuple[int, int]] = {}
        self._tails: dict[TopicPartition, _Tail] = {}
        self._failed_topics: set[str] = set()  # said once each

    def due(self, ends: Mapping[TopicPartition, tuple[int, int, int]]) -> list[OffsetRange]:
        """Takes this tick's ``(high watermark, LSO, low watermark)`` per partition; returns the tails to read."""
        previous, self._previous = self._previous, {tp: (e[0], e[1]) for tp, e in ends.items()}
        for tp in [tp for tp in self._tails if tp not in ends]:
            del self._tails[tp]
        self._transactional &= ends.keys()
        out: list[OffsetRange] = []
        for tp, (hw, lso, low) in ends.items():
            if 0 <= lso < hw:
                self._transactional.add(tp)
                continue
            if tp not in self._transactional or previous.get(tp) != (hw, lso):
                continue
            tail = self._tails.get(tp)
            if tail is not None and tail.end == hw:
                continue
            start = max(0, low, hw - self.window)
            if hw > start:
                out.append(OffsetRange(tp[0], tp[1], start, hw))
                if len(out) == self.max_partitions:
                    break
        return out

    def probe(self, ranges: list[OffsetRange]) -> None:
        """Reads the tails, a topic at a time (a topic this monitor may not read fails alone); a failed read is
        tried again once the partition's end moves."""
        by_topic: dict[str, list[OffsetRange]] = {}
        for r in ranges:
            by_topic.setdefault(r.topic, []).append(r)
        for topic, todo in by_topic.items():
            try:
                last = self.read(todo)
            except Exception as exc:  # noqa: BLE001 - a probe never stops the heartbeat
                if topic not in self._failed_topics:
                    self._failed_topics.add(topic)
                    log.info("cannot read the end of topic %s to tell aborted transactions from unread records "
                             "(%s); lag there counts every offset", topic,
                             (str(exc).splitlines() or [type(exc).__name__])[0])
                last = None
            for r in todo:
                tp = (r.topic, r.partition)
                quiet = -1 if last is None else (last[tp] + 1 if tp in last else r.start)
                self._tails[tp] = _Tail(r.end, quiet)

    def quiet(self, ends: Mapping[TopicPartition, tuple[int, int, int]]) -> list[tuple[str, int, int, int]]:
        """``(topic, partition, end, quiet from)`` for every tail read at the partition's current end that has
        offsets no consumer gets."""
        out = []
        for tp, tail in self._tails.items():
            e = ends.get(tp)
            if e is not None and tail.end == e[0] == e[1] and 0 <= tail.quiet_from < tail.end:
                out.append((tp[0], tp[1], tail.end, tail.quiet_from))
        return out
