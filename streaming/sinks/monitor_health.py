"""The monitor's own health and the ``/ready`` policy that reads it.

:class:`MonitorHealth` is what the job knows of itself after each micro-batch (records decoded, how far each
``__consumer_offsets`` partition is read, the newest heartbeat the model applied); :class:`ReadinessPolicy` turns
it, with the heartbeat emitter's view of Kafka, into ``/ready``'s answer and ``groupscope_kafka_up``'s value. Both
are plain values and functions of them, so the policy is testable without a server (docs/metrics.md#ready).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

__all__ = ["StepHealthLike", "OffsetsPartitionHealth", "MonitorHealth", "ReadinessPolicy"]


class StepHealthLike(Protocol):
    """What :meth:`MonitorHealth.after_batch` reads of each shard's report (``streaming.job.step.StepHealth``)."""

    shard: int
    records: int
    decode_errors: int
    unknown_records: int
    last_offset: int
    offsets_high_watermark: int
    offsets_last_stable: int
    heartbeat_ms: int
    caught_up: bool
    state_bytes: int


@dataclass(frozen=True, slots=True)
class OffsetsPartitionHealth:
    """How far the job has read one ``__consumer_offsets`` partition, as of the newest heartbeat (-1 = unknown)."""

    partition: int
    last_offset: int = -1  # last offset consumed
    high_watermark: int = -1
    last_stable_offset: int = -1
    caught_up: bool = False
    state_bytes: int = 0  # the shard's serialized state in the state store
    kafka_outages: int = 0  # Kafka outages the shard has reported (each shard sees every one)
    published: bool = True  # every group of the shard has reached this endpoint since it started (False until a
    # shard rebuilt from its state has sent them all: see StepHealth.full_snapshot)

    @property
    def behind(self) -> int | None:
        """Records not yet read up to the LSO (a read_committed reader cannot pass it); None when unknown."""
        end = self.last_stable_offset if self.last_stable_offset >= 0 else self.high_watermark
        if end < 0:
            return None
        return max(0, end - (self.last_offset + 1))

    @property
    def unstable(self) -> int | None:
        """HWM - LSO: records an open transaction holds back from the job (docs/design-notes.md#two-input-paths); None when unknown."""
        if self.high_watermark < 0 or self.last_stable_offset < 0:
            return None
        return max(0, self.high_watermark - self.last_stable_offset)


@dataclass(frozen=True, slots=True)
class MonitorHealth:
    """The monitor's own state after a batch: cumulative totals and the last batch's figures.

    Times are Unix seconds. ``heartbeat_time`` is the emitter's stamp on the newest heartbeat *the model applied*
    (not the emitter's latest send), so a stuck query shows as a growing heartbeat age.
    """

    records_decoded: int = 0
    decode_errors: int = 0
    unknown_records: int = 0
    batches: int = 0
    query_restarts: int = 0
    last_batch_seconds: float | None = None
    input_records_per_second: float | None = None
    last_batch_time: float | None = None
    heartbeat_time: float | None = None
    offsets_partitions: tuple[OffsetsPartitionHealth, ...] = ()

    @property
    def kafka_outages(self) -> int:
        """Kafka outages the model has reported: every shard sees each one, so the most any shard counted (a shard
        whose log was written during a gap took it, rightly, for the job's own downtime)."""
        return max((p.kafka_outages for p in self.offsets_partitions), default=0)

    @property
    def caught_up(self) -> bool:
        """Ready: every known ``__consumer_offsets`` partition is read up to its LSO (none known: not ready)."""
        return bool(self.offsets_partitions) and all(p.caught_up for p in self.offsets_partitions)

    def after_batch(self, steps: Iterable[StepHealthLike], *, batch_seconds: float, now: float,
                    input_records_per_second: float | None = None,
                    query_restarts: int | None = None) -> MonitorHealth:
        """The health after one more micro-batch: totals advanced by the shards' reports, per-partition figures
        replaced for the shards that reported (the others keep their last report).

        Raises:
            ValueError: a negative count or duration in the reports.
        """
        if batch_seconds < 0:
            raise ValueError(f"batch_seconds must be >= 0, got {batch_seconds}")
        parts = {p.partition: p for p in self.offsets_partitions}
        records = errors = unknown = 0
        heartbeat = self.heartbeat_time
        for s in steps:
            if s.records < 0 or s.decode_errors < 0 or s.unknown_records < 0:
                raise ValueError(f"shard {s.shard}: negative counts in {s!r}")
            records += s.records
            errors += s.decode_errors
            unknown += s.unknown_records
            old = parts.get(s.shard)
            published = (old is not None and old.published) or bool(getattr(s, "full_snapshot", True))
            parts[s.shard] = OffsetsPartitionHealth(s.shard, s.last_offset, s.offsets_high_watermark,
                                                    s.offsets_last_stable, bool(s.caught_up), s.state_bytes,
                                                    int(getattr(s, "kafka_outages", 0)), published)
            if s.heartbeat_ms >= 0 and (heartbeat is None or s.heartbeat_ms / 1000 > heartbeat):
                heartbeat = s.heartbeat_ms / 1000
        return replace(
            self,
            records_decoded=self.records_decoded + records - errors,
            decode_errors=self.decode_errors + errors,
            unknown_records=self.unknown_records + unknown,
            batches=self.batches + 1,
            query_restarts=self.query_restarts if query_restarts is None else query_restarts,
            last_batch_seconds=batch_seconds,
            input_records_per_second=(self.input_records_per_second if input_records_per_second is None
                                      else input_records_per_second),
            last_batch_time=now,
            heartbeat_time=heartbeat,
            offsets_partitions=tuple(parts[p] for p in sorted(parts)),
        )




