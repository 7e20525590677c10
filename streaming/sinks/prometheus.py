"""The Prometheus sink: the latest group snapshots as ``kafka_consumergroup_*`` series, plus the monitor's own health.

Mirrors prometheus/client_python's custom-collector pattern (docs/design-notes.md#metrics-lifecycle): the Spark job's ``foreachBatch`` hands
every micro-batch's rows to a :class:`MetricsState` on the driver; on each scrape :class:`GroupscopeCollector`
builds fresh metric families from the state's latest snapshot and keeps nothing itself, so a group or offset that
is gone from the state is gone from ``/metrics`` (and Prometheus marks its series stale) without any bookkeeping of
"series to delete" (a separate deletion lifecycle is what this avoids). :class:`MetricsServer` serves an
explicit registry (no global ``REGISTRY``) on ``/metrics`` with ``/ready`` and ``/healthz`` beside it.

Names follow the families Kafka Lag Exporter and kafka_exporter users already query (docs/design-notes.md#metrics-lifecycle); every
series carries a ``cluster`` label. Group-level series are always on; per-partition and per-member series are
opt-in (``partition_metrics``), because they multiply cardinality by partitions and churn with member ids
(docs/design-notes.md#metrics-lifecycle). :data:`METRICS` is the one catalogue of what is exported; dashboards,
alert rules and their tests are checked against it.

Rows are the dicts of ``streaming.schema.tables`` (``GROUPS``, ``LAG``, ``GROUP_EVENTS``), either as built by
``group_row``/``partition_rows``/``event_row`` (times in epoch ms) or as read back from Arrow (times as
``datetime``); both are accepted.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple, Protocol

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..model.rules import Status
from .http_server import BackgroundHttpServer

__all__ = [
    "MetricSpec",
    "METRICS",
    "OffsetsPartitionHealth",
    "MonitorHealth",
    "StepHealthLike",
    "PartitionFigures",
    "StateView",
    "MetricsState",
    "METRIC_EVENT_KINDS",
    "GroupscopeCollector",
    "MetricsServer",
]

Scope = Literal["group", "partition", "monitor"]
Kind = Literal["gauge", "counter"]

_G = ("cluster", "group")
_T = ("cluster", "group", "topic")
_P = ("cluster", "group", "topic", "partition")
_STATUS_HELP = ", ".join(f"{s.value}={s.name}" for s in Status)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric: its full sample name (counters end in ``_total``), type, labels and meaning."""

    name: str
    kind: Kind
    scope: Scope
    labels: tuple[str, ...]
    help: str

    @property
    def family_name(self) -> str:
        """The name prometheus_client's family takes (a counter's family drops ``_total``)."""
        return self.name[: -len("_total")] if self.kind == "counter" else self.name


def _m(name: str, kind: Kind, scope: Scope, labels: tuple[str, ...], help_text: str) -> MetricSpec:
    return MetricSpec(name, kind, scope, labels, help_text)


