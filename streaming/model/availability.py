"""Whether Kafka was there: one shard's view of broker outages, from its heartbeat clock and its own log.

Why: when the group coordinator is away (a broker stopped, restarted, frozen or cut off), no heartbeat is produced
and nothing is written to ``__consumer_offsets``. Consumers that lose their coordinator for longer than their
session timeout rejoin under new member ids once it is back, Kafka expires the old ones, and every group of the
cluster shows members leaving and joining at one moment. That is a cluster event, not a crash loop in each group,
and the first heartbeat after the outage moves the model's clock on by the whole outage before any consumer could
commit again. This tracker tells the judge and the status rules when that is so.

An outage is seen as a **gap**: the heartbeat clock did not move for longer than ``gap_ms`` (or three of its usual
intervals, for an emitter set to beat slowly) and this shard's log was silent too. The log's silence is what tells a Kafka outage from the job's own downtime (then the heartbeat
topic has a gap but the log went on being written). The states and what moves them are the table
:data:`states.KAFKA_AVAILABILITY`; this class only feeds it triggers and keeps the outage's times.

No clock and no I/O: every time is an argument (record timestamps and heartbeat times).
"""

from __future__ import annotations

from typing import Mapping

from . import events as ev
from .states import KAFKA_AVAILABILITY, KafkaAvailability, KafkaTrigger, apply

__all__ = ["AvailabilityTracker"]

_MACHINE = "kafka_availability"


class AvailabilityTracker:
    """Kafka's availability for one shard; reports each outage once its rejoin window is over."""

    __slots__ = ("gap_ms", "rejoin_ms", "state", "since_ms", "back_ms", "groups", "last_back_ms", "last_since_ms",
                 "interval_ms", "outages")

    def __init__(self, gap_ms: int, rejoin_ms: int) -> None:
        self.gap_ms, self.rejoin_ms = gap_ms, rejoin_ms
        self.state = KafkaAvailability.AVAILABLE
        self.since_ms = -1  # the heartbeat clock when Kafka went away (the last heartbeat before the gap)
        self.back_ms = -1  # the first heartbeat after the gap (-1 while away)
        self.groups: set[str] = set()  # groups whose members rejoined because of this outage
        self.last_since_ms = -1  # the latest finished outage, kept for the status rules after its report
        self.last_back_ms = -1
        self.interval_ms = -1  # the heartbeat interval seen last (-1: not yet: no gap can be told before it)
        self.outages = 0  # outages reported so far: kept in the state, so the counter survives the job's restarts

    @property
    def gap(self) -> int:
        """How long the clock must stand still to be a gap (never while the usual interval is unknown)."""
        return 2**62 if self.interval_ms < 0 else max(self.gap_ms, 3 * self.interval_ms)

    # ---- input ---------------------------------------------------------------------------------------------

    def on_record(self, ts: int, now_ms: int, last_ts: int) -> list[ev.Event]:
        """A record stamped ``ts`` while the heartbeat clock reads ``now_ms`` and the shard's newest record before
        it was stamped ``last_ts``: late when both had been silent for longer than the gap."""
        gap = self.gap
        if now_ms < 0 or ts - now_ms <= gap or ts - last_ts <= gap:
            return []
        out = self._report() if self.state is KafkaAvailability.REJOINING else []
        if self.state is not KafkaAvailability.AWAY:
            self.since_ms, self.back_ms, self.groups = now_ms, -1, set()
        self.state = apply(_MACHINE, KAFKA_AVAILABILITY, self.state, KafkaTrigger.LATE_RECORD)
        return out

    def on_heartbeat(self, now_ms: int, previous_ms: int, last_ts: int) -> list[ev.Event]:
        """A heartbeat at ``now_ms`` after one at ``previous_ms`` (-1: none before); ``last_ts``: the shard's newest
        record. Returns the outage reported now, if its rejoin window is over."""
        out: list[ev.Event] = []
        if self.state is KafkaAvailability.REJOINING and now_ms >= self.back_ms + self.rejoin_ms:
            out += self._report()
            self.state = apply(_MACHINE, KAFKA_AVAILABILITY, self.state, KafkaTrigger.REJOIN_WINDOW_PASSED)
        gap = self.gap
        late = previous_ms >= 0 and now_ms - previous_ms > gap
        if late and self.state is not KafkaAvailability.AWAY and last_ts > previous_ms + gap:
            late = False  # the log was written during the gap: the heartbeats were missing, not Kafka
        if previous_ms >= 0 and not late and self.state is not KafkaAvailability.AWAY:
            self.interval_ms = now_ms - previous_ms
        trigger = KafkaTrigger.LATE_HEARTBEAT if late else KafkaTrigger.HEARTBEAT
        if self.state is KafkaAvailability.AWAY:
            self.back_ms = now_ms
        elif late:
            if self.state is KafkaAvailability.REJOINING:
                out += self._report()
            self.since_ms, self.back_ms, self.groups = previous_ms, now_ms, set()
        self.state = apply(_MACHINE, KAFKA_AVAILABILITY, self.state, trigger)
        if self.state is KafkaAvailability.REJOINING:
            self.last_since_ms, self.last_back_ms = self.since_ms, self.back_ms
        return out

    # ---- views ---------------------------------------------------------------------------------------------

    def window(self) -> tuple[int, int] | None:
        """``(went away, rejoin window's end)`` while rejoins are Kafka's doing (the end is open while away)."""
        if self.state is KafkaAvailability.AVAILABLE:
            return None
        return self.since_ms, (2**62 if self.back_ms < 0 else self.back_ms + self.rejoin_ms)

    def returned(self) -> tuple[int, int] | None:
        """``(went away, came back)`` of the latest outage Kafka has come back from (None: none seen)."""
        return None if self.last_back_ms < 0 else (self.last_since_ms, self.last_back_ms)

    def _report(self) -> list[ev.Event]:
        seconds = (self.back_ms - self.since_ms) / 1000.0
        groups = tuple(sorted(self.groups))
        touched = f"; {len(groups)} groups rejoined" if groups else "; no group had to rejoin"
        reason = (f"Kafka unavailable for {seconds:.0f} s (no heartbeat and no coordinator write){touched}: "
                  "a cluster event, not counted against any group")
        at = self.back_ms + self.rejoin_ms
        self.groups = set()
        self.outages += 1
        return [ev.KafkaUnavailable("", self.since_ms, at, self.since_ms, self.back_ms, seconds, groups,
                                    reason=reason)]

    # ---- state ---------------------------------------------------------------------------------------------

    _FIELDS = ("since_ms", "back_ms", "last_since_ms", "last_back_ms", "interval_ms", "outages")

    def to_state(self) -> dict:
        """The tracker by name (:mod:`.state_format`); the gap and rejoin window come from the config."""
        out = {name: getattr(self, name) for name in self._FIELDS}
        out["state"], out["groups"] = self.state.value, tuple(sorted(self.groups))
        return out

    def load_state(self, state: Mapping) -> None:
        self.state = KafkaAvailability(state["state"])
        self.groups = set(state["groups"])
        for name in self._FIELDS:
            if name in state:
                setattr(self, name, state[name])
