"""Partition status: small named rules evaluated in a fixed order, one pure function, no clock and no state.

The statuses are Burrow's vocabulary (OK, WARN, STALL, STOP, REWIND, ERR), but the rules use what only the
``__consumer_offsets`` log knows besides commits: who is in the group and which member owns the partition. That
is what separates a stuck consumer (still in the group, committing nothing) from a consumer that left, and a slow
member (committing its other partitions) from a stopped one. Thresholds adapt to each group's own commit cadence,
so a consumer that commits every second is flagged within a minute of stopping and a batch job that commits every
ten minutes is not flagged for being slow to commit.

:data:`RULES` is the decision table, and the code runs it: each row is a named predicate over :class:`Facts`, a
status and a reason template; :func:`evaluate_partition` tries the rows in order and the first that holds decides
(docs/verdicts.md explains each row, in the same order: a test checks it). Everything is an argument: the commit
window, the end-offset history, the ownership facts, ``now`` and the previous status (for hysteresis: WARN holds
until the consumer is catching up, so a lagging consumer does not flap).
"""

from __future__ import annotations

import enum
import math
from bisect import bisect_right
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Sequence

from .knobs import MS, check_bounds, knob

__all__ = ["Status", "Thresholds", "Ownership", "Verdict", "Facts", "Rule", "evaluate_partition", "group_status",
           "RULES", "commit_cadence_ms", "UNKNOWN_OWNERSHIP", "shown_status", "UNJUDGED_REASON"]


