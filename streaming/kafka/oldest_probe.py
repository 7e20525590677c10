"""Measuring time lag: the timestamp of the oldest record a lagging consumer has not processed.

Lag in seconds interpolated from the end-offset history (``streaming.model.lag``) says when the log end passed the
committed offset, as seen from the heartbeats; it is only as good as that history (a consumer that fell behind
before the monitor started gets a lower bound). The record at the committed offset carries its own timestamp, so
its age is the time lag itself: the heartbeat emitter reads it, and the model prefers that figure
(``lag_seconds_method`` ``measured``) over the interpolated one.

What is read, and why:

* only committed offsets the job found behind: each shard's step lists its lagging partitions at every full
  refresh (``streaming.job.step``), and the driver hands the list to the emitter (:meth:`OldestProbe.want`);
* the first record a ``read_committed`` consumer gets at or after the committed offset: that offset itself may be a
  transaction marker, an aborted record or compacted away, and the consumer then gets the next record delivered,
  which is the oldest record it has not processed. Nothing delivered before the stable end (only markers and
  aborted records, or an open transaction) measures nothing: it is read again once the end moves;
* once per committed offset: a record's timestamp does not change, so the answer is kept while that offset stays
  wanted and sent in every heartbeat (the model keeps only the newest heartbeat's);
* at most ``max_partitions`` partitions a tick, for at most ``budget_s``, the oldest first (the largest interpolated
  lag in seconds, then the largest lag in offsets): on a cluster with many lagging partitions they are measured
  over several ticks, never in one burst; a read that did not finish in time goes to the back of the queue;
* committed offsets below the log start are not read (retention took the record: the partition is at risk of data
  loss, which the model says);
* at most ``max_kept`` answers are kept (and sent in every heartbeat): enough for the oldest few thousand lagging
  offsets, and a heartbeat message stays well below Kafka's default limit of 1 MB (each answer is about 35 bytes of
  JSON, ``benchmarks/bench_oldest_probe.py``). Beyond it nothing new is read until groups catch up or move on.

The timestamp is the record's own: the producer's clock where the topic keeps CreateTime (Kafka's default), the
broker's where it keeps LogAppendTime. Where this monitor may not read a topic, that is said once per topic
(:class:`~.read_access.UnreadableTopics`) and lag seconds there stay interpolated.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from streaming.schema.heartbeat_format import OldestRecord
from .client import consumer_config, with_logger
from .read_access import NOT_READABLE, UnreadableTopics
from .reader import OffsetRange

__all__ = ["Lagging", "FirstRecords", "OldestProbe", "read_first_records"]

_TP = tuple[str, int]
_Key = tuple[str, int, int]  # topic, partition, committed offset

log = logging.getLogger("groupscope.heartbeat")


@dataclass(frozen=True, slots=True)
class Lagging:
    """A committed offset the job found behind: what to measure, and how urgently."""

    topic: str
    partition: int
    committed: int
    lag: int
    lag_seconds: float | None  # interpolated (None: no end-offset history yet)


@dataclass(frozen=True, slots=True)
class FirstRecords:
    """The answer of one read: per range, the offset and timestamp of the first record delivered in it (absent:
    none yet, or none at all up to the range's end when its partition is in ``exhausted``), and the topics that
    could not be read, with why."""

    found: Mapping[_TP, tuple[int, int]]
    exhausted: frozenset[_TP] = frozenset()
    unreadable: Mapping[str, str] | None = None


def read_first_records(kafka: Mapping[str, str], ranges: list[OffsetRange], timeout_s: float) -> FirstRecords:
    """The first record a ``read_committed`` consumer gets in each range (start: the committed offset, end: the
    stable end), within ``timeout_s`` in all: a range whose record has not come by then is simply absent."""
    found: dict[_TP, tuple[int, int]] = {}
    exhausted: set[_TP] = set()
    unreadable: dict[str, str] = {}
    if not ranges:
        return FirstRecords(found)
    deadline = time.monotonic() + timeout_s
    conf = consumer_config(kafka, isolation="read_committed")
    conf.setdefault("max.partition.fetch.bytes", "65536")  # one batch is enough: the first record is wanted
    consumer = Consumer(with_logger(conf))
    todo = {(r.topic, r.partition): r for r in ranges}
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in ranges])
        while todo and time.monotonic() < deadline:
            messages = consumer.consume(num_messages=max(1, len(todo)), timeout=min(0.2, deadline - time.monotonic()))
            done: list[_TP] = []
            for m in messages:
                tp = (m.topic(), m.partition())
                err = m.error()
                if err is not None:
                    if err.code() in NOT_READABLE or err.fatal():
                        unreadable[m.topic()] = err.str()
                        done += [k for k in todo if k[0] == m.topic()]
                    continue
                r = todo.get(tp)
                if r is not None and tp not in done and m.offset() >= r.start:  # the first of its partition only
                    if m.offset() < r.end:
                        found[tp] = (m.offset(), m.timestamp()[1])
                    else:
                        exhausted.add(tp)
                    done.append(tp)
            if not messages:
                # read_committed skips markers and aborted records: the position can reach the end silently.
                for tp, r in todo.items():
                    position = consumer.position([TopicPartition(tp[0], tp[1])])[0].offset
                    if position >= r.end:
                        exhausted.add(tp)
                        done.append(tp)
            if done:
                gone = set(done)
                consumer.pause([TopicPartition(t, p) for t, p in gone if (t, p) in todo])
                todo = {tp: r for tp, r in todo.items() if tp not in gone}
    finally:
        consumer.close()
    return FirstRecords(found, frozenset(exhausted), unreadable)


@dataclass(slots=True)
class _Wanted:
    item: Lagging
    retry_at: float = 0.0  # a read that did not finish: not before then


class OldestProbe:
    """Which committed offsets to measure at a tick, and the oldest records to put in the heartbeat.

    ``read(ranges, timeout_s)`` reads the first records (:func:`read_first_records` on a real cluster). :meth:`want`
    is called from the driver's batch thread, the rest from the emitter's: the bookkeeping is under a lock, the read
    is not."""

    def __init__(self, read: Callable[[list[OffsetRange], float], FirstRecords], *, max_partitions: int = 100,
                 budget_s: float = 1.0, retry_after_s: float = 600.0, max_kept: int = 5000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.read = read
        self.max_partitions = max_partitions
        self.max_kept = max_kept
        self.budget_s = budget_s
        self.clock = clock
        self.unreadable = UnreadableTopics(
            "cannot read records of topic %s to measure time lag (%s); lag seconds there are interpolated from "
            "end offsets", retry_after_s=retry_after_s, clock=clock)
        self._by_shard: dict[int, dict[_Key, Lagging]] = {}
        self._wanted: dict[_Key, _Wanted] = {}
        self._measured: dict[_Key, tuple[int, int]] = {}  # -> (record offset, timestamp ms)
        self._nothing_until: dict[_Key, int] = {}  # nothing delivered from the committed offset up to this end
        self._lock = threading.Lock()

    def want(self, shard: int, lagging: Iterable[Lagging]) -> None:
        """Replaces what one shard lists as lagging (every partition of its groups that is behind)."""
        with self._lock:
            self._want(shard, lagging)

    def _want(self, shard: int, lagging: Iterable[Lagging]) -> None:
        self._by_shard[shard] = {(x.topic, x.partition, x.committed): x for x in lagging}
        items: dict[_Key, Lagging] = {}
        for listed in self._by_shard.values():
            for key, x in listed.items():
                if key not in items or _urgency(x) > _urgency(items[key]):
                    items[key] = x
        self._wanted = {key: _Wanted(x, self._wanted[key].retry_at if key in self._wanted else 0.0)
                        for key, x in items.items()}
        for known in (self._measured, self._nothing_until):
            for key in [k for k in known if k not in items]:
                del known[key]

    def due(self, ends: Mapping[_TP, tuple[int, int, int]]) -> list[OffsetRange]:
        """Takes this tick's ``(high watermark, LSO, low watermark)`` per partition; returns the committed offsets
        to read now (as ranges up to the stable end), the oldest first, at most ``max_partitions`` and one per
        partition (several groups behind on one partition are read at successive ticks)."""
        with self._lock:
            return self._due(ends)

    def _due(self, ends: Mapping[_TP, tuple[int, int, int]]) -> list[OffsetRange]:
        now = self.clock()
        room = self.max_kept - len(self._measured)
        due: list[tuple[tuple, OffsetRange]] = []
        for key, w in self._wanted.items():
            e = ends.get(key[:2])
            if key in self._measured or e is None or w.retry_at > now or self.unreadable.skipped(key[0]):
                continue
            hw, lso, low = e
            end = hw if lso < 0 or lso > hw else lso
            if key[2] < max(0, low) or key[2] >= end or self._nothing_until.get(key, -1) >= end:
                continue
            due.append((_urgency(w.item), OffsetRange(key[0], key[1], key[2], end)))
        due.sort(key=lambda d: d[0], reverse=True)
        out: dict[_TP, OffsetRange] = {}  # one offset per partition a read (a consumer reads it from one position)
        for _, r in due:
            if len(out) >= min(self.max_partitions, room):
                break
            out.setdefault((r.topic, r.partition), r)
        return list(out.values())

    def probe(self, ranges: list[OffsetRange]) -> None:
        """Reads the ranges in one go, for at most ``budget_s``; a range not answered waits a few ticks' worth
        of ``budget_s`` behind the others."""
        if not ranges:
            return
        try:
            answer = self.read(ranges, self.budget_s)
        except Exception as exc:  # noqa: BLE001 - a probe never stops the heartbeat: these wait, as unanswered
            log.debug("reading the oldest unprocessed records failed: %s", exc)
            answer = FirstRecords({})
        with self._lock:
            self._note(ranges, answer)

    def _note(self, ranges: list[OffsetRange], answer: FirstRecords) -> None:
        for topic, why in (answer.unreadable or {}).items():
            self.unreadable.failed(topic, why)
        later = self.clock() + 10 * self.budget_s
        for r in ranges:
            tp, key = (r.topic, r.partition), (r.topic, r.partition, r.start)
            if key not in self._wanted:
                continue  # the group moved on while it was read
            if tp in answer.found:
                self._measured[key] = answer.found[tp]
            elif tp in answer.exhausted:
                self._nothing_until[key] = r.end
            elif r.topic not in (answer.unreadable or {}):
                self._wanted[key].retry_at = later

    def oldest(self) -> list[OldestRecord]:
        """Every measured record still wanted, for this tick's heartbeat."""
        with self._lock:
            measured = sorted(self._measured.items())
        return [OldestRecord(t, p, c, offset, ts) for (t, p, c), (offset, ts) in measured
                if ts >= 0]


def _urgency(x: Lagging) -> tuple[float, int]:
    """The oldest first: the larger interpolated lag in seconds (unknown: last), then the larger lag."""
    return (-1.0 if x.lag_seconds is None else x.lag_seconds, x.lag)