@dataclass(frozen=True, slots=True)
class ReadinessPolicy:
    """When a cluster is ready, and when its Kafka counts as up (None: no limit).

    ``max_batch_age_s`` / ``max_heartbeat_age_s``: past these, ``/ready`` says 503 with the reason even when
    caught up, so a job whose query hangs or whose heartbeats stopped is not reported ready. ``max_kafka_silence_s``:
    past it without the heartbeat emitter reaching Kafka, ``/ready`` says Kafka is unreachable and the view stale,
    and Kafka counts as down even while an attempt still hangs (a frozen broker never fails it)."""

    max_batch_age_s: float | None = None
    max_heartbeat_age_s: float | None = None
    max_kafka_silence_s: float | None = None

    def silent_too_long(self, silence_s: float | None) -> bool:
        return silence_s is not None and self.max_kafka_silence_s is not None and silence_s > self.max_kafka_silence_s

    def kafka_up(self, last_attempt_up: bool | None, silence_s: float | None) -> bool | None:
        """The emitter's last attempt, but False once it has not reached Kafka for the silence limit."""
        if last_attempt_up is None:
            return None
        return False if self.silent_too_long(silence_s) else last_attempt_up

    def not_ready(self, h: MonitorHealth, now: float, silence_s: float | None = None) -> str | None:
        """Why one cluster is not ready (None: ready). Staleness first: a stalled job must not hide behind
        "catching up"."""
        if self.silent_too_long(silence_s):
            return (f"Kafka unreachable: no heartbeat reached it for {silence_s:.0f} s (limit "
                    f"{self.max_kafka_silence_s:.0f} s); every lag, status and verdict is that stale")
        if not h.offsets_partitions:
            return "no batch processed yet"
        if self.max_batch_age_s is not None and h.last_batch_time is not None:
            age = now - h.last_batch_time
            if age > self.max_batch_age_s:
                return f"no batch completed for {age:.0f} s (limit {self.max_batch_age_s:.0f} s)"
        if self.max_heartbeat_age_s is not None and h.heartbeat_time is not None:
            age = now - h.heartbeat_time
            if age > self.max_heartbeat_age_s:
                return f"newest heartbeat is {age:.0f} s old (limit {self.max_heartbeat_age_s:.0f} s)"
        if h.caught_up:
            unpublished = [p.partition for p in h.offsets_partitions if not p.published]
            if unpublished:  # ready means every group is in /metrics, not only those the first batches touched
                return f"publishing the groups of __consumer_offsets partitions {unpublished}"
            return None
        behind = sum(p.behind or 0 for p in h.offsets_partitions)
        waiting = [p.partition for p in h.offsets_partitions if not p.caught_up]
        return f"catching up on __consumer_offsets partitions {waiting} ({behind} records behind)"
