"""Partition and group status in the spirit of Burrow's evaluator: small named predicates, one pure function.

Mirrors linkedin/Burrow ``core/internal/evaluator/caching.go`` (rules in our words, prior-art §1.1), with the fixes
its users asked for (prior-art §2-3, §8): an idle partition (producer silent, consumer caught up) is always OK; a
consumer that was caught up when new data arrived is not STOPPED merely because its last commit is old (clients
such as librdkafka do not re-commit unchanged offsets); a commit window that is not yet full still lets STOP and
ERR fire. Everything is an argument: offset history, end-offset history, now and thresholds. No clock, no state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Status", "Thresholds", "Verdict", "evaluate_partition", "group_status", "RULES"]


class Status(enum.IntEnum):
    """Ordered harmless → worst, so a group's status is the max over its partitions (Burrow ``StatusConstant``)."""

    OK = 0
    WARN = 1  # lag grew at every commit of the window
    STALL = 2  # commits keep coming, the offset does not move, lag > allowed
    STOP = 3  # no commit for a long time while the log end moved past the committed offset
    REWIND = 4  # the committed offset went backwards and has not recovered
    ERR = 5  # data loss: the committed offset fell below the low watermark

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Evaluator knobs; defaults follow Burrow where it has one.

    Raises:
        ValueError: a negative or inconsistent value.
    """

    allowed_lag: int = 0  # Burrow ``allowed-lag``: lag at or below this is "caught up"
    min_window: int = 3  # commits needed before STALL / WARN / REWIND are judged (Burrow ``minimum-complete``)
    window: int = 8  # commits kept per partition (Burrow ``intervals`` = 10)
    min_distance_ms: int = 1_000  # commits closer than this overwrite the newest window slot (Burrow min-distance)
    stop_after_ms: int = 300_000  # no commit and behind for this long: STOP
    stall_recent_ms: int = 300_000  # STALL needs the last commit to be at least this recent (commits keep coming)

    def __post_init__(self) -> None:
        if self.allowed_lag < 0 or self.min_window < 1 or self.window < self.min_window:
            raise ValueError("thresholds: need allowed_lag >= 0 and 1 <= min_window <= window")
        if self.min_distance_ms < 0 or self.stop_after_ms <= 0 or self.stall_recent_ms <= 0:
            raise ValueError("thresholds: durations must be positive")


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    rule: str  # name of the rule that decided


def _end_at(ends: Sequence[tuple[int, int]], t: int) -> int | None:
    """End offset at time ``t`` by linear interpolation; before the first sample: the first sample's end."""
    if not ends:
        return None
    if t <= ends[0][0]:
        return ends[0][1]
    for (t0, e0), (t1, e1) in zip(ends, ends[1:]):
        if t0 <= t <= t1:
            return e1 if t1 == t0 else e0 + int((e1 - e0) * (t - t0) / (t1 - t0))
    return ends[-1][1]


def _passed_at(ends: Sequence[tuple[int, int]], committed: int) -> int | None:
    """Time of the first end sample beyond ``committed`` (None if the end never passed it)."""
    for t, e in ends:
        if e > committed:
            return t
    return None


# --- the rules: each a named predicate ------------------------------------------------------------------------


def is_data_loss(committed: int, low_watermark: int) -> bool:
    """Retention deleted records the group never consumed: its next fetch resets (scenario 9)."""
    return low_watermark >= 0 and committed < low_watermark


def is_caught_up(lag: int, th: Thresholds) -> bool:
    """Lag within the allowance: OK whatever the commit age. This is what keeps idle partitions quiet."""
    return lag <= th.allowed_lag


def is_stopped(offsets, ends, now_ms: int, th: Thresholds) -> bool:
    """No commit for ``stop_after_ms`` *and* the log end passed the committed offset at least that long ago.

    Burrow measures only the commit age and suppresses the rule when a recent end sample was <= the commit; this
    is the same idea stated directly: the consumer has been behind, without committing, for the whole period.
    """
    last_ts, last_off = offsets[-1]
    if now_ms - last_ts <= th.stop_after_ms:
        return False
    passed = _passed_at(ends, last_off)
    return passed is None or now_ms - passed > th.stop_after_ms


def is_rewind(offsets) -> bool:
    """Some offset in the window is lower than the one before it and the latest has not got back above it."""
    peak = offsets[0][1]
    rewound_from = None
    for _, off in offsets[1:]:
        if off < peak:
            rewound_from = peak if rewound_from is None else max(rewound_from, peak)
        peak = max(peak, off)
    return rewound_from is not None and offsets[-1][1] < rewound_from


def lags_at_commits(offsets, ends) -> list[int]:
    """Lag at each commit time, from the interpolated end-offset history."""
    out = []
    for t, off in offsets:
        e = _end_at(ends, t)
        out.append(0 if e is None else max(0, e - off))
    return out


def is_stalled(offsets, lags, now_ms: int, th: Thresholds) -> bool:
    """Commits keep arriving but every one carries the same offset while lag stays above the allowance."""
    first = offsets[0][1]
    return (
        all(off == first for _, off in offsets)
        and all(lag > th.allowed_lag for lag in lags)
        and now_ms - offsets[-1][0] <= th.stall_recent_ms
    )


def is_lag_growing(lags, th: Thresholds) -> bool:
    """Lag above the allowance at every commit and never decreasing: the consumer is falling behind."""
    return all(lag > th.allowed_lag for lag in lags) and all(b >= a for a, b in zip(lags, lags[1:])) and lags[-1] > lags[0]


def evaluate_partition(
    offsets: Sequence[tuple[int, int]],
    ends: Sequence[tuple[int, int]],
    current_lag: int | None,
    now_ms: int,
    th: Thresholds = Thresholds(),
    low_watermark: int = -1,
) -> Verdict:
    """Status of one group-partition.

    Args:
        offsets: the commit window, oldest first: ``(commit time ms, committed offset)``.
        ends: end-offset history of the topic-partition, oldest first: ``(time ms, end offset)``.
        current_lag: lag now (already clamped, marker-aware), None when no end offset is known.
    Raises:
        ValueError: an empty commit window.
    """
    if not offsets:
        raise ValueError("evaluate_partition needs at least one commit")
    committed = offsets[-1][1]
    if is_data_loss(committed, low_watermark):
        return Verdict(Status.ERR, "data_loss")
    if current_lag is None:
        return Verdict(Status.OK, "no_end_offsets")
    if is_caught_up(current_lag, th):
        return Verdict(Status.OK, "caught_up")
    if is_stopped(offsets, ends, now_ms, th):
        return Verdict(Status.STOP, "stopped")
    if len(offsets) < th.min_window:
        return Verdict(Status.OK, "window_incomplete")
    if is_rewind(offsets):
        return Verdict(Status.REWIND, "rewind")
    lags = lags_at_commits(offsets, ends)
    if is_stalled(offsets, lags, now_ms, th):
        return Verdict(Status.STALL, "stalled")
    if is_lag_growing(lags, th):
        return Verdict(Status.WARN, "lag_growing")
    return Verdict(Status.OK, "progressing")


def group_status(statuses) -> Status:
    """The worst partition status (OK for a group without partitions)."""
    return max(statuses, default=Status.OK)


RULES = ("data_loss", "no_end_offsets", "caught_up", "stopped", "window_incomplete", "rewind", "stalled",
         "lag_growing", "progressing")