# The catalogue. Order is exposition order. Group scope is always exported; partition scope only with
# ``partition_metrics``; monitor scope is the job itself.
METRICS: tuple[MetricSpec, ...] = (
    # ---- group level ----------------------------------------------------------------------------------------
    _m("kafka_consumergroup_group_sum_lag", "gauge", "group", _G,
       "Sum of the offset lag (end offset - committed offset, never negative) over the group's partitions."),
    _m("kafka_consumergroup_group_max_lag", "gauge", "group", _G,
       "Largest offset lag of any partition of the group."),
    _m("kafka_consumergroup_group_max_lag_seconds", "gauge", "group", _G,
       "Largest time lag of any partition of the group: seconds since the log end passed the committed offset "
       "(0 when caught up; absent when no end-offset history is known yet)."),
    _m("kafka_consumergroup_topic_sum_lag", "gauge", "group", _T,
       "Sum of the offset lag over the group's partitions of one topic."),
    _m("kafka_consumergroup_topic_max_lag", "gauge", "group", _T,
       "Largest offset lag of the group's partitions of one topic."),
    _m("kafka_consumergroup_topic_max_lag_seconds", "gauge", "group", _T,
       "Largest time lag in seconds of the group's partitions of one topic."),
    _m("kafka_consumergroup_members", "gauge", "group", _G,
       "Members of the group (classic and KIP-848 members alike)."),
    _m("kafka_consumergroup_partitions", "gauge", "group", _G,
       "Partitions the group has a committed offset for."),
    _m("kafka_consumergroup_generation", "gauge", "group", _G,
       "Classic generation id, or the group epoch of a KIP-848 (consumer, share, streams) group."),
    _m("kafka_consumergroup_assignment_epoch", "gauge", "group", _G,
       "KIP-848 target assignment epoch (absent for classic groups); below the group epoch while ASSIGNING."),
    _m("kafka_consumergroup_state", "gauge", "group", ("cluster", "group", "type", "state"),
       "1 for the group's current state, as Kafka names it (EMPTY, STABLE, ASSIGNING, RECONCILING, DEAD, ...)."),
    _m("kafka_consumergroup_info", "gauge", "group",
       ("cluster", "group", "type", "protocol_type", "assignor", "simple"),
       "1 per group; labels: group type, classic protocol type, assignor, and whether it is a simple "
       "(commit-only) group."),
    _m("kafka_consumergroup_status", "gauge", "group", _G,
       f"Worst partition status of the group (Burrow-style rules): {_STATUS_HELP}."),
    _m("kafka_consumergroup_data_loss_partitions", "gauge", "group", _G,
       "Partitions whose committed offset is below the low watermark: retention deleted records the group "
       "never read."),
    _m("kafka_consumergroup_last_commit_timestamp_seconds", "gauge", "group", _G,
       "Commit timestamp of the group's newest offset commit (Unix seconds)."),
    _m("kafka_consumergroup_last_rebalance_timestamp_seconds", "gauge", "group", _G,
       "Time of the group's last completed rebalance, generation or epoch change (Unix seconds)."),
    _m("kafka_consumergroup_rebalances_total", "counter", "group", _G,
       "Completed rebalances (generation or group-epoch bumps) the model has seen for the group."),
    _m("kafka_consumergroup_rebalance_storms_total", "counter", "group", _G,
       "Rebalance storms that began (members leaving soon after joining, or the same member leaving or "
       "restarting again and again); from the checkpointed model, so restarts of the job keep the count."),
    _m("kafka_consumergroup_rebalance_storm_active", "gauge", "group", _G,
       "1 while a rebalance storm lasts (until a quiet period without membership changes), else 0."),
    _m("kafka_consumergroup_rolling_restarts_total", "counter", "group", _G,
       "Rolling restarts: members present before restarted one at a time, each replaced, size restored."),
    _m("kafka_consumergroup_scale_outs_total", "counter", "group", _G,
       "Scale-outs: the group ended larger (members added), once it settled."),
    _m("kafka_consumergroup_scale_ins_total", "counter", "group", _G,
       "Scale-ins: the group ended smaller (members removed and not replaced in time), once it settled."),
    _m("kafka_consumergroup_rebalance_verdict", "gauge", "group", ("cluster", "group", "verdict"),
       "1 for the group's latest rebalance verdict (storm, storm_ended, rolling_restart, scale_out, scale_in, "
       "formation)."),
    _m("kafka_consumergroup_rebalance_partitions_moved_total", "counter", "group", _G,
       "Partitions that changed owner, summed over the group's rebalances."),
    _m("kafka_consumergroup_last_rebalance_partitions_moved", "gauge", "group", _G,
       "Partitions that changed owner in the group's last rebalance whose assignment is known."),
    _m("kafka_consumergroup_rebalance_causes_total", "counter", "group", ("cluster", "group", "cause"),
       "Rebalances by cause as far as the records tell (member_joined, member_left, leader_changed, ...); a "
       "rebalance with several causes counts once for each."),
    # ---- partition and member level (opt-in) ----------------------------------------------------------------
    _m("kafka_consumergroup_lag", "gauge", "partition", _P,
       "Offset lag of one partition: end offset (last stable offset capped by the high watermark) - committed "
       "offset, never negative."),
    _m("kafka_consumergroup_lag_seconds", "gauge", "partition", _P,
       "Time lag of one partition in seconds (0 when caught up, a lower bound when the committed offset is older "
       "than the end-offset history)."),
    _m("kafka_consumergroup_current_offset", "gauge", "partition", _P,
       "Committed offset of one partition."),
    _m("kafka_consumergroup_partition_status", "gauge", "partition", _P,
       f"Status of one partition: {_STATUS_HELP}."),
    _m("kafka_partition_latest_offset", "gauge", "partition", ("cluster", "topic", "partition"),
       "End offset a consumer can reach (last stable offset capped by the high watermark) of a partition some "
       "group commits to."),
    _m("kafka_consumergroup_member_assigned_partitions", "gauge", "partition",
       ("cluster", "group", "member_id", "client_id", "host"),
       "Partitions currently assigned to one member of the group."),
    # ---- the monitor itself ---------------------------------------------------------------------------------
    _m("groupscope_build_info", "gauge", "monitor", ("cluster", "version"), "1; the groupscope version."),
    _m("groupscope_records_decoded_total", "counter", "monitor", ("cluster",),
       "__consumer_offsets records decoded."),
    _m("groupscope_decode_errors_total", "counter", "monitor", ("cluster",),
       "__consumer_offsets records that could not be decoded (sent to the quarantine table)."),
    _m("groupscope_unknown_records_total", "counter", "monitor", ("cluster",),
       "Records of a type or version this groupscope does not know (skipped, not errors)."),
    _m("groupscope_model_anomalies_total", "counter", "monitor", ("cluster",),
       "Records the group model could not apply (an Anomaly event each)."),
    _m("groupscope_batches_total", "counter", "monitor", ("cluster",), "Micro-batches processed."),
    _m("groupscope_query_restarts_total", "counter", "monitor", ("cluster",),
       "Restarts of the streaming query after it failed."),
    _m("groupscope_batch_duration_seconds", "gauge", "monitor", ("cluster",),
       "Duration of the last micro-batch."),
    _m("groupscope_input_records_per_second", "gauge", "monitor", ("cluster",),
       "__consumer_offsets records of the last micro-batch per second since the one before."),
    _m("groupscope_last_batch_timestamp_seconds", "gauge", "monitor", ("cluster",),
       "When the last micro-batch finished (Unix seconds, driver clock)."),
    _m("groupscope_last_heartbeat_timestamp_seconds", "gauge", "monitor", ("cluster",),
       "Emitter time of the newest heartbeat the model has applied (Unix seconds)."),
    _m("groupscope_last_batch_age_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the last micro-batch finished (driver clock): grows while the streaming query makes no "
       "progress."),
    _m("groupscope_kafka_up", "gauge", "monitor", ("cluster",),
       "1 when the heartbeat emitter's last attempt reached Kafka, 0 when it failed (absent without an emitter)."),
    _m("groupscope_kafka_unreachable_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the heartbeat emitter last reached Kafka (0 right after a heartbeat): while Kafka cannot be "
       "reached, how stale the whole view is."),
    _m("groupscope_kafka_outages_total", "counter", "monitor", ("cluster",),
       "Kafka outages the model has reported (KafkaUnavailable events): gaps of the heartbeats and the log longer "
       "than model.kafka_gap_seconds. Kept in the job's state across restarts."),
    _m("groupscope_heartbeat_age_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the newest applied heartbeat: how stale every lag and status is."),
    _m("groupscope_caught_up", "gauge", "monitor", ("cluster",),
       "1 when every __consumer_offsets partition has been read up to the last stable offset it had one heartbeat "
       "ago (ready: live, not replaying history), else 0."),
    _m("groupscope_offsets_topic_behind_records", "gauge", "monitor", ("cluster", "partition"),
       "Records of a __consumer_offsets partition not yet read (up to its last stable offset)."),
    _m("groupscope_offsets_topic_unstable_records", "gauge", "monitor", ("cluster", "partition"),
       "High watermark - last stable offset of a __consumer_offsets partition: records held back from a "
       "read_committed reader by an open transaction."),
    _m("groupscope_offsets_topic_last_stable_offset", "gauge", "monitor", ("cluster", "partition"),
       "Last stable offset of a __consumer_offsets partition as of the newest heartbeat: when it stops moving while "
       "unstable records wait, a transaction hangs."),
    _m("groupscope_groups", "gauge", "monitor", ("cluster",), "Groups known to the monitor."),
    _m("groupscope_state_bytes", "gauge", "monitor", ("cluster",),
       "Size of the job's serialized group state (all shards, as last written to the state store): it should level "
       "off with the number of group-partitions, not grow with time."),
)

