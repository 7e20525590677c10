"""The catalogue of what ``/metrics`` exports: each metric once, with its type, labels, meaning and where its
samples come from.

Names follow the ``kafka_consumergroup_*`` families of other lag exporters, with groupscope's own labels (their exact
names and labels are the opt-in flavours of ``compat_catalogue.py``)
(docs/design-notes.md#metrics-lifecycle); every series carries a ``cluster`` label. Group-level series are always on; per-partition and per-member series are
opt-in (``partition_metrics``), because they multiply cardinality by partitions and churn with member ids. Monitor
series describe the job itself. Dashboards, alert rules, ``docs/metrics.md`` and their tests are checked against
:data:`METRICS`; the collector only walks it.

Each entry's ``samples`` reads one :class:`Scrape` (a cluster's state view at one moment) and yields
``(label values, value)``; a None value is no sample (a figure that is not known is absent, never 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from streaming.model.rules import Status
from streaming.schema.read_model import GroupView, PartitionView, TopicLagView
from streaming.sinks.monitor_health import MonitorHealth, OffsetsPartitionHealth
from streaming.sinks.state_store import StateView

__all__ = ["MetricSpec", "METRICS", "PerGroup", "PerPartition", "Scrape", "Scope", "Kind"]

Scope = Literal["group", "partition", "monitor"]
Kind = Literal["gauge", "counter"]
Value = float | int | bool | None
Samples = Callable[["Scrape"], Iterable[tuple[Sequence[str], Value]]]

_G = ("cluster", "group")
_T = ("cluster", "group", "topic")
_P = ("cluster", "group", "topic", "partition")
_STATUS_HELP = ", ".join(f"{s.value}={s.name}" for s in Status)


@dataclass(frozen=True)
class Scrape:
    """What one scrape reads of one cluster: its state view, the clock, and the heartbeat emitter's view of Kafka
    (``kafka_up`` None: no emitter, or it has not tried yet)."""

    cluster: str
    view: StateView
    now: float
    version: str
    kafka_up: bool | None = None
    kafka_silence_s: float | None = None

    @property
    def health(self) -> MonitorHealth:
        return self.view.health

    @cached_property
    def groups(self) -> list[tuple[str, GroupView]]:
        """The groups by id, sorted once for every family of the scrape."""
        return sorted(self.view.groups.items())

    def age(self, then: float | None) -> float | None:
        """Seconds since ``then``, clamped at 0: emitter and driver clocks may differ slightly, and a negative age
        means "fresh"."""
        return None if then is None else max(0.0, self.now - then)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One exported metric: its full sample name (counters end in ``_total``), type, labels and meaning, and how
    its samples are read from a scrape."""

    name: str
    kind: Kind
    scope: Scope
    labels: tuple[str, ...]
    help: str
    samples: Samples = field(default=lambda s: (), compare=False, repr=False)

    @property
    def keyed(self) -> "PerGroup | PerPartition | None":
        """The samples of a one-value-per-group or per-partition metric (:class:`PerGroup`,
        :class:`PerPartition`) labelled as such, else None."""
        keyed = self.samples if isinstance(self.samples, (PerGroup, PerPartition)) else None
        return keyed if keyed is not None and keyed.labels == self.labels else None

    @property
    def family_name(self) -> str:
        """The name prometheus_client's family takes (a counter's family drops ``_total``)."""
        return self.name[: -len("_total")] if self.kind == "counter" else self.name


def _m(name: str, kind: Kind, scope: Scope, labels: tuple[str, ...], help_text: str, samples: Samples) -> MetricSpec:
    return MetricSpec(name, kind, scope, labels, help_text, samples)


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _catch_up(catching_up: bool | None, seconds: float | None) -> float | None:
    """Seconds to catch up; +Inf when not catching up (a threshold alert needs no second series); None unknown."""
    if catching_up is None:
        return None
    return math.inf if not catching_up or seconds is None else seconds


@dataclass(frozen=True, slots=True)
class PerGroup:
    """The samples of a metric with one value per group, labelled ``(cluster, group)``: most of the page at scale.
    Kept as its value function so that a writer can lay out each group's labels once for all such metrics
    (:meth:`streaming.sinks.exposition.MetricWriter.keyed_lines`) instead of once per metric and group."""

    value: Callable[[GroupView], Value]
    labels = ("cluster", "group")

    @staticmethod
    def rows(s: "Scrape") -> tuple[list[GroupView], list[tuple[str, ...]]]:
        """What the values are read from in one scrape, in exposition order, and the label values of each."""
        return [g for _, g in s.groups], [(s.cluster, gid) for gid, _ in s.groups]

    def __call__(self, s: "Scrape") -> Iterable[tuple[Sequence[str], Value]]:
        items, labels = self.rows(s)
        return zip(labels, map(self.value, items))


