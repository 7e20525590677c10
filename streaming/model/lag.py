"""Offset lag and time lag from heartbeat end offsets: never negative, bounded, never absurd.

The heartbeat (docs/design-notes.md#heartbeat) reports per topic-partition the high watermark, the last stable offset and the low
watermark, stamped with the emitter's clock. This module keeps the latest sample and a bounded history of
``(time, end offset)`` per topic-partition, shared by every group of the shard, and answers:

* **offset lag** = end − committed, clamped at 0 (docs/design-notes.md#lag-lessons: negative lag from timing skew). The end is the LSO
  capped by the high watermark: a read_committed consumer cannot pass the LSO, and a racing sample where LSO > HWM
  (seen in the conformance capture) must not inflate lag. On a partition known to carry transactions, a consumer
  positioned exactly on the final COMMIT/ABORT marker (committed == end − 1 with nothing open) has nothing left to
  read: a transaction always writes at least one data record before its marker, so ``end − 1`` is the marker
  itself. That lag counts as 0 (docs/design-notes.md#lag-lessons). More generally, where the heartbeat says the
  partition's tail is *quiet* from some offset (the emitter read it: only markers and aborted records from there to
  the end), a consumer committed at or past that offset has nothing left to read and its lag is 0: a producer
  whose last transaction was aborted leaves its records and the ABORT marker behind it, which no ``read_committed``
  consumer ever gets.
* **time lag**: when did the log end pass the committed offset? Interpolated between the two history samples that
  bracket it (Kafka Lag Exporter's idea). Unlike KLE it never extrapolates: a committed offset older than the
  history gives ``now − oldest sample`` flagged as a lower bound, so a group replaying months of data shows "at
  least the history span", not astronomical seconds, and an idle caught-up partition shows 0. The history is
  thinned rather than cut when full (:meth:`EndOffsetHistory._thin`), so it spans everything since the first
  heartbeat the model saw, densest for the most recent minutes.
* **measured time lag**: where the heartbeat brings the timestamp of the oldest record a consumer committed at that
  offset has not processed (the emitter read it, ``streaming.kafka.oldest_probe``), the time lag is that record's
  age, ``now − its timestamp``, and is preferred: it needs no history, so it is exact where interpolation gives a
  lower bound (a consumer that fell behind before the monitor started). :meth:`EndOffsetHistory.measured_lag`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import Mapping

__all__ = ["EndOffsetSample", "EndOffsetHistory", "offset_lag", "DEFAULT_HISTORY", "MEASURED", "INTERPOLATED"]

DEFAULT_HISTORY = 64

# How a time lag was found (the ``lag_seconds_method`` of the lag table, the API and /metrics).
MEASURED = "measured"  # the age of the oldest record not processed, read from the partition
INTERPOLATED = "interpolated"  # when the log end passed the committed offset, from the end-offset history


@dataclass(frozen=True, slots=True)
class EndOffsetSample:
    """One heartbeat observation of a topic-partition (ms since epoch, emitter's clock)."""

    high_watermark: int
    last_stable_offset: int = -1  # -1 = not reported: the high watermark is used
    low_watermark: int = -1
    time_ms: int = -1
    transactional: bool | None = None  # None = unknown (inferred from LSO < HWM)
    # First offset from which a read_committed consumer gets nothing more up to this high watermark (-1: not known).
    quiet_from: int = -1
    # Oldest records read at this tick: (from offset, record offset, timestamp ms), each the first record a
    # read_committed consumer positioned anywhere from ``from offset`` up to ``record offset`` gets.
    oldest: tuple[tuple[int, int, int], ...] = ()


def offset_lag(committed: int, hwm: int, lso: int = -1, transactional: bool = False,
               quiet_from: int = -1) -> tuple[int, int]:
    """``(end, lag)`` for one partition: lag never negative, a lone trailing marker or a quiet tail never counts.

    Raises:
        ValueError: a negative high watermark (not an end offset).
    """
    if hwm < 0:
        raise ValueError(f"high watermark must be >= 0, got {hwm}")
    end = hwm if lso < 0 or lso > hwm else lso
    lag = end - committed
    if lag > 0 and (0 <= quiet_from <= committed or (lag == 1 and transactional and lso == hwm)):
        lag = 0  # only markers and aborted records are left (module docstring)
    return end, (lag if lag > 0 else 0)


class EndOffsetHistory:
    """Latest end offsets of one topic-partition plus a bounded ``(time, end)`` history.

    Flat-line compression as in KLE: when the end offset equals the last two samples, the newest sample's time is
    moved forward instead of appending, so an idle partition keeps its whole history span in few samples.
    """

    __slots__ = ("hwm", "lso", "lwm", "time_ms", "transactional", "quiet_from", "oldest", "times", "ends", "capacity",
                 "_samples")

    def __init__(self, capacity: int = DEFAULT_HISTORY) -> None:
        self.hwm = -1
        self.lso = -1
        self.lwm = -1
        self.time_ms = -1
        self.transactional = False
        self.quiet_from = -1  # of the latest sample only: it says something about that sample's end
        self.oldest: tuple[tuple[int, int, int], ...] = ()  # of the latest sample only, as the emitter resends them
        self.times = array("q")
        self.ends = array("q")
        self.capacity = capacity
        self._samples: tuple[tuple[int, int], ...] | None = None

    def samples(self) -> tuple[tuple[int, int], ...]:
        """The history as ``(time ms, end offset)`` pairs, oldest first: what the status rules read.

        Kept until the next sample changes the history, because every group of the shard that commits this
        topic-partition reads the same pairs at every snapshot: built once per heartbeat instead of once per group
        and snapshot (it was an eighth of a full snapshot's time)."""
        if self._samples is None:
            self._samples = tuple(zip(self.times, self.ends))
        return self._samples

    def observe(self, sample: EndOffsetSample) -> None:
        """Records a heartbeat sample; older or equal times are ignored (out-of-order heartbeats)."""
        t = sample.time_ms
        if t <= self.time_ms and self.time_ms >= 0:
            return
        hwm, lso = sample.high_watermark, sample.last_stable_offset
        self.hwm, self.lso, self.lwm, self.time_ms = hwm, lso, sample.low_watermark, t
        # Only a tail read at this very end offset, with nothing open, says anything about it.
        q = sample.quiet_from
        self.quiet_from = q if 0 <= q < hwm and lso in (-1, hwm) else -1
        self.oldest = sample.oldest
        if sample.transactional is not None:
            self.transactional = sample.transactional
        elif 0 <= lso < hwm:
            self.transactional = True  # an open transaction was seen: the partition carries transactions
        end = hwm if lso < 0 or lso > hwm else lso
        times, ends = self.times, self.ends
        self._samples = None
        if ends and end < ends[-1]:
            # The log went backwards (topic deleted and recreated, unclean truncation): history no longer applies.
            del times[:], ends[:]
        n = len(ends)
        if n >= 2 and ends[-1] == end and ends[-2] == end:
            times[-1] = t
            return
        times.append(t)
        ends.append(end)
        if n + 1 > self.capacity:
            self._thin()

    def _thin(self) -> None:
        """Full: a quarter of the samples go, those whose going leaves the smallest gap for their age, so the
        spacing of what stays grows with age (about geometrically) while the oldest and the newest stay.

        Dropping the oldest sample instead kept only ``capacity`` heartbeats (64 × 5 s, about 5 minutes), so a
        consumer stopped for longer showed a lower bound of about 5 minutes forever and a 10-minute time-lag alert
        could never fire. Thinned, the history reaches back to the first sample, and a time lag is interpolated
        between samples whose gap is a small fraction of that lag. Cost: one pass over ``capacity`` samples every
        ``capacity / 4`` heartbeats."""
        times, ends = self.times, self.ends
        n = len(times)
        now = times[-1]
        drop = max(1, n - (3 * self.capacity) // 4)
        # Score of dropping sample i: the gap it leaves, relative to the age of that gap's older end.
        scored = sorted(range(1, n - 1), key=lambda i: (times[i + 1] - times[i - 1]) / (now - times[i - 1] + 1))
        gone: set[int] = set()
        for i in scored:
            if len(gone) == drop:
                break
            if i - 1 not in gone and i + 1 not in gone:  # neighbours' scores changed: take them next time
                gone.add(i)
        keep = [i for i in range(n) if i not in gone]
        self.times = array("q", (times[i] for i in keep))
        self.ends = array("q", (ends[i] for i in keep))

    @property
    def end(self) -> int:
        hwm, lso = self.hwm, self.lso
        return hwm if lso < 0 or lso > hwm else lso

    def lag(self, committed: int) -> tuple[int, int]:
        return offset_lag(committed, self.hwm, self.lso, self.transactional, self.quiet_from)

    def time_lag(self, committed: int, now_ms: int, lag: int | None = None) -> tuple[float | None, bool]:
        """``(seconds, lower_bound)``: how long ago the log end passed ``committed``.

        0 when caught up (idle partitions never show time lag); None without history. ``lag`` is
        ``self.lag(committed)[1]`` when the caller has it already (a snapshot does).
        """
        times, ends = self.times, self.ends
        if not ends:
            return None, False
        if (self.lag(committed)[1] if lag is None else lag) == 0:
            return 0.0, False
        i = bisect_right(ends, committed)  # first sample whose end passed the committed offset (ends never go down)
        if i >= len(ends):
            return 0.0, False
        if i == 0:
            return max(0.0, (now_ms - times[0]) / 1000.0), True
        e0, e1, t0, t1 = ends[i - 1], ends[i], times[i - 1], times[i]
        # The record at ``committed`` was appended when the end went from committed to committed + 1.
        frac = (committed + 1 - e0) / (e1 - e0)
        passed = t0 + frac * (t1 - t0)
        return max(0.0, (now_ms - passed) / 1000.0), False

    def measured_lag(self, committed: int, now_ms: int) -> float | None:
        """The age in seconds of the oldest record a consumer committed at ``committed`` has not processed, from
        the newest heartbeat's oldest records (None: none of them covers that offset). Never negative: a producer
        clock ahead of the emitter's makes a record look younger than it is, not from the future."""
        for start, offset, ts in self.oldest:
            if start <= committed <= offset:
                return max(0.0, (now_ms - ts) / 1000.0)
        return None

    _FIELDS = ("hwm", "lso", "lwm", "time_ms", "transactional", "capacity", "quiet_from", "oldest")

    def to_state(self) -> dict:
        """The latest end and the history by name (:mod:`.state_format`)."""
        out = {name: getattr(self, name) for name in self._FIELDS}
        out["times"], out["ends"] = self.times.tobytes(), self.ends.tobytes()
        return out

    @classmethod
    def from_state(cls, state: Mapping) -> "EndOffsetHistory":
        h = cls(state["capacity"])
        for name in cls._FIELDS:
            if name in state:
                setattr(h, name, state[name])
        h.times.frombytes(state["times"])
        h.ends.frombytes(state["ends"])
        return h