_SPEC = {s.name: s for s in METRICS}


# ------------------------------------------------------------------------------------------------------------
# Health of the monitor


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


# ------------------------------------------------------------------------------------------------------------
# State fed by the batches


class PartitionFigures(NamedTuple):
    """What the partition series and the HTTP API (``streaming.api``) need of a ``LAG`` row, and nothing more: a
    driver may hold one per partition of every group (a NamedTuple is a fraction of the row dict's size). Owner ids
    and reasons repeat across partitions, so they are interned: one string per member or reason, not per row."""

    lag: float | None
    lag_seconds: float | None
    committed_offset: float | None
    log_end_offset: float | None
    status: float | None
    owner: str | None = None  # member id holding the partition
    commit_time: float | None = None  # Unix seconds of the committed offset's commit
    lag_seconds_lower_bound: bool | None = None
    data_loss_risk: bool | None = None
    status_reason: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> PartitionFigures:
        owner, reason = row.get("owner"), row.get("status_reason")
        return cls(_number(row.get("lag")), _number(row.get("lag_seconds")), _number(row.get("committed_offset")),
                   _number(row.get("log_end_offset")), _status(row.get("status")),
                   sys.intern(str(owner)) if owner else None, _seconds(row.get("commit_time")),
                   row.get("lag_seconds_lower_bound"), row.get("data_loss_risk"),
                   sys.intern(str(reason)) if reason else None)


