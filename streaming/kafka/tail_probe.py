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

* a partition whose last offset is a record has nothing quiet at its end: the first look at each partition reads
  only its last offset, once, and a partition found that way is left alone unless a transaction is later seen
  open on it (LSO below the high watermark at a tick). The first look is what finds an aborted tail that was
  already there when the emitter started; a producer that dies inside a transaction later leaves it open until
  ``transaction.timeout.ms``, long enough to be seen;
* a partition seen carrying transactions, or whose last offset was not a record, has its last ``window`` offsets
  read whenever its end moves and settles: a quiet stretch longer than the window is reported from the window's
  start, which is true, only less than the whole stretch;
* only once the end offset stayed put for a whole tick, with nothing open: a tail that is still growing is read by
  its consumers anyway, and is about to change;
* at most ``max_partitions`` per tick and for at most ``budget_s`` (transactional partitions first): the rest wait
  for the next tick, so a cluster of many partitions is looked at over some minutes, never in one burst.

The probe needs read access to the topics; where this monitor may only describe them the read fails, which is said
once per topic, and lag there counts every offset, as it does without a probe.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from .read_access import NOT_READABLE, UnreadableTopics
from .reader import OffsetRange, read_ranges

__all__ = ["TailProbe", "read_last_offsets"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class _Tail:
    end: int  # the high watermark the tail was read at
    quiet_from: int  # first offset from which nothing is delivered up to ``end``


def read_last_offsets(kafka: Mapping[str, str], ranges: list[OffsetRange],
                      timeout_s: float = 5.0) -> dict[TopicPartition, int]:
    """The offset of the last record a ``read_committed`` consumer gets in each range (absent: none at all)."""
    batches = list(read_ranges(kafka, ranges, timeout_s=timeout_s, isolation="read_committed",
                               fail_on=NOT_READABLE))
    if not batches:
        return {}
    last = pa.Table.from_batches(batches).group_by(["topic", "partition"]).aggregate([("offset", "max")])
    return {(t, p): off for t, p, off in zip(last.column("topic").to_pylist(), last.column("partition").to_pylist(),
                                             last.column("offset_max").to_pylist())}


class TailProbe:
    """Which tails to read at a tick, and what the heartbeat says about them.

    Each partition is *unknown* until its tail is first read, *plain* when its last offset was a record then (it is
    left alone unless a transaction is later seen open on it), *transactional* when a transaction was seen open on
    it or its last offset was not a record (a marker, or aborted). A transactional partition's tail is read again
    whenever its end moves and settles. The first look at an unknown partition reads only its last offset, so
    watching many plain partitions costs one small read each, once; it is what finds an aborted tail that was
    already there when the emitter started.
    """

    def __init__(self, read: Callable[[list[OffsetRange]], Mapping[TopicPartition, int]], *,
                 window: int = 1000, max_partitions: int = 200, budget_s: float = 2.0,
                 retry_after_s: float = 600.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.read = read
        self.window = window
        self.max_partitions = max_partitions
        self.budget_s = budget_s
        self.clock = clock
        self._kind: dict[TopicPartition, str] = {}  # "plain" or "transactional"; absent: unknown
        self._previous: Mapping[TopicPartition, tuple[int, int, int]] = {}  # the ends at the last tick
        self._tails: dict[TopicPartition, _Tail] = {}
        self.unreadable = UnreadableTopics(
            "cannot read the end of topic %s to tell aborted transactions from unread records (%s); lag there "
            "counts every offset", retry_after_s=retry_after_s, clock=clock)

    def due(self, ends: Mapping[TopicPartition, tuple[int, int, int]]) -> list[OffsetRange]:
        """Takes this tick's ``(high watermark, LSO, low watermark)`` per partition; returns the tails to read,
        transactional partitions first."""
        previous, self._previous = self._previous, dict(ends)
        for known in (self._tails, self._kind):
            for tp in [tp for tp in known if tp not in ends]:
                del known[tp]
        transactional: list[OffsetRange] = []
        unknown: list[OffsetRange] = []
        for tp, (hw, lso, low) in ends.items():
            if 0 <= lso < hw:
                self._kind[tp] = "transactional"
                continue
            kind = self._kind.get(tp)
            if kind == "plain" or previous.get(tp) != (hw, lso, low) or hw <= max(0, low):
                continue
            if self.unreadable.skipped(tp[0]):
                continue
            tail = self._tails.get(tp)
            if tail is not None and tail.end == hw:
                continue
            if kind == "transactional":
                transactional.append(self._window(tp, hw, low))
            else:
                unknown.append(OffsetRange(tp[0], tp[1], hw - 1, hw))
        return (transactional + unknown)[: self.max_partitions]

    def _window(self, tp: TopicPartition, hw: int, low: int) -> OffsetRange:
        return OffsetRange(tp[0], tp[1], max(0, low, hw - self.window), hw)

    def probe(self, ranges: list[OffsetRange]) -> None:
        """Reads the tails, a topic at a time (a topic this monitor may not read fails alone, and is left alone for
        ``retry_after_s``), for at most ``budget_s`` a tick: what is left is due again at the next."""
        by_topic: dict[str, list[OffsetRange]] = {}
        for r in ranges:
            by_topic.setdefault(r.topic, []).append(r)
        started = self.clock()
        for topic, todo in by_topic.items():
            if self.clock() - started > self.budget_s:
                break
            last = self._read(topic, todo)
            if last is None:
                continue
            windows, again = [], []
            for r in todo:
                tp = (r.topic, r.partition)
                if r.size > 1 or self._kind.get(tp) is not None:
                    windows.append(r)
                elif tp in last:
                    self._kind[tp] = "plain"  # a first look: its last offset is a record, nothing is quiet
                else:
                    self._kind[tp] = "transactional"  # a first look found a marker or aborted records
                    again.append(self._window(tp, r.end, self._previous[tp][2]))
            self._record(windows, last)
            if again:
                self._record(again, self._read(topic, again) or {})

    def _record(self, windows: list[OffsetRange], last: Mapping[TopicPartition, int]) -> None:
        """The quiet offset of each window read: after its last delivered record, or its start if none was."""
        for r in windows:
            tp = (r.topic, r.partition)
            self._tails[tp] = _Tail(r.end, last[tp] + 1 if tp in last else r.start)

    def _read(self, topic: str, ranges: list[OffsetRange]) -> Mapping[TopicPartition, int] | None:
        try:
            return self.read(ranges)
        except Exception as exc:  # noqa: BLE001 - a probe never stops the heartbeat
            self.unreadable.failed(topic, exc)
            return None

    def quiet(self, ends: Mapping[TopicPartition, tuple[int, int, int]]) -> list[tuple[str, int, int, int]]:
        """``(topic, partition, end, quiet from)`` for every tail read at the partition's current end that has
        offsets no consumer gets."""
        out = []
        for tp, tail in self._tails.items():
            e = ends.get(tp)
            if e is not None and tail.end == e[0] == e[1] and 0 <= tail.quiet_from < tail.end:
                out.append((tp[0], tp[1], tail.end, tail.quiet_from))
        return out