@dataclass(frozen=True, slots=True)
class PerPartition:
    """Like :class:`PerGroup`, one value per committed partition of a group, labelled ``(cluster, group, topic,
    partition)``: with per-partition series, most of the page."""

    value: Callable[[PartitionView], Value]
    labels = ("cluster", "group", "topic", "partition")

    @staticmethod
    def rows(s: "Scrape") -> tuple[list[PartitionView], list[tuple[str, ...]]]:
        """What the values are read from in one scrape, in exposition order, and the label values of each."""
        rows = list(_partitions(s))
        return [p for *_, p in rows], [(s.cluster, gid, topic, str(n)) for gid, topic, n, _ in rows]

    def __call__(self, s: "Scrape") -> Iterable[tuple[Sequence[str], Value]]:
        items, labels = self.rows(s)
        return zip(labels, map(self.value, items))


def _per_group(value: Callable[[GroupView], Value]) -> Samples:
    return PerGroup(value)


def _per_topic(value: Callable[[TopicLagView], Value]) -> Samples:
    return lambda s: (([s.cluster, gid, t.topic], value(t)) for gid, g in s.groups for t in g.topics)


def _group_state(s: Scrape):
    return (([s.cluster, gid, g.group_type or "", g.state], 1) for gid, g in s.groups if g.state)


def _group_info(s: Scrape):
    return (([s.cluster, gid, g.group_type or "", g.protocol_type or "", g.assignor or "",
              "true" if g.is_simple else "false"], 1) for gid, g in s.groups)


def _group_verdict(s: Scrape):
    return (([s.cluster, gid, g.verdict], 1) for gid, g in s.groups if g.verdict)


def _group_causes(s: Scrape):
    return (([s.cluster, gid, cause], n) for gid, g in s.groups for cause, n in g.rebalance_causes)


def _partitions(s: Scrape) -> Iterable[tuple[str, str, int, PartitionView]]:
    for gid, _ in s.groups:
        for (topic, partition), p in sorted(s.view.partitions.get(gid, {}).items()):
            yield gid, topic, partition, p


def _per_partition(value: Callable[[PartitionView], Value]) -> Samples:
    return PerPartition(value)


def _latest_offsets(s: Scrape):
    """Each partition's newest end offset over the groups that commit to it."""
    latest: dict[tuple[str, int], int] = {}
    for _, topic, n, p in _partitions(s):
        if p.log_end_offset is not None and p.log_end_offset > latest.get((topic, n), -1):
            latest[(topic, n)] = p.log_end_offset
    return (([s.cluster, topic, str(n)], end) for (topic, n), end in sorted(latest.items()))


def _lag_seconds_method(s: Scrape):
    return (([s.cluster, gid, topic, str(n), p.lag_seconds_method], 1) for gid, topic, n, p in _partitions(s)
            if p.lag_seconds_method and p.lag_seconds is not None)


def _member_partitions(s: Scrape):
    return (([s.cluster, gid, m.member_id, m.client_id, m.host], m.partitions) for gid, g in s.groups
            for m in g.members)


def _monitor(value: Callable[[Scrape], Value]) -> Samples:
    return lambda s: [([s.cluster], value(s))]


def _per_offsets_partition(value: Callable[[OffsetsPartitionHealth], Value]) -> Samples:
    return lambda s: (([s.cluster, str(p.partition)], value(p)) for p in s.health.offsets_partitions)


