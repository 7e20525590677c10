"""Partition status: small named rules evaluated in a fixed order, one pure function, no clock and no state.

The statuses are Burrow's vocabulary (OK, WARN, STALL, STOP, REWIND, ERR), but the rules use what only the
``__consumer_offsets`` log knows besides commits: who is in the group and which member owns the partition. That
is what separates a stuck consumer (still in the group, committing nothing) from a consumer that left, and a slow
member (committing its other partitions) from a stopped one. Thresholds adapt to each group's own commit cadence,
so a consumer that commits every second is flagged within a minute of stopping and a batch job that commits every
ten minutes is not flagged for being slow to commit.

The order of :data:`RULES` is the decision table; each row's docstring (and docs/verdicts.md) gives its reason.
Everything is an argument: the commit window, the end-offset history, the ownership facts, ``now`` and the previous
status (for hysteresis: WARN holds until the consumer is catching up, so a lagging consumer does not flap).
"""

from __future__ import annotations

import enum
import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Status", "Thresholds", "Ownership", "Verdict", "evaluate_partition", "group_status", "RULES",
           "commit_cadence_ms", "UNKNOWN_OWNERSHIP", "shown_status", "UNJUDGED_REASON"]


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
    """Evaluator knobs (every duration in ms).

    Raises:
        ValueError: a negative or inconsistent value.
    """

    allowed_lag: int = 0  # lag at or below this is caught up
    min_window: int = 3  # same-offset commits that make a STALL
    window: int = 8  # commits kept per partition
    min_distance_ms: int = 1_000  # commits closer than this share one window slot
    stop_after_ms: int = 30_000  # floor of the no-commit time before STOP
    stop_cadence_factor: float = 5.0  # ... or this many of the group's usual commit intervals, if longer
    stop_max_ms: int = 3_600_000  # ceiling of the adaptive no-commit time
    # a single commit so far (no cadence yet): no STOP before this long without a second one; Kafka's default
    # max.poll.interval.ms, so a job committing on a timer of up to five minutes is not STOP in its first interval
    stop_first_interval_ms: int = 300_000
    empty_group_grace_ms: int = 10_000  # a group with no members and lag: STOP after this
    warn_after_ms: int = 10_000  # a consumer less than this far behind (in time) is never WARN
    warn_cadence_factor: float = 2.0  # ... nor one less than this many commit intervals behind (a healthy
    # consumer is about one interval behind at most, just before its next commit)
    trend_ms: int = 30_000  # horizon over which lag is compared to tell growing from catching up
    first_interval_ms: int = 60_000  # one commit so far: no WARN before this long without a second one
    catching_up_ratio: float = 0.9  # lag below this fraction of its value a horizon ago: catching up

    def __post_init__(self) -> None:
        if self.allowed_lag < 0 or self.min_window < 2 or self.window < self.min_window:
            raise ValueError("thresholds: need allowed_lag >= 0 and 2 <= min_window <= window")
        if min(self.stop_after_ms, self.stop_max_ms, self.empty_group_grace_ms, self.warn_after_ms,
               self.trend_ms, self.first_interval_ms, self.stop_first_interval_ms) <= 0 or self.min_distance_ms < 0:
            raise ValueError("thresholds: durations must be positive")
        if self.stop_max_ms < self.stop_after_ms:
            raise ValueError("thresholds: stop_max_ms must be >= stop_after_ms")
        if self.stop_cadence_factor <= 0 or self.warn_cadence_factor <= 0 or not 0 < self.catching_up_ratio < 1:
            raise ValueError("thresholds: factors must be positive and catching_up_ratio in (0, 1)")

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