@dataclass(frozen=True, slots=True)
class StateView:
    """A consistent copy of the state for one scrape. Rows are shared, never mutated (copy on write)."""

    groups: Mapping[str, Mapping[str, Any]]
    partitions: Mapping[str, Mapping[tuple[str, int], PartitionFigures]]
    health: MonitorHealth
    anomalies: int


# The event kinds MetricsState acts on; the others (status changes, rebalances, joins) reach the metrics through
# the group rows' counters and statuses. A cold start's first batch carries one status event per group-partition,
# so a caller can leave the rest out before turning rows into Python values (tens of thousands of rows).
METRIC_EVENT_KINDS = ("GroupDeleted", "OffsetDeleted", "Anomaly")


class MetricsState:
    """Thread-safe latest state of every group, fed by micro-batches on the driver and read by scrapes.

    * Group rows (``GROUPS``) replace the group's previous row; ``deleted=True`` removes the group.
    * Partition rows (``LAG``) come per group snapshot, all of a group's partitions at once: they replace that
      group's partitions, so an offset that is gone from the snapshot is gone here. A group row with no
      partitions clears them too.
    * Group rows carry every per-group counter (rebalances, verdicts, partitions moved, causes): they come from
      the checkpointed model, so a restarted job exports the same totals, never counts restarting from 0.
    * Event rows (``GROUP_EVENTS``) bring deletions and model anomalies: ``OffsetDeleted`` removes the
      partition; ``GroupDeleted`` or ``OffsetDeleted`` for a
      group that has no live row in the same batch removes the group (the step emits a row for every group its
      records touched while the model still knows it, so no row means the group is gone).
    * Anomalies are counted once per ``batch_id``: a micro-batch that Spark re-runs after a failure does not
      count them twice.

    ``keep_partitions=False`` (partition-level series off) ignores partition rows, so the driver holds nothing per
    partition.
    """

    def __init__(self, *, keep_partitions: bool = True) -> None:
        self.keep_partitions = keep_partitions
        self._lock = threading.Lock()
        self._groups: dict[str, Mapping[str, Any]] = {}
        self._partitions: dict[str, dict[tuple[str, int], PartitionFigures]] = {}
        self._health = MonitorHealth()
        self._anomalies = 0
        self._last_batch_id: int | None = None

    def apply_batch(self, group_rows: Iterable[Mapping[str, Any]] = (),
                    partition_rows: Iterable[Mapping[str, Any]] | None = None,
                    event_rows: Iterable[Mapping[str, Any]] = (), health: MonitorHealth | None = None, *,
                    batch_id: int | None = None) -> None:
        """Applies one micro-batch's output (any part may be empty); then the next scrape sees it. Group rows are
        kept by reference: the caller must not change them afterwards.

        Raises:
            ValueError: a row without ``group_id`` (or a partition row without topic/partition).
        """
        groups = list(group_rows)
        for r in groups:
            _group_id(r)
        by_group: dict[str, dict[tuple[str, int], PartitionFigures]] = {}
        for r in (partition_rows or ()) if self.keep_partitions else ():
            gid = _group_id(r)
            if r.get("topic") is None or r.get("partition") is None:
                raise ValueError(f"partition row of group {gid!r} without topic/partition")
            by_group.setdefault(gid, {})[(str(r["topic"]), int(r["partition"]))] = PartitionFigures.of(r)
        events = list(event_rows)
        with self._lock:
            count_events = batch_id is None or self._last_batch_id is None or batch_id > self._last_batch_id
            if batch_id is not None and count_events:
                self._last_batch_id = batch_id
            removed: set[str] = set()
            offsets_removed: list[tuple[str, str, int]] = []
            for e in events:
                kind, gid = e.get("kind"), e.get("group_id")
                if not gid:
                    if kind == "Anomaly" and count_events:
                        self._anomalies += 1
                    continue
                if kind == "GroupDeleted":
                    removed.add(gid)
                elif kind == "OffsetDeleted":
                    removed.add(gid)
                    if e.get("topic") is not None and e.get("partition") is not None:
                        offsets_removed.append((gid, e["topic"], int(e["partition"])))
                elif kind == "Anomaly" and count_events:
                    self._anomalies += 1
            for gid, topic, partition in offsets_removed:
                parts = self._partitions.get(gid)
                if parts is not None and (topic, partition) in parts:
                    parts = dict(parts)  # copy on write: a view handed to a scrape may hold the old dict
                    del parts[(topic, partition)]
                    self._partitions[gid] = parts
            live = set()
            for r in groups:
                gid = r["group_id"]
                if r.get("deleted"):
                    self._forget(gid)
                    continue
                live.add(gid)
                self._groups[gid] = r
                if not r.get("partition_count"):
                    self._partitions.pop(gid, None)
            for gid, parts in by_group.items():
                self._partitions[gid] = parts
            for gid in removed - live:
                self._forget(gid)
            if health is not None:
                self._health = health

    def set_health(self, health: MonitorHealth) -> None:
        """Replaces the monitor's health (between batches, e.g. the query restart count)."""
        with self._lock:
            self._health = health

    @property
    def health(self) -> MonitorHealth:
        with self._lock:
            return self._health

    def view(self) -> StateView:
        """A consistent copy for one scrape; building families then needs no lock."""
        with self._lock:
            return StateView(dict(self._groups), dict(self._partitions), self._health, self._anomalies)

    # ---- internals ------------------------------------------------------------------------------------------

    def _forget(self, gid: str) -> None:
        self._groups.pop(gid, None)
        self._partitions.pop(gid, None)