# The catalogue. Order is exposition order. Group scope is always exported; partition scope only with
# ``partition_metrics``; monitor scope is the job itself.
METRICS: tuple[MetricSpec, ...] = (
    _m("kafka_consumergroup_group_sum_lag", "gauge", "group", _G,
       "Sum of the offset lag (end offset - committed offset, never negative) over the group's partitions.",
       _per_group(lambda g: g.sum_lag)),
    _m("kafka_consumergroup_group_max_lag", "gauge", "group", _G,
       "Largest offset lag of any partition of the group.",
       _per_group(lambda g: g.max_lag)),
    _m("kafka_consumergroup_group_max_lag_seconds", "gauge", "group", _G,
       "Largest time lag of any partition of the group: seconds since the log end passed the committed offset "
       "(0 when caught up; absent when no end-offset history is known yet).",
       _per_group(lambda g: g.max_lag_seconds)),
    _m("kafka_consumergroup_group_max_lag_seconds_method", "gauge", "group", (*_G, "method"),
       "1 for how the group's kafka_consumergroup_group_max_lag_seconds was found (its partition's method): "
       "measured or interpolated; absent without a time lag.",
       lambda s: (([s.cluster, gid, g.max_lag_seconds_method], 1) for gid, g in s.groups
                  if g.max_lag_seconds_method and g.max_lag_seconds is not None)),
    _m("kafka_consumergroup_topic_sum_lag", "gauge", "group", _T,
       "Sum of the offset lag over the group's partitions of one topic.",
       _per_topic(lambda t: t.sum_lag)),
    _m("kafka_consumergroup_topic_max_lag", "gauge", "group", _T,
       "Largest offset lag of the group's partitions of one topic.",
       _per_topic(lambda t: t.max_lag)),
    _m("kafka_consumergroup_topic_max_lag_seconds", "gauge", "group", _T,
       "Largest time lag in seconds of the group's partitions of one topic.",
       _per_topic(lambda t: t.max_lag_seconds)),
    _m("kafka_consumergroup_catch_up_seconds", "gauge", "group", _G,
       "Seconds until the group works off its lag at the current consumption and production rates (its slowest "
       "partition; 0 without lag); +Inf when some lagging partition is consumed no faster than it is produced (not "
       "catching up); absent while not known (fewer than two commits or no end-offset history).",
       _per_group(lambda g: _catch_up(g.catching_up, g.catch_up_seconds))),
    _m("kafka_consumergroup_members", "gauge", "group", _G,
       "Members of the group (classic and KIP-848 members alike).",
       _per_group(lambda g: g.member_count)),
    _m("kafka_consumergroup_partitions", "gauge", "group", _G,
       "Partitions the group has a committed offset for.",
       _per_group(lambda g: g.partition_count)),
    _m("kafka_consumergroup_generation", "gauge", "group", _G,
       "Classic generation id, or the group epoch of a KIP-848 (consumer, share, streams) group.",
       _per_group(lambda g: g.generation)),
    _m("kafka_consumergroup_assignment_epoch", "gauge", "group", _G,
       "KIP-848 target assignment epoch (absent for classic groups); below the group epoch while ASSIGNING.",
       _per_group(lambda g: g.assignment_epoch)),
    _m("kafka_consumergroup_state", "gauge", "group", ("cluster", "group", "type", "state"),
       "1 for the group's current state, as Kafka names it (EMPTY, STABLE, ASSIGNING, RECONCILING, DEAD, ...).",
       _group_state),
    _m("kafka_consumergroup_info", "gauge", "group",
       ("cluster", "group", "type", "protocol_type", "assignor", "simple"),
       "1 per group; labels: group type, classic protocol type, assignor, and whether it is a simple "
       "(commit-only) group.",
       _group_info),
    _m("kafka_consumergroup_status", "gauge", "group", _G,
       f"Worst partition status of the group (Burrow-style rules): {_STATUS_HELP}; absent while not judged (no "
       "log end offset known for its partitions yet).",
       _per_group(lambda g: g.status)),
    _m("kafka_consumergroup_data_loss_partitions", "gauge", "group", _G,
       "Partitions whose committed offset is below the low watermark: retention deleted records the group "
       "never read.",
       _per_group(lambda g: g.data_loss_partitions)),
    _m("kafka_consumergroup_last_commit_timestamp_seconds", "gauge", "group", _G,
       "Commit timestamp of the group's newest offset commit (Unix seconds).",
       _per_group(lambda g: _seconds(g.last_commit_ms))),
    _m("kafka_consumergroup_last_rebalance_timestamp_seconds", "gauge", "group", _G,
       "Time of the group's last completed rebalance, generation or epoch change (Unix seconds).",
       _per_group(lambda g: _seconds(g.last_rebalance_ms))),
    _m("kafka_consumergroup_rebalances_total", "counter", "group", _G,
       "Completed rebalances (generation or group-epoch bumps) the model has seen for the group.",
       _per_group(lambda g: g.rebalances)),
    _m("kafka_consumergroup_rebalance_storms_total", "counter", "group", _G,
       "Rebalance storms that began (members leaving soon after joining, or the same member leaving or "
       "restarting again and again); from the checkpointed model, so restarts of the job keep the count.",
       _per_group(lambda g: g.storms)),
    _m("kafka_consumergroup_rebalance_storm_active", "gauge", "group", _G,
       "1 while a rebalance storm lasts (until a quiet period without membership changes), else 0.",
       _per_group(lambda g: g.storm_active)),
    _m("kafka_consumergroup_rolling_restarts_total", "counter", "group", _G,
       "Rolling restarts: members present before restarted one at a time, each replaced, size restored.",
       _per_group(lambda g: g.rolling_restarts)),
    _m("kafka_consumergroup_scale_outs_total", "counter", "group", _G,
       "Scale-outs: the group ended larger (members added), once it settled.",
       _per_group(lambda g: g.scale_outs)),
    _m("kafka_consumergroup_scale_ins_total", "counter", "group", _G,
       "Scale-ins: the group ended smaller (members removed and not replaced in time), once it settled.",
       _per_group(lambda g: g.scale_ins)),
    _m("kafka_consumergroup_rebalance_verdict", "gauge", "group", ("cluster", "group", "verdict"),
       "1 for the group's latest rebalance verdict (storm, storm_ended, rolling_restart, scale_out, scale_in, "
       "formation).",
       _group_verdict),
    _m("kafka_consumergroup_rebalance_partitions_moved_total", "counter", "group", _G,
       "Partitions that changed owner, summed over the group's rebalances.",
       _per_group(lambda g: g.partitions_moved)),
    _m("kafka_consumergroup_last_rebalance_partitions_moved", "gauge", "group", _G,
       "Partitions that changed owner in the group's last rebalance whose assignment is known.",
       _per_group(lambda g: g.last_partitions_moved)),
    _m("kafka_consumergroup_rebalance_causes_total", "counter", "group", ("cluster", "group", "cause"),
       "Rebalances by cause as far as the records tell (member_joined, member_left, leader_changed, ...); a "
       "rebalance with several causes counts once for each.",
       _group_causes),
    # ---- partition and member level (opt-in) ----------------------------------------------------------------
    _m("kafka_consumergroup_lag", "gauge", "partition", _P,
       "Offset lag of one partition: end offset (last stable offset capped by the high watermark) - committed "
       "offset, never negative.",
       _per_partition(lambda p: p.lag)),
    _m("kafka_consumergroup_lag_seconds", "gauge", "partition", _P,
       "Time lag of one partition in seconds (0 when caught up, a lower bound when the committed offset is older "
       "than the end-offset history).",
       _per_partition(lambda p: p.lag_seconds)),
    _m("kafka_consumergroup_lag_seconds_method", "gauge", "partition", (*_P, "method"),
       "1 for how the partition's kafka_consumergroup_lag_seconds was found: measured (the age of the oldest record "
       "the group has not processed, read from the partition) or interpolated (when the log end passed the "
       "committed offset, from the end-offset history); absent without a time lag.",
       _lag_seconds_method),
    _m("kafka_consumergroup_partition_catch_up_seconds", "gauge", "partition", _P,
       "Seconds until one partition's lag is worked off at its current consumption and production rates (0 "
       "without lag); +Inf when not catching up; absent while not known.",
       _per_partition(lambda p: _catch_up(p.catching_up, p.catch_up_seconds))),
    _m("kafka_consumergroup_current_offset", "gauge", "partition", _P,
       "Committed offset of one partition.",
       _per_partition(lambda p: p.committed_offset)),
    _m("kafka_consumergroup_partition_status", "gauge", "partition", _P,
       f"Status of one partition: {_STATUS_HELP}; absent while not judged (no log end offset known yet).",
       _per_partition(lambda p: p.status)),
    _m("kafka_partition_latest_offset", "gauge", "partition", ("cluster", "topic", "partition"),
       "End offset a consumer can reach (last stable offset capped by the high watermark) of a partition some "
       "group commits to.",
       _latest_offsets),
    _m("kafka_consumergroup_member_assigned_partitions", "gauge", "partition",
       ("cluster", "group", "member_id", "client_id", "host"),
       "Partitions currently assigned to one member of the group.",
       _member_partitions),
    # ---- the monitor itself ---------------------------------------------------------------------------------
    _m("groupscope_build_info", "gauge", "monitor", ("cluster", "version"), "1; the groupscope version.",
       lambda s: [([s.cluster, s.version], 1)]),
    _m("groupscope_records_decoded_total", "counter", "monitor", ("cluster",),
       "__consumer_offsets records decoded.",
       _monitor(lambda s: s.health.records_decoded)),
    _m("groupscope_decode_errors_total", "counter", "monitor", ("cluster",),
       "__consumer_offsets records that could not be decoded (sent to the quarantine table).",
       _monitor(lambda s: s.health.decode_errors)),
    _m("groupscope_unknown_records_total", "counter", "monitor", ("cluster",),
       "Records of a type or version this groupscope does not know (skipped, not errors).",
       _monitor(lambda s: s.health.unknown_records)),
    _m("groupscope_model_anomalies_total", "counter", "monitor", ("cluster",),
       "Records the group model could not apply (an Anomaly event each).",
       _monitor(lambda s: s.view.anomalies)),
    _m("groupscope_batches_total", "counter", "monitor", ("cluster",), "Micro-batches processed.",
       _monitor(lambda s: s.health.batches)),
    _m("groupscope_query_restarts_total", "counter", "monitor", ("cluster",),
       "Restarts of the streaming query after it failed.",
       _monitor(lambda s: s.health.query_restarts)),
    _m("groupscope_batch_duration_seconds", "gauge", "monitor", ("cluster",),
       "Duration of the last micro-batch.",
       _monitor(lambda s: s.health.last_batch_seconds)),
    _m("groupscope_input_records_per_second", "gauge", "monitor", ("cluster",),
       "__consumer_offsets records of the last micro-batch per second since the one before.",
       _monitor(lambda s: s.health.input_records_per_second)),
    _m("groupscope_last_batch_timestamp_seconds", "gauge", "monitor", ("cluster",),
       "When the last micro-batch finished (Unix seconds, driver clock).",
       _monitor(lambda s: s.health.last_batch_time)),
    _m("groupscope_last_heartbeat_timestamp_seconds", "gauge", "monitor", ("cluster",),
       "Emitter time of the newest heartbeat the model has applied (Unix seconds).",
       _monitor(lambda s: s.health.heartbeat_time)),
    _m("groupscope_last_batch_age_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the last micro-batch finished (driver clock): grows while the streaming query makes no "
       "progress.",
       _monitor(lambda s: s.age(s.health.last_batch_time))),
    _m("groupscope_kafka_up", "gauge", "monitor", ("cluster",),
       "1 when the heartbeat emitter's last attempt reached Kafka, 0 when it failed (absent without an emitter).",
       _monitor(lambda s: s.kafka_up)),
    _m("groupscope_kafka_unreachable_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the heartbeat emitter last reached Kafka (0 right after a heartbeat): while Kafka cannot be "
       "reached, how stale the whole view is.",
       _monitor(lambda s: s.kafka_silence_s)),
    _m("groupscope_kafka_outages_total", "counter", "monitor", ("cluster",),
       "Kafka outages the model has reported (KafkaUnavailable events): gaps of the heartbeats and the log longer "
       "than model.kafka_gap_seconds. Kept in the job's state across restarts.",
       _monitor(lambda s: s.health.kafka_outages if s.health.offsets_partitions else None)),
    _m("groupscope_heartbeat_age_seconds", "gauge", "monitor", ("cluster",),
       "Seconds since the newest applied heartbeat: how stale every lag and status is.",
       _monitor(lambda s: s.age(s.health.heartbeat_time))),
    _m("groupscope_caught_up", "gauge", "monitor", ("cluster",),
       "1 when every __consumer_offsets partition has been read up to the last stable offset it had one heartbeat "
       "ago (ready: live, not replaying history), else 0.",
       _monitor(lambda s: s.health.caught_up)),
    _m("groupscope_offsets_topic_behind_records", "gauge", "monitor", ("cluster", "partition"),
       "Records of a __consumer_offsets partition not yet read (up to its last stable offset).",
       _per_offsets_partition(lambda p: p.behind)),
    _m("groupscope_offsets_topic_unstable_records", "gauge", "monitor", ("cluster", "partition"),
       "High watermark - last stable offset of a __consumer_offsets partition: records held back from a "
       "read_committed reader by an open transaction.",
       _per_offsets_partition(lambda p: p.unstable)),
    _m("groupscope_offsets_topic_last_stable_offset", "gauge", "monitor", ("cluster", "partition"),
       "Last stable offset of a __consumer_offsets partition as of the newest heartbeat: when it stops moving while "
       "unstable records wait, a transaction hangs.",
       _per_offsets_partition(lambda p: p.last_stable_offset if p.last_stable_offset >= 0 else None)),
    _m("groupscope_groups", "gauge", "monitor", ("cluster",), "Groups known to the monitor.",
       _monitor(lambda s: len(s.view.groups))),
    _m("groupscope_state_bytes", "gauge", "monitor", ("cluster",),
       "Size of the job's serialized group state (all shards, as last written to the state store): it should level "
       "off with the number of group-partitions, not grow with time.",
       _monitor(lambda s: sum(p.state_bytes for p in s.health.offsets_partitions)
                if s.health.offsets_partitions else None)),
)