class Status(enum.IntEnum):
    """Ordered harmless → worst, so a group's status is the max over its partitions (as in Burrow)."""

    OK = 0
    WARN = 1  # behind and falling further behind (or not catching up) while commits advance
    STALL = 2  # the same offset committed again and again while lag grows
    STOP = 3  # no commits while lag grows: the consumer is gone, or stuck while still in the group
    REWIND = 4  # the committed offset went backwards and has not recovered
    ERR = 5  # data loss: the committed offset fell below the low watermark

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Evaluator knobs (every duration in ms), each settable in the ``model:`` section (:mod:`.knobs`).

    Raises:
        ValueError: a value outside its knob's bounds.
    """

    allowed_lag: int = knob(0, "records", "lag at or below this is caught up", ge=0)
    min_window: int = knob(3, "commits", "same-offset commits that make a STALL (at most commit_window)",
                           setting="stall_commits", ge=2)
    window: int = knob(8, "commits", "commits kept per partition", setting="commit_window", ge=2, le=100)
    min_distance_ms: int = knob(1_000, MS, "commits closer than this share one window slot",
                                setting="commit_spacing_seconds", ge=0)
    stop_after_ms: int = knob(30_000, MS, "floor of the no-commit time before STOP", gt=0)
    stop_cadence_factor: float = knob(5.0, "commit intervals", "STOP waits this many of the group's usual commit "
                                      "intervals when that is longer than stop_after_seconds", gt=0)
    stop_max_ms: int = knob(3_600_000, MS, "ceiling of the adaptive no-commit time (at least stop_after_seconds)",
                            gt=0)
    # Kafka's default max.poll.interval.ms, so a job committing on a timer of up to five minutes is not STOP in its
    # first interval
    stop_first_interval_ms: int = knob(300_000, MS, "a single commit so far (no cadence yet): no STOP before this "
                                       "long without a second one", gt=0)
    empty_group_grace_ms: int = knob(10_000, MS, "a group with no members and lag: STOP after this", gt=0)
    warn_after_ms: int = knob(10_000, MS, "a consumer less than this far behind (in time) is never WARN", gt=0)
    # a healthy consumer is about one interval behind at most, just before its next commit
    warn_cadence_factor: float = knob(2.0, "commit intervals", "a consumer less than this many commit intervals "
                                      "behind is never WARN either", gt=0)
    trend_ms: int = knob(30_000, MS, "horizon over which lag is compared to tell growing from catching up", gt=0)
    first_interval_ms: int = knob(60_000, MS, "one commit so far: no WARN before this long without a second one",
                                  setting="warn_first_interval_seconds", gt=0)
    catching_up_ratio: float = knob(0.9, "fraction", "lag below this fraction of its value a horizon ago: catching "
                                    "up", gt=0, lt=1)

    def __post_init__(self) -> None:
        check_bounds(self)
        # A window shorter than the stall count makes a STALL of the whole window, and a ceiling below the floor is
        # the floor: the job always read the settings so, and a user setting one of a pair is not made to set both.
        object.__setattr__(self, "min_window", min(self.min_window, self.window))
        object.__setattr__(self, "stop_max_ms", max(self.stop_max_ms, self.stop_after_ms))

    def stop_after(self, cadence_ms: float | None) -> float:
        """No-commit time before STOP for a group that usually commits every ``cadence_ms``."""
        if cadence_ms is None:
            return float(self.stop_after_ms)
        return min(float(self.stop_max_ms), max(float(self.stop_after_ms), self.stop_cadence_factor * cadence_ms))

    def warn_after(self, cadence_ms: float | None) -> float:
        return max(float(self.warn_after_ms), self.warn_cadence_factor * (cadence_ms or 0.0))


@dataclass(frozen=True, slots=True)
class Ownership:
    """What the group's membership says about one partition.

    ``membership_known`` is False for groups that never had members in the log (Kafka's "simple" groups:
    consumers that ``assign()`` partitions and commit), where only commits can be judged.
    """

    membership_known: bool
    group_empty: bool = False
    owner: str | None = None  # member id that holds the partition now
    owner_label: str = ""  # how the owner is named in reasons (client id, host)
    owner_last_commit_ms: int | None = None  # newest commit of any partition the owner holds
    # the owner's max.poll.interval.ms (its rebalance timeout): how long Kafka itself lets it go without polling
    owner_poll_timeout_ms: int | None = None
    # False when the log does not say who holds which partition (a classic group of another protocol type whose
    # assignment cannot be decoded, a streams group's tasks): then only commits can be judged, as for simple groups
    assignment_known: bool = True
    # False when no member subscribes to the partition's topic: the offsets are left from an earlier subscription
    topic_subscribed: bool = True
    # the commit windows of every partition the owner holds: what its other partitions did (read only when needed)
    owner_windows: tuple[Sequence[tuple[int, int]], ...] = ()
    # how far behind (ms) the owner is on each of those partitions now, in the same order (None: not known)
    owner_behind_ms: tuple[float | None, ...] = ()
    # when the group's assignment last changed (its last rebalance; None: not known): a partition that moved since
    # has had its new owner for that long at most
    assigned_since_ms: int | None = None
    # how long the owner has been silent (a consumer-protocol member that has not followed the group's epoch for
    # the judge's silent_after: killed, crashed or cut off, in the group only until its session expires); None:
    # not known to be silent
    owner_silent_ms: int | None = None
    # ``(went away, came back)`` of Kafka's latest outage (None: none seen): commits older than its end were made
    # before the model's clock jumped over the outage, and say nothing yet about the consumers
    kafka_outage: tuple[int, int] | None = None


UNKNOWN_OWNERSHIP = Ownership(membership_known=False)


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    rule: str  # name of the rule that decided
    reason: str = ""


# --- facts derived from the windows ---------------------------------------------------------------------------


def _end_at(ends: Sequence[tuple[int, int]], t: int) -> int | None:
    """End offset at time ``t`` by linear interpolation; before the first sample: the first sample's end."""
    if not ends:
        return None
    if t <= ends[0][0]:
        return ends[0][1]
    if t >= ends[-1][0]:
        return ends[-1][1]
    i = bisect_right(ends, t, key=_time_of)  # ends[i - 1] <= t < ends[i]
    (t0, e0), (t1, e1) = ends[i - 1], ends[i]
    return e1 if t1 == t0 else e0 + int((e1 - e0) * (t - t0) / (t1 - t0))


def _time_of(sample: tuple[int, int]) -> int:
    return sample[0]


def _committed_at(offsets: Sequence[tuple[int, int]], t: int) -> int:
    """The committed offset in force at ``t`` (the oldest one known for earlier times)."""
    value = offsets[0][1]
    for ts, off in offsets:
        if ts > t:
            break
        value = off
    return value


def _passed_at(ends: Sequence[tuple[int, int]], committed: int) -> int | None:
    """Time of the first end sample beyond ``committed`` (None if the end never passed it). The ends never go down
    (a history whose end went back starts over), so a binary search finds it."""
    i = bisect_right(ends, committed, key=_end_of)
    return ends[i][0] if i < len(ends) else None