def _group_id(row: Mapping[str, Any]) -> str:
    gid = row.get("group_id")
    if not gid:
        raise ValueError(f"row without group_id: {dict(row)!r}")
    return str(gid)


# ------------------------------------------------------------------------------------------------------------
# The collector


def _seconds(value: Any) -> float | None:
    """A row time as Unix seconds: epoch ms (``tables.group_row``), ``datetime`` (Arrow ``to_pylist``) or None."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.timestamp()
    if hasattr(value, "timestamp"):  # pandas.Timestamp
        return float(value.timestamp())
    return float(value) / 1000.0


def _number(value: Any) -> float | None:
    if value is None:
        return None
    f = float(value)
    return None if math.isnan(f) else f


def _status(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(Status[str(value)].value)
    except KeyError:
        return None


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("groupscope")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


class GroupscopeCollector:
    """prometheus_client custom collector: fresh families from the state's latest snapshot on every scrape.

    ``clock`` (Unix seconds) is injected so the heartbeat age is testable; the collector holds no other state.
    """

    def __init__(self, state: MetricsState, *, cluster: str, partition_metrics: bool = False,
                 clock: Callable[[], float] = time.time, kafka_up: Callable[[], bool | None] | None = None) -> None:
        self.partition_metrics = partition_metrics
        self.clock = clock
        self._version = _version()
        # cluster label -> (state, whether its heartbeat emitter reaches Kafka (None: cannot tell)); one registry
        # cannot hold two collectors of the same families, so every cluster of a deployment is served from here.
        self.clusters: dict[str, tuple[MetricsState, Callable[[], bool | None] | None]] = {}
        self.add_cluster(cluster, state, kafka_up)

    def add_cluster(self, cluster: str, state: MetricsState,
                    kafka_up: Callable[[], bool | None] | None = None) -> None:
        """Serves one more cluster's state, its series labelled ``cluster``."""
        if not cluster:
            raise ValueError("cluster must be a non-empty label value")
        if cluster in self.clusters:
            raise ValueError(f"cluster {cluster!r} is served already")
        self.clusters[cluster] = (state, kafka_up)

    @property
    def state(self) -> MetricsState:
        """The first cluster's state (the only one of a single-cluster job)."""
        return next(iter(self.clusters.values()))[0]

    @property
    def cluster(self) -> str:
        return next(iter(self.clusters))

    def _specs(self) -> list[MetricSpec]:
        return [s for s in METRICS if s.scope != "partition" or self.partition_metrics]

    def describe(self) -> Iterator[Metric]:
        """The families without samples, so registering never runs a full collect."""
        for spec in self._specs():
            yield _family(spec)

    def collect(self) -> Iterator[Metric]:
        fam = {s.name: _family(s) for s in self._specs()}
        for cluster, (state, kafka_up) in self.clusters.items():
            view = state.view()
            self._groups(cluster, view, fam)
            if self.partition_metrics:
                self._partitions(cluster, view, fam)
            self._monitor(cluster, view, kafka_up, fam)
        yield from fam.values()

    # ---- families ---------------------------------------------------------------------------------------------

    def _groups(self, c: str, view: StateView, fam: dict[str, Metric]) -> None:

        def put(name: str, labels: list[str], value: float | None) -> None:
            if value is not None:
                fam[name].add_metric(labels, value)

        for gid, r in sorted(view.groups.items()):
            g = [c, gid]
            put("kafka_consumergroup_group_sum_lag", g, _number(r.get("sum_lag")))
            put("kafka_consumergroup_group_max_lag", g, _number(r.get("max_lag")))
            put("kafka_consumergroup_group_max_lag_seconds", g, _number(r.get("max_lag_seconds")))
            for t in r.get("topics") or ():
                tl = [c, gid, str(t["topic"])]
                put("kafka_consumergroup_topic_sum_lag", tl, _number(t.get("sum_lag")))
                put("kafka_consumergroup_topic_max_lag", tl, _number(t.get("max_lag")))
                put("kafka_consumergroup_topic_max_lag_seconds", tl, _number(t.get("max_lag_seconds")))
            put("kafka_consumergroup_members", g, _number(r.get("member_count")))
            put("kafka_consumergroup_partitions", g, _number(r.get("partition_count")))
            put("kafka_consumergroup_generation", g, _number(r.get("generation")))
            put("kafka_consumergroup_assignment_epoch", g, _number(r.get("assignment_epoch")))
            gtype = str(r.get("group_type") or "")
            if r.get("state"):
                put("kafka_consumergroup_state", [c, gid, gtype, str(r["state"])], 1.0)
            put("kafka_consumergroup_info",
                [c, gid, gtype, str(r.get("protocol_type") or ""), str(r.get("assignor") or ""),
                 "true" if r.get("is_simple") else "false"], 1.0)
            put("kafka_consumergroup_status", g, _status(r.get("status")))
            put("kafka_consumergroup_data_loss_partitions", g, _number(r.get("data_loss_partitions")) or 0.0)
            put("kafka_consumergroup_last_commit_timestamp_seconds", g, _seconds(r.get("last_commit_time")))
            put("kafka_consumergroup_last_rebalance_timestamp_seconds", g, _seconds(r.get("last_rebalance_time")))
            put("kafka_consumergroup_rebalances_total", g, _number(r.get("rebalances")) or 0.0)
            # Counters start at 0 with the group, so the first storm is an increase rate() can see.
            put("kafka_consumergroup_rebalance_storms_total", g, _number(r.get("storms")) or 0.0)
            put("kafka_consumergroup_rebalance_storm_active", g, 1.0 if r.get("storm_active") else 0.0)
            put("kafka_consumergroup_rolling_restarts_total", g, _number(r.get("rolling_restarts")) or 0.0)
            put("kafka_consumergroup_scale_outs_total", g, _number(r.get("scale_outs")) or 0.0)
            put("kafka_consumergroup_scale_ins_total", g, _number(r.get("scale_ins")) or 0.0)
            if r.get("verdict"):
                put("kafka_consumergroup_rebalance_verdict", [c, gid, str(r["verdict"])], 1.0)
            put("kafka_consumergroup_rebalance_partitions_moved_total", g, _number(r.get("partitions_moved")) or 0.0)
            put("kafka_consumergroup_last_rebalance_partitions_moved", g, _number(r.get("last_partitions_moved")))
            for cause in r.get("rebalance_causes") or ():
                put("kafka_consumergroup_rebalance_causes_total", [c, gid, str(cause["cause"])],
                    float(cause["rebalances"]))

    def _partitions(self, c: str, view: StateView, fam: dict[str, Metric]) -> None:
        latest: dict[tuple[str, int], float] = {}
        for gid in sorted(view.groups):
            r = view.groups[gid]
            for m in r.get("members") or ():
                fam["kafka_consumergroup_member_assigned_partitions"].add_metric(
                    [c, gid, str(m.get("member_id") or ""), str(m.get("client_id") or ""), str(m.get("host") or "")],
                    float(m.get("partitions") or 0))
            for (topic, partition), p in sorted(view.partitions.get(gid, {}).items()):
                labels = [c, gid, topic, str(partition)]
                for name, value in (("kafka_consumergroup_lag", p.lag),
                                    ("kafka_consumergroup_lag_seconds", p.lag_seconds),
                                    ("kafka_consumergroup_current_offset", p.committed_offset),
                                    ("kafka_consumergroup_partition_status", p.status)):
                    if value is not None:
                        fam[name].add_metric(labels, value)
                end = p.log_end_offset
                if end is not None and end > latest.get((topic, partition), -1.0):
                    latest[(topic, partition)] = end
        for (topic, partition), end in sorted(latest.items()):
            fam["kafka_partition_latest_offset"].add_metric([c, topic, str(partition)], end)

    def _monitor(self, cluster: str, view: StateView, kafka_up: Callable[[], bool | None] | None,
                 fam: dict[str, Metric]) -> None:
        c = [cluster]
        h = view.health
        fam["groupscope_build_info"].add_metric([cluster, self._version], 1.0)
        for name, value in (("groupscope_records_decoded_total", h.records_decoded),
                            ("groupscope_decode_errors_total", h.decode_errors),
                            ("groupscope_unknown_records_total", h.unknown_records),
                            ("groupscope_model_anomalies_total", view.anomalies),
                            ("groupscope_batches_total", h.batches),
                            ("groupscope_query_restarts_total", h.query_restarts),
                            ("groupscope_batch_duration_seconds", h.last_batch_seconds),
                            ("groupscope_input_records_per_second", h.input_records_per_second),
                            ("groupscope_last_batch_timestamp_seconds", h.last_batch_time),
                            ("groupscope_last_heartbeat_timestamp_seconds", h.heartbeat_time),
                            ("groupscope_caught_up", 1.0 if h.caught_up else 0.0),
                            ("groupscope_kafka_outages_total", h.kafka_outages if h.offsets_partitions else None),
                            ("groupscope_groups", len(view.groups)),
                            ("groupscope_state_bytes", (sum(p.state_bytes for p in h.offsets_partitions)
                                                        if h.offsets_partitions else None))):
            if value is not None:
                fam[name].add_metric(c, float(value))
        if h.last_batch_time is not None:
            fam["groupscope_last_batch_age_seconds"].add_metric(c, max(0.0, self.clock() - h.last_batch_time))
        up = kafka_up() if kafka_up is not None else None
        if up is not None:
            fam["groupscope_kafka_up"].add_metric(c, 1.0 if up else 0.0)
        silence = getattr(kafka_up, "silence", None)
        silent_s = silence() if silence is not None else None
        if silent_s is not None:
            fam["groupscope_kafka_unreachable_seconds"].add_metric(c, silent_s)
        if h.heartbeat_time is not None:
            # Clamped: emitter and driver clocks may differ slightly; a negative age means "fresh".
            fam["groupscope_heartbeat_age_seconds"].add_metric(c, max(0.0, self.clock() - h.heartbeat_time))
        for p in h.offsets_partitions:
            labels = [cluster, str(p.partition)]
            if p.behind is not None:
                fam["groupscope_offsets_topic_behind_records"].add_metric(labels, float(p.behind))
            if p.unstable is not None:
                fam["groupscope_offsets_topic_unstable_records"].add_metric(labels, float(p.unstable))
            if p.last_stable_offset >= 0:
                fam["groupscope_offsets_topic_last_stable_offset"].add_metric(labels, float(p.last_stable_offset))


