"""When will a consumer catch up? The time to work off its lag at the current consumption and production rates.

Both rates come from what the model already keeps per partition: the commit window (``(commit time, committed
offset)``, the last few commits) and the end-offset history (``(heartbeat time, end offset)``). Over one span, from
the oldest commit of the window that the history covers to ``now``:

* consumption rate = (newest committed offset - oldest committed offset) / span;
* production rate = (end offset at ``now`` - end offset at the span's start, interpolated in the history) / span;
* time to catch up = lag / (consumption - production) when consumption is faster, else *not catching up*.

A consumer that keeps up still has a lag between two commits (what arrived since its last one), and its
consumption equals production, so by the rates alone it would never catch up, and every healthy group would page
"will not catch up". It has caught up (0 s) when the end offset passed its latest committed offset no longer ago
than twice its commit interval (plus :data:`MIN_SPAN_MS` for the heartbeat's own granularity): it is where the log
ended a commit or two ago.

The span ends at ``now``, not at the newest commit, so a consumer that stopped committing slows down as the
silence grows and soon counts as not catching up, while one that commits every few seconds loses almost nothing.
A partition without lag has caught up (0 s). Too little to go on (fewer than two commits since the history's first
sample, which is taken when the group's first commit makes the model track the topic; no end-offset history; a span
under :data:`MIN_SPAN_MS`) is *unknown*, never a guess.

A group has caught up when its slowest partition has: the group's time is the largest of its partitions', and a
group with one lagging partition that is not catching up is not catching up.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["CatchUp", "UNKNOWN", "CAUGHT_UP", "NOT_CATCHING_UP", "MIN_SPAN_MS", "partition_catch_up",
           "group_catch_up"]

# The shortest span a rate is worked out over: a shorter one is noise (two commits a few ms apart).
MIN_SPAN_MS = 2_000


@dataclass(frozen=True, slots=True)
class CatchUp:
    """``catching_up`` None: unknown; False: consumption is not faster than production (``seconds`` None); True:
    ``seconds`` until the lag is worked off at the current rates (0: no lag)."""

    catching_up: bool | None
    seconds: float | None = None

    @property
    def known(self) -> bool:
        return self.catching_up is not None


UNKNOWN = CatchUp(None)
CAUGHT_UP = CatchUp(True, 0.0)
NOT_CATCHING_UP = CatchUp(False)


def _time(sample: tuple[int, int]) -> int:
    return sample[0]


def _end_at(history: Sequence[tuple[int, int]], t_ms: int) -> float | None:
    """The end offset at ``t_ms``, interpolated between the history's samples (None before its first)."""
    i = bisect_right(history, t_ms, key=_time)
    if i == 0:
        return None
    if i == len(history):
        return float(history[-1][1])
    (t0, e0), (t1, e1) = history[i - 1], history[i]
    return e0 + (e1 - e0) * (t_ms - t0) / (t1 - t0)


def partition_catch_up(lag: int | None, commits: Sequence[tuple[int, int]], ends: Sequence[tuple[int, int]],
                       now_ms: int) -> CatchUp:
    """The catch-up of one partition: ``lag`` its offset lag now (None: not known), ``commits`` its commit window
    and ``ends`` its end-offset history, both ``(time ms, offset)`` oldest first."""
    if lag is None:
        return UNKNOWN
    if lag <= 0:
        return CAUGHT_UP
    if not ends:
        return UNKNOWN
    # Production is known from the history's first sample on: the span starts at the oldest commit since then.
    first = ends[0][0]
    if commits and commits[0][0] < first:
        commits = commits[bisect_right(commits, first - 1, key=_time):]
    if len(commits) < 2:
        return UNKNOWN
    if _keeping_up(commits, ends, now_ms):
        return CAUGHT_UP
    start_ms, start_offset = commits[0]
    span_ms = now_ms - start_ms
    if span_ms < MIN_SPAN_MS:
        return UNKNOWN
    start_end = _end_at(ends, start_ms)
    if start_end is None:
        return UNKNOWN
    end_now = _end_at(ends, now_ms)
    consumed = max(0, commits[-1][1] - start_offset)
    produced = max(0.0, (end_now if end_now is not None else ends[-1][1]) - start_end)
    net_per_s = (consumed - produced) * 1000.0 / span_ms
    if net_per_s <= 0:
        return NOT_CATCHING_UP
    return CatchUp(True, lag / net_per_s)


def _keeping_up(commits: Sequence[tuple[int, int]], ends: Sequence[tuple[int, int]], now_ms: int) -> bool:
    """The end offset passed the latest committed offset at most two commit intervals (and the heartbeat's
    granularity) ago: the lag is what arrived since the last commit or two, not a backlog."""
    committed = commits[-1][1]
    first_above = next((i for i, (_, end) in enumerate(ends) if end > committed), None)
    if not first_above:
        # None: the history never shows the end above it; 0: it was above it from the history's first sample on,
        # so when it passed is not known. Either way no sign of keeping up: judge by the rates.
        return False
    interval = (commits[-1][0] - commits[0][0]) / (len(commits) - 1)
    return now_ms - ends[first_above][0] <= 2 * interval + MIN_SPAN_MS


def group_catch_up(partitions: Iterable[CatchUp]) -> CatchUp:
    """The group's catch-up from its partitions': not catching up if one is not, unknown if one is unknown, else
    the slowest partition's time (0 for a group without partitions)."""
    worst = 0.0
    unknown = False
    for c in partitions:
        if c.catching_up is False:
            return NOT_CATCHING_UP
        if c.catching_up is None:
            unknown = True
        elif c.seconds is not None and c.seconds > worst:
            worst = c.seconds
    return UNKNOWN if unknown else CatchUp(True, worst)