def _end_of(sample: tuple[int, int]) -> int:
    return sample[1]


def commit_cadence_ms(offsets: Sequence[tuple[int, int]]) -> float | None:
    """The usual time between commits of one partition: the median interval of its window (None below 2)."""
    if len(offsets) < 2:
        return None
    gaps = sorted(b[0] - a[0] for a, b in zip(offsets, offsets[1:]))
    return float(gaps[len(gaps) // 2])


def last_advance_ms(offsets: Sequence[tuple[int, int]]) -> int | None:
    """Time of the commit that moved the committed offset forward to its current value (None: not in the window,
    or the offset got there by going back)."""
    last = offsets[-1][1]
    for i in range(len(offsets) - 1, 0, -1):
        before = offsets[i - 1][1]
        if before != last:
            return offsets[i][0] if before < last else None
    return None


def trend_horizon_ms(cadence_ms: float | None, th: Thresholds, now_ms: int, history_start_ms: int | None) -> float:
    """How far back lag is compared to tell growing from catching up: ``trend_ms``, stretched to a whole number of
    commit intervals (at least two) for a group that commits less often, and to the whole intervals that fit in the
    end-offset history (one at least) when that does not reach so far back.

    Between two commits the committed offset stands still while the end moves, so lag is a saw-tooth with the
    commit interval as its period. Compared over a horizon shorter than that period (a job that commits every minute,
    such as a stream processor committing on its checkpoints), a consumer that catches up at every commit looks
    as if its lag grew; over whole periods the two lags are taken at the same point of the tooth.
    """
    if not cadence_ms or cadence_ms <= 0:
        return float(th.trend_ms)
    horizon = max(2, math.ceil(th.trend_ms / cadence_ms)) * cadence_ms
    if horizon > th.trend_ms and history_start_ms is not None and now_ms - horizon < history_start_ms:
        horizon = max(1, (now_ms - history_start_ms) // cadence_ms) * cadence_ms
    return horizon


def lags_at_commits(offsets, ends) -> list[int]:
    """Lag at each commit time, from the interpolated end-offset history."""
    out = []
    for t, off in offsets:
        e = _end_at(ends, t)
        out.append(0 if e is None else max(0, e - off))
    return out


# --- the rules: each a named predicate ------------------------------------------------------------------------


def is_data_loss(committed: int, low_watermark: int) -> bool:
    """Retention deleted records the group never consumed: its next fetch resets."""
    return low_watermark >= 0 and committed < low_watermark


DATA_LOSS_REASON = ("committed offset {f.committed} is below the log start {f.low_watermark}: records were deleted "
                    "before this group read them")


def data_loss_reason(committed: int, low_watermark: int) -> str:
    """The data-loss reason without the other facts (while replaying history, when no other rule is tried)."""
    return DATA_LOSS_REASON.format(f=SimpleNamespace(committed=committed, low_watermark=low_watermark))


def is_rewind(offsets) -> bool:
    """Some offset in the window is lower than the one before it and the latest has not got back above it."""
    peak = offsets[0][1]
    rewound_from = None
    for _, off in offsets[1:]:
        if off < peak:
            rewound_from = peak if rewound_from is None else max(rewound_from, peak)
        peak = max(peak, off)
    return rewound_from is not None and offsets[-1][1] < rewound_from


def is_caught_up(lag: int, th: Thresholds) -> bool:
    """Lag within the allowance: OK whatever the commit age. This is what keeps idle partitions quiet."""
    return lag <= th.allowed_lag


def is_stalled(offsets, ends, now_ms: int, stop_after: float, th: Thresholds) -> bool:
    """The last ``min_window`` commits all carry the same offset, each made while lag was above the allowance,
    and commits keep coming. Re-committing an offset while caught up (idle partitions) is not a stall."""
    tail = offsets[-th.min_window:]
    if len(tail) < th.min_window or any(off != tail[0][1] for _, off in tail) or now_ms - offsets[-1][0] > stop_after:
        return False
    return all(lag > th.allowed_lag for lag in lags_at_commits(tail, ends))


def owner_lead(ownership: Ownership) -> tuple[int | None, float | None]:
    """``(when, behind ms)``: when the owner last moved one of its partitions forward (None: not within their
    windows), and how far behind it is on that partition now (None: not known)."""
    advances = [last_advance_ms(w) for w in ownership.owner_windows]
    lead = max((i for i, t in enumerate(advances) if t is not None), key=advances.__getitem__, default=None)
    if lead is None:
        return None, None
    return advances[lead], ownership.owner_behind_ms[lead] if lead < len(ownership.owner_behind_ms) else None


def keeps_lead_current(ownership: Ownership, now_ms: int, stop_after: float, warn_after: float) -> bool:
    """The owner moved one of its partitions forward recently and is less than ``warn_after`` behind there: it
    consumes what is produced, so it is not working off a backlog one partition after another."""
    when, behind = owner_lead(ownership)
    return when is not None and now_ms - when <= stop_after and behind is not None and behind < warn_after


def is_waiting_turn(offsets, ownership: Ownership, now_ms: int, stop_after: float, warn_after: float,
                    th: Thresholds) -> bool:
    """The owner moved another of its partitions forward after this one last moved, recently, and is itself
    behind on that partition.

    A member that is too slow for its backlog works through one partition's fetched records after another; its
    other partitions wait their turn, and a client that commits every assigned partition's position at each commit
    (Kafka's Java consumer with auto-commit, or ``commit()`` of all positions) commits their unchanged offsets again
    and again. That is a slow consumer (lagging), not a stalled one. The partition it works on is then far behind
    too (its records were fetched long ago); a member that keeps the partition it moved last current is not
    working off a backlog, so a partition of it that stands still (paused, or a poison record retried) is stalled,
    as are the partitions of a member that moves none of them forward.

    Less than ``warn_after`` behind on the partition it moved last still counts as working off a backlog when
    that is at least half as long as this partition has stood still: the owner is busy with records produced
    about when this one stopped moving (a burst landing on every partition at once: the partition it works on
    is only seconds behind, every second of them the burst's). A member that keeps that partition current is
    about one commit interval behind there however long this one stands still.
    """
    if ownership.owner is None:
        return False
    when, behind = owner_lead(ownership)
    own = last_advance_ms(offsets)
    still_ms = now_ms - (offsets[0][0] if own is None else own)
    if when is None or now_ms - when > stop_after or (
            behind is not None and behind < warn_after and 2 * behind < still_ms):
        return False  # no recent move, or one on a partition the owner keeps current (keeps_lead_current)
    return when > (offsets[0][0] if own is None else own) + th.min_distance_ms


def is_gaining(offsets, ends) -> bool:
    """Lag at the latest commit is below lag at the one before (both taken at the same point of the saw-tooth):
    the consumer gains on the end at every commit, whatever its lag was a horizon ago (a burst being absorbed)."""
    if len(offsets) < 2:
        return False
    before, latest = lags_at_commits(offsets[-2:], ends)
    return latest < before


class _once:
    """A property worked out on first use and then kept in the instance (``functools.cached_property`` takes a
    lock on every read in this Python, which costs the status rules a third of their time)."""

    def __init__(self, fn: Callable) -> None:
        self.fn, self.name = fn, fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class Facts:
    """What the rules read about one group-partition at one evaluation: the arguments of
    :func:`evaluate_partition`, and the figures derived from them, each worked out on first use (most partitions
    are caught up, decided before any cadence or trend is needed). Reason templates name these attributes."""

    def __init__(self, offsets: Sequence[tuple[int, int]], ends: Sequence[tuple[int, int]], current_lag: int | None,
                 now_ms: int, th: Thresholds, low_watermark: int, ownership: Ownership, previous: Status | None,
                 cadence_ms: float | None) -> None:
        self.offsets, self.ends, self.lag, self.now_ms, self.th = offsets, ends, current_lag, now_ms, th
        self.low_watermark, self.ownership, self.previous, self._cadence_ms = low_watermark, ownership, previous, \
            cadence_ms
        self.last_commit_ms, self.committed = offsets[-1]
        self.owner = ownership.owner_label

    @_once
    def cadence(self) -> float | None:
        """The group's usual commit interval, else this partition's own (None: a single commit so far)."""
        return self._cadence_ms if self._cadence_ms is not None else commit_cadence_ms(self.offsets)

    @_once
    def stop_after(self) -> float:
        """No-commit time before STOP. A single commit says nothing of how often this consumer commits. A job that
        commits on a timer (a stream processor's checkpoints, a batch job) must not be STOP before its second
        commit: it gets ``stop_first_interval_ms``, and a member in the group at least what Kafka allows it
        between two polls. A consumer that dies instead empties its group (STOP by ``no_members``, which does not
        wait for this), so the longer wait delays only a member stuck inside its first interval, or a simple group
        gone after one commit."""
        th = self.th
        stop_after = th.stop_after(self.cadence)
        if self.cadence is None:
            first = max(th.stop_first_interval_ms, self.ownership.owner_poll_timeout_ms or 0)
            stop_after = max(stop_after, float(min(first, th.stop_max_ms)))
        return stop_after

    @_once
    def warn_after(self) -> float:
        return self.th.warn_after(self.cadence)

    @_once
    def behind_ms(self) -> float:
        """How long ago the end passed the committed offset (0: it has not)."""
        passed = _passed_at(self.ends, self.committed)
        return 0 if passed is None else self.now_ms - passed

    @property
    def idle_ms(self) -> int:
        return self.now_ms - self.last_commit_ms

    @property
    def quiet_s(self) -> float:
        return self.idle_ms / 1000.0

    @property
    def peak(self) -> int:
        return max(off for _, off in self.offsets)

    @property
    def group_empty(self) -> bool:
        return self.ownership.membership_known and self.ownership.group_empty

    @_once
    def silent_too_long(self) -> bool:
        """No commit on this partition for longer than the group's cadence allows while it fell behind (a group
        without members is judged by ``no_members`` instead)."""
        return not self.group_empty and self.idle_ms > self.stop_after and self.behind_ms > self.stop_after

    @property
    def owner_recent(self) -> bool:
        """The owner committed another of its partitions within the STOP time."""
        owner_ms = self.ownership.owner_last_commit_ms
        return owner_ms is not None and self.now_ms - owner_ms <= self.stop_after

    @property
    def owner_settled(self) -> bool:
        """The partition has not just moved to its owner: the group has not rebalanced within the STOP time."""
        since = self.ownership.assigned_since_ms
        return since is None or self.now_ms - since > self.stop_after

    @_once
    def stalled(self) -> bool:
        return is_stalled(self.offsets, self.ends, self.now_ms, self.stop_after, self.th)

    @property
    def stalled_s(self) -> float:
        """Seconds between the first and the last of the same-offset commits of a stall."""
        return (self.last_commit_ms - self.offsets[-self.th.min_window][0]) / 1000.0

    @property
    def returning(self) -> bool:
        """Kafka was away and is back less than the STOP time ago, and this partition's last commit is older than
        its return: the first heartbeat moved the clock over the whole outage, during which nobody could commit."""
        outage = self.ownership.kafka_outage
        return outage is not None and self.last_commit_ms < outage[1] and self.now_ms - outage[1] < self.stop_after

    @property
    def outage_s(self) -> float:
        outage = self.ownership.kafka_outage
        return 0.0 if outage is None else (outage[1] - outage[0]) / 1000.0

    @property
    def since_return_s(self) -> float:
        outage = self.ownership.kafka_outage
        return 0.0 if outage is None else (self.now_ms - outage[1]) / 1000.0

    @property
    def kept(self) -> Status:
        """The status before (OK for a first evaluation)."""
        return self.previous if self.previous is not None else Status.OK

    @property
    def owner_silent_s(self) -> float:
        return (self.ownership.owner_silent_ms or 0) / 1000.0

    @_once
    def trend(self) -> tuple[float, int] | None:
        """``(horizon ms, lag a horizon ago)`` while the consumer is far enough behind for a trend to matter (None:
        not, or no end offset known then).

        Hysteresis: WARN is entered at warn_after behind and left only below half of it (or when catching up), so
        the saw-tooth of time behind between two commits cannot flip it back and forth. A single commit tells no
        trend: between two commits lag always grows (the committed offset stands still while the end moves), so a
        consumer back from an outage gets ``first_interval_ms`` for its second commit to say whether it gains or
        loses ground. The lag is compared with the one a horizon ago, or at the oldest commit the window still
        holds if that is later (before it, the committed offset is not known)."""
        th = self.th
        holding = self.previous == Status.WARN
        if not ((self.cadence is not None or self.idle_ms >= th.first_interval_ms)
                and self.behind_ms >= (self.warn_after / 2 if holding else self.warn_after)):
            return None
        horizon = trend_horizon_ms(self.cadence, th, self.now_ms, self.ends[0][0] if self.ends else None)
        then = max(self.now_ms - horizon, self.offsets[0][0])
        end_then = _end_at(self.ends, then)
        if end_then is None:
            return None
        return horizon, max(0, end_then - _committed_at(self.offsets, then))

    @property
    def falling_behind(self) -> bool:
        """Growing (and not gaining at the latest commit) while ``warn_after`` behind, or WARN already and not
        catching up (lag down by the catching-up ratio over the horizon)."""
        if self.trend is None:
            return False
        lag_then = self.trend[1]
        growing = self.lag > lag_then and not is_gaining(self.offsets, self.ends)
        catching_up = self.lag < lag_then * self.th.catching_up_ratio
        return (growing and self.behind_ms >= self.warn_after) or (self.previous == Status.WARN and not catching_up)

    @property
    def lag_then(self) -> int | None:
        return None if self.trend is None else self.trend[1]

    @property
    def horizon_s(self) -> float:
        return 0.0 if self.trend is None else self.trend[0] / 1000.0

    @property
    def stop_after_s(self) -> float:
        return self.stop_after / 1000.0

    @property
    def behind_s(self) -> float:
        return self.behind_ms / 1000.0


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the decision table: a named predicate over :class:`Facts`, the status it gives (None: the
    status before is kept) and the reason, a template formatted with the facts (``{f.lag}``)."""

    name: str
    status: Status | None
    when: Callable[[Facts], bool]
    reason: str

    def verdict(self, f: Facts) -> Verdict:
        return Verdict(f.kept if self.status is None else self.status, self.name, self.reason.format(f=f))


_S = Status
# The decision table, tried in this order, first match wins; docs/verdicts.md explains each row (a test checks
# that it names them in this order). A row may rely on the rows above it not having matched.
RULES: tuple[Rule, ...] = (
    Rule("data_loss", _S.ERR, lambda f: is_data_loss(f.committed, f.low_watermark), DATA_LOSS_REASON),
    Rule("no_end_offsets", _S.OK, lambda f: f.lag is None, "no end offsets known yet"),
    Rule("rewind", _S.REWIND, lambda f: is_rewind(f.offsets),
         "committed offset went back from {f.peak} to {f.committed}"),
    Rule("caught_up", _S.OK, lambda f: is_caught_up(f.lag, f.th), "caught up"),
    # Kafka was away and is back: until the consumers have had their usual STOP time since, the status before is
    # kept.
    Rule("kafka_returning", None, lambda f: f.returning,
         "Kafka was unavailable for {f.outage_s:.0f} s until {f.since_return_s:.0f} s ago; its consumers get "
         "{f.stop_after_s:.0f} s to commit again ({f.kept.name} kept, {f.lag} behind)"),
    # No members at all: nothing is consuming. A short grace lets a one-member group restart.
    Rule("no_members", _S.STOP,
         lambda f: f.group_empty and f.behind_ms > f.th.empty_group_grace_ms and f.idle_ms > f.th.empty_group_grace_ms,
         "the group has no members; {f.lag} behind, last commit {f.quiet_s:.0f} s ago"),
    Rule("stopped", _S.STOP,
         lambda f: f.silent_too_long and not (f.ownership.membership_known and f.ownership.assignment_known),
         "no commit for {f.quiet_s:.0f} s while {f.lag} behind"),
    Rule("unsubscribed", _S.STOP,
         lambda f: f.silent_too_long and f.ownership.owner is None and not f.ownership.topic_subscribed,
         "no member subscribes to this topic any more (offsets left from an earlier subscription); {f.lag} "
         "behind, last commit {f.quiet_s:.0f} s ago"),
    Rule("unowned", _S.STOP, lambda f: f.silent_too_long and f.ownership.owner is None,
         "no member holds this partition; no commit for {f.quiet_s:.0f} s, {f.lag} behind"),
    # The owner commits its other partitions; unless the partition may have just moved to it (its new owner has
    # not had it for the STOP time), one it keeps current beside this one says this one is held.
    Rule("partition_held", _S.STOP,
         lambda f: f.silent_too_long and f.owner_recent and f.owner_settled and keeps_lead_current(
             f.ownership, f.now_ms, f.stop_after, f.warn_after),
         "owner {f.owner} keeps its other partitions current but committed nothing here for {f.quiet_s:.0f} s; "
         "{f.lag} behind: partition held (paused, or stuck on a record)"),
    Rule("owner_busy_elsewhere", _S.WARN, lambda f: f.silent_too_long and f.owner_recent,
         "owner {f.owner} commits its other partitions but not this one for {f.quiet_s:.0f} s; {f.lag} behind"),
    # A stuck application's member keeps heartbeating and follows the group; this one does not.
    Rule("silent_member", _S.STOP, lambda f: f.silent_too_long and f.ownership.owner_silent_ms is not None,
         "owner {f.owner} stopped heartbeating at least {f.owner_silent_s:.0f} s ago (killed, crashed or cut off) "
         "and holds the partition until its session expires; no commit for {f.quiet_s:.0f} s, {f.lag} behind"),
    Rule("stuck_member", _S.STOP, lambda f: f.silent_too_long,
         "owner {f.owner} is still in the group but committed nothing for {f.quiet_s:.0f} s; {f.lag} behind: "
         "stuck consumer"),
    Rule("waiting_turn", _S.WARN,
         lambda f: f.stalled and is_waiting_turn(f.offsets, f.ownership, f.now_ms, f.stop_after, f.warn_after, f.th),
         "owner {f.owner} moves its other partitions forward but commits offset {f.committed} here again and "
         "again ({f.stalled_s:.0f} s) while lag grew to {f.lag}: a slow consumer working through its partitions "
         "one at a time"),
    Rule("stalled", _S.STALL, lambda f: f.stalled,
         "offset {f.committed} committed {f.th.min_window}+ times over {f.stalled_s:.0f} s while lag grew to "
         "{f.lag}"),
    Rule("falling_behind", _S.WARN, lambda f: f.falling_behind,
         "{f.behind_s:.0f} s behind; lag {f.lag_then} -> {f.lag} over the last {f.horizon_s:.0f} s"),
    Rule("progressing", _S.OK, lambda f: True, "committing and keeping up"),
)


def evaluate_partition(
    offsets: Sequence[tuple[int, int]],
    ends: Sequence[tuple[int, int]],
    current_lag: int | None,
    now_ms: int,
    th: Thresholds = Thresholds(),
    low_watermark: int = -1,
    ownership: Ownership = UNKNOWN_OWNERSHIP,
    previous: Status | None = None,
    cadence_ms: float | None = None,
) -> Verdict:
    """Status of one group-partition: the first row of :data:`RULES` whose predicate holds.

    Args:
        offsets: the commit window, oldest first: ``(commit time ms, committed offset)``.
        ends: end-offset history of the topic-partition, oldest first: ``(time ms, end offset)``.
        current_lag: lag now (already clamped, marker-aware), None when no end offset is known.
        ownership: membership facts for this partition.
        previous: the status the last evaluation gave (None: first evaluation).
        cadence_ms: the group's usual commit interval (None: unknown); defaults to this partition's own.
    Raises:
        ValueError: an empty commit window.
    """
    if not offsets:
        raise ValueError("evaluate_partition needs at least one commit")
    f = Facts(offsets, ends, current_lag, now_ms, th, low_watermark, ownership, previous, cadence_ms)
    for rule in RULES:
        if rule.when(f):
            return rule.verdict(f)
    raise AssertionError("the last rule matches everything")  # pragma: no cover


def group_status(statuses) -> Status:
    """The worst partition status (OK for a group without partitions)."""
    return max(statuses, default=Status.OK)


UNJUDGED_REASON = "lag not known yet: no log end offset has been read for its partitions"


def shown_status(status: str | None, lag: int | None) -> str | None:
    """The status to show a person, by name: None where it is OK only because no log end offset is known (rule
    ``no_end_offsets``: lag has nothing to be measured against, e.g. after a backfill or before the first
    heartbeat), so that "OK" never stands for "not judged". REWIND and ERR are judged from the commits and the low
    watermark alone and are shown as they are. ``lag``: the partition's lag, or the group's summed lag (None
    where no partition has a known end)."""
    return None if status == Status.OK.name and lag is None else status