def _family(spec: MetricSpec) -> Metric:
    cls = CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily
    return cls(spec.family_name, spec.help, labels=list(spec.labels))


# ------------------------------------------------------------------------------------------------------------
# The HTTP endpoint


class MetricsServer(BackgroundHttpServer):
    """Serves ``/metrics`` (an explicit registry), ``/ready`` (200 once caught up, else 503) and ``/healthz``.

    One server serves every cluster of a deployment (:meth:`add_cluster`): their series share the families and
    differ by the ``cluster`` label. ``/ready`` is 200 when every cluster is ready and otherwise names each one
    that is not and why; ``/ready?cluster=NAME`` answers for one cluster (404 for a name it does not serve).

    Constructing binds nothing; :meth:`start` binds (``port=0`` picks a free port, see :attr:`port`) and serves
    from a daemon thread; :meth:`stop` shuts the loop down and closes the socket.
    """

    def __init__(self, state: MetricsState, *, cluster: str, host: str = "0.0.0.0", port: int = 9308,
                 partition_metrics: bool = False, process_metrics: bool = True,
                 clock: Callable[[], float] = time.time, kafka_up: Callable[[], bool | None] | None = None,
                 max_batch_age_s: float | None = None, max_heartbeat_age_s: float | None = None,
                 heartbeat_problem: Callable[[], str | None] | None = None,
                 kafka_silence: Callable[[], float | None] | None = None,
                 max_kafka_silence_s: float | None = None) -> None:
        """``max_batch_age_s`` / ``max_heartbeat_age_s``: past these, ``/ready`` says 503 with the reason even when
        caught up, so a job whose query hangs or whose heartbeats stopped is not reported ready (None: no limit).
        ``heartbeat_problem``: why no heartbeat can be emitted though Kafka answers (its topic cannot be created),
        added to a not-ready reason. ``kafka_silence``: seconds since the heartbeat emitter last reached Kafka;
        past ``max_kafka_silence_s`` ``/ready`` says Kafka is unreachable and the view stale, and
        ``groupscope_kafka_up`` is 0 even while an attempt still hangs (a frozen broker)."""
        super().__init__(host=host, port=port)
        self.kafka_silences: dict[str, Callable[[], float | None]] = {}
        if kafka_silence is not None:
            self.kafka_silences[cluster] = kafka_silence
        self.max_kafka_silence_s = max_kafka_silence_s
        self.clock = clock
        self.heartbeat_problems: dict[str, Callable[[], str | None]] = {}
        if heartbeat_problem is not None:
            self.heartbeat_problems[cluster] = heartbeat_problem
        self.max_batch_age_s = max_batch_age_s
        self.max_heartbeat_age_s = max_heartbeat_age_s
        self.registry = CollectorRegistry()
        self.collector = GroupscopeCollector(state, cluster=cluster, partition_metrics=partition_metrics,
                                             clock=clock, kafka_up=self._up_unless_silent(cluster, kafka_up))
        self.registry.register(self.collector)
        if process_metrics:
            from prometheus_client import ProcessCollector

            ProcessCollector(registry=self.registry)  # process_* of the driver (memory, CPU, open files)
        self._metrics_app = make_wsgi_app(self.registry)

    thread_name = "groupscope-metrics"

    @property
    def state(self) -> MetricsState:
        """The first cluster's state (the only one of a single-cluster job)."""
        return self.collector.state

    def add_cluster(self, cluster: str, state: MetricsState,
                    kafka_up: Callable[[], bool | None] | None = None,
                    heartbeat_problem: Callable[[], str | None] | None = None,
                    kafka_silence: Callable[[], float | None] | None = None) -> None:
        """Serves one more cluster (before or after :meth:`start`)."""
        if kafka_silence is not None:
            self.kafka_silences[cluster] = kafka_silence
        self.collector.add_cluster(cluster, state, self._up_unless_silent(cluster, kafka_up))
        if heartbeat_problem is not None:
            self.heartbeat_problems[cluster] = heartbeat_problem

    def _up_unless_silent(self, cluster: str, kafka_up: Callable[[], bool | None] | None):
        """``kafka_up``, but False once the emitter has not reached Kafka for the silence limit: a heartbeat
        attempt against a frozen broker hangs instead of failing, and the gauge must not wait for it. The silence
        itself is published as ``groupscope_kafka_unreachable_seconds``."""
        if kafka_up is None:
            return None

        def up() -> bool | None:
            silence = self._silence(cluster)
            if silence is not None and self.max_kafka_silence_s is not None and silence > self.max_kafka_silence_s:
                return False
            return kafka_up()

        up.silence = lambda: self._silence(cluster)  # type: ignore[attr-defined]
        return up

    def _silence(self, cluster: str) -> float | None:
        of = self.kafka_silences.get(cluster)
        return None if of is None else of()

    def start(self) -> MetricsServer:
        """Binds and serves in a daemon thread.

        Raises:
            OSError: the address is in use or cannot be bound.
            RuntimeError: already started.
        """
        self._serve()
        return self

    def not_ready_reason(self, cluster: str | None = None) -> str | None:
        """Why ``/ready`` is 503 (None: ready), for one cluster or (``None``) for all of them: with several, each
        cluster that is not ready is named with its reason."""
        clusters = self.collector.clusters
        if cluster is not None:
            return self._with_heartbeat_problem(cluster, self._cluster_not_ready(clusters[cluster][0], cluster))
        reasons = {name: self._with_heartbeat_problem(name, self._cluster_not_ready(state, name))
                   for name, (state, _) in clusters.items()}
        if len(reasons) == 1:
            return next(iter(reasons.values()))
        waiting = [f"cluster {name}: {reason}" for name, reason in reasons.items() if reason is not None]
        return "; ".join(waiting) or None

    def _with_heartbeat_problem(self, cluster: str, reason: str | None) -> str | None:
        problem_of = self.heartbeat_problems.get(cluster)
        problem = problem_of() if reason is not None and problem_of is not None else None
        return f"{reason}; {problem}" if problem else reason

    def _cluster_not_ready(self, state: MetricsState, cluster: str | None = None) -> str | None:
        """Staleness first: a stalled job must not hide behind "catching up"."""
        h = state.health
        silence = None if cluster is None else self._silence(cluster)
        if silence is not None and self.max_kafka_silence_s is not None and silence > self.max_kafka_silence_s:
            return (f"Kafka unreachable: no heartbeat reached it for {silence:.0f} s (limit "
                    f"{self.max_kafka_silence_s:.0f} s); every lag, status and verdict is that stale")
        if not h.offsets_partitions:
            return "no batch processed yet"
        now = self.clock()
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

    # ---- WSGI -------------------------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
        if path == "/ready":
            from urllib.parse import parse_qs

            cluster = (parse_qs(environ.get("QUERY_STRING") or "").get("cluster") or [None])[0]
            if cluster is not None and cluster not in self.collector.clusters:
                known = ", ".join(self.collector.clusters)
                return _text(start_response, "404 Not Found", f"unknown cluster {cluster!r}; known: {known}\n")
            reason = self.not_ready_reason(cluster)
            if reason is None:
                return _text(start_response, "200 OK", "ready\n")
            return _text(start_response, "503 Service Unavailable", f"not ready: {reason}\n")
        if path == "/healthz":
            return _text(start_response, "200 OK", "ok\n")
        if path == "/":
            return _text(start_response, "200 OK", "groupscope: /metrics /ready /healthz\n")
        return _text(start_response, "404 Not Found", "not found: try /metrics, /ready or /healthz\n")


def _text(start_response: Callable, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]