def data_loss_reason(committed: int, low_watermark: int) -> str:
    return (f"committed offset {committed} is below the log start {low_watermark}: records were deleted before this "
            "group read them")


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
    """Status of one group-partition.

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
    last_commit_ms, committed = offsets[-1]
    if is_data_loss(committed, low_watermark):
        return Verdict(Status.ERR, "data_loss", data_loss_reason(committed, low_watermark))
    if current_lag is None:
        return Verdict(Status.OK, "no_end_offsets", "no end offsets known yet")
    if is_rewind(offsets):
        peak = max(off for _, off in offsets)
        return Verdict(Status.REWIND, "rewind", f"committed offset went back from {peak} to {committed}")
    if is_caught_up(current_lag, th):
        return Verdict(Status.OK, "caught_up", "caught up")
    cadence = cadence_ms if cadence_ms is not None else commit_cadence_ms(offsets)
    stop_after = th.stop_after(cadence)
    warn_after = th.warn_after(cadence)
    if cadence is None:
        # A single commit says nothing of how often this consumer commits. A job that commits on a timer (a stream
        # processor's checkpoints, a batch job) must not be STOP before its second commit: it gets
        # ``stop_first_interval_ms``, and a member in the group at least what Kafka allows it between two polls.
        # A consumer that dies instead empties its group (STOP by ``no_members``, which does not wait for this), so
        # the longer wait delays only a member stuck inside its first interval, or a simple group gone after one
        # commit.
        first = max(th.stop_first_interval_ms, ownership.owner_poll_timeout_ms or 0)
        stop_after = max(stop_after, float(min(first, th.stop_max_ms)))
    passed = _passed_at(ends, committed)
    behind_ms = 0 if passed is None else now_ms - passed
    idle_ms = now_ms - last_commit_ms
    quiet_s = idle_ms / 1000.0
    outage = ownership.kafka_outage
    if outage is not None and last_commit_ms < outage[1] and now_ms - outage[1] < stop_after:
        # Kafka was away and is back: the first heartbeat moved the clock over the whole outage, during which no
        # consumer could commit. Until they have had their usual STOP time since, the status before is kept.
        held = previous if previous is not None else Status.OK
        return Verdict(held, "kafka_returning",
                       f"Kafka was unavailable for {(outage[1] - outage[0]) / 1000:.0f} s until "
                       f"{(now_ms - outage[1]) / 1000:.0f} s ago; its consumers get {stop_after / 1000:.0f} s to "
                       f"commit again ({held.name} kept, {current_lag} behind)")
    # No members at all: nothing is consuming. A short grace lets a one-member group restart.
    if ownership.membership_known and ownership.group_empty:
        if behind_ms > th.empty_group_grace_ms and idle_ms > th.empty_group_grace_ms:
            return Verdict(Status.STOP, "no_members",
                           f"the group has no members; {current_lag} behind, last commit {quiet_s:.0f} s ago")
    elif idle_ms > stop_after and behind_ms > stop_after:
        # No commit on this partition for longer than the group's cadence allows while it fell behind.
        if not ownership.membership_known or not ownership.assignment_known:
            return Verdict(Status.STOP, "stopped",
                           f"no commit for {quiet_s:.0f} s while {current_lag} behind")
        if ownership.owner is None and not ownership.topic_subscribed:
            return Verdict(Status.STOP, "unsubscribed",
                           f"no member subscribes to this topic any more (offsets left from an earlier "
                           f"subscription); {current_lag} behind, last commit {quiet_s:.0f} s ago")
        if ownership.owner is None:
            return Verdict(Status.STOP, "unowned",
                           f"no member holds this partition; no commit for {quiet_s:.0f} s, {current_lag} behind")
        owner_ms = ownership.owner_last_commit_ms
        if owner_ms is not None and now_ms - owner_ms <= stop_after:
            # ... unless the partition may have just moved to it: its new owner has not had the STOP time with it.
            settled = ownership.assigned_since_ms is None or now_ms - ownership.assigned_since_ms > stop_after
            if settled and keeps_lead_current(ownership, now_ms, stop_after, warn_after):
                return Verdict(Status.STOP, "partition_held",
                               f"owner {ownership.owner_label} keeps its other partitions current but committed "
                               f"nothing here for {quiet_s:.0f} s; {current_lag} behind: partition held (paused, "
                               "or stuck on a record)")
            return Verdict(Status.WARN, "owner_busy_elsewhere",
                           f"owner {ownership.owner_label} commits its other partitions but not this one for "
                           f"{quiet_s:.0f} s; {current_lag} behind")
        if ownership.owner_silent_ms is not None:
            # A stuck application's member keeps heartbeating and follows the group; this one does not.
            return Verdict(Status.STOP, "silent_member",
                           f"owner {ownership.owner_label} stopped heartbeating at least "
                           f"{ownership.owner_silent_ms / 1000:.0f} s ago (killed, crashed or cut off) and holds the partition until its session expires; "
                           f"no commit for {quiet_s:.0f} s, {current_lag} behind")
        return Verdict(Status.STOP, "stuck_member",
                       f"owner {ownership.owner_label} is still in the group but committed nothing for "
                       f"{quiet_s:.0f} s; {current_lag} behind: stuck consumer")
    if is_stalled(offsets, ends, now_ms, stop_after, th):
        first = offsets[-th.min_window][0]
        if is_waiting_turn(offsets, ownership, now_ms, stop_after, warn_after, th):
            return Verdict(Status.WARN, "waiting_turn",
                           f"owner {ownership.owner_label} moves its other partitions forward but commits offset "
                           f"{committed} here again and again ({(last_commit_ms - first) / 1000:.0f} s) while lag grew "
                           f"to {current_lag}: a slow consumer working through its partitions one at a time")
        return Verdict(Status.STALL, "stalled",
                       f"offset {committed} committed {th.min_window}+ times over {(last_commit_ms - first) / 1000:.0f}"
                       f" s while lag grew to {current_lag}")
    holding = previous == Status.WARN
    # Hysteresis: WARN is entered at warn_after behind and left only below half of it (or when catching up), so
    # the saw-tooth of time behind between two commits cannot flip it back and forth. A single commit tells no
    # trend: between two commits lag always grows (the committed offset stands still while the end moves), so
    # a consumer back from an outage gets ``first_interval_ms`` for its second commit to say whether it gains or
    # loses ground.
    if (cadence is not None or idle_ms >= th.first_interval_ms) and \
            behind_ms >= (warn_after / 2 if holding else warn_after):
        # Compare with the lag a horizon ago, or at the oldest commit the window still holds if that is later
        # (before it, the committed offset is not known).
        horizon = trend_horizon_ms(cadence, th, now_ms, ends[0][0] if ends else None)
        then = max(now_ms - horizon, offsets[0][0])
        end_then = _end_at(ends, then)
        lag_then = None if end_then is None else max(0, end_then - _committed_at(offsets, then))
        if lag_then is not None:
            growing = current_lag > lag_then and not is_gaining(offsets, ends)
            catching_up = current_lag < lag_then * th.catching_up_ratio
            if (growing and behind_ms >= warn_after) or (holding and not catching_up):
                return Verdict(Status.WARN, "falling_behind",
                               f"{behind_ms / 1000:.0f} s behind; lag {lag_then} -> {current_lag} over the last "
                               f"{horizon / 1000:.0f} s")
    return Verdict(Status.OK, "progressing", "committing and keeping up")


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


# The decision table, in evaluation order (docs/verdicts.md explains each row).
RULES = ("data_loss", "no_end_offsets", "rewind", "caught_up", "kafka_returning", "no_members", "stopped",
         "unsubscribed", "unowned", "partition_held", "owner_busy_elsewhere", "silent_member", "stuck_member",
         "waiting_turn", "stalled", "falling_behind", "progressing")
