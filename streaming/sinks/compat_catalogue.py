"""Opt-in compatibility flavours: the metric names, labels and meanings of Kafka Lag Exporter and kafka_exporter,
served beside groupscope's own series (``metrics.compat``), so dashboards and alert rules written for those tools
work against groupscope unchanged.

Each flavour is a tuple of :class:`~streaming.sinks.metric_catalogue.MetricSpec`, read from the same
:class:`~streaming.sinks.metric_catalogue.Scrape` as :data:`METRICS`, under the same cardinality control: per-partition
figures (scope ``partition``) only with ``metrics.partition_metrics``.

Labels. Every compat series has the flavour's labels and, in addition, groupscope's ``cluster`` (the same value as
Kafka Lag Exporter's ``cluster_name``; kafka_exporter has no cluster label at all, one exporter serving one cluster),
so several clusters in one job never make two series with the same labels, and groupscope's own ``on (cluster)``
matching keeps working. Queries select, group and match on the flavour's labels, which an added label leaves alone.

Names both use. Some of groupscope's own names are also a flavour's name with other labels
(``kafka_consumergroup_group_max_lag`` has ``cluster, group`` here and ``cluster_name, group, is_simple_consumer`` in
Kafka Lag Exporter). Two families of one name cannot be served, and two series of the same figure under one name
would be counted twice by every ``sum``. So with the flavour on, its spec replaces groupscope's: one series per
figure carrying both label sets (groupscope's labels first, then the flavour's). Its value is the same figure, so
groupscope's dashboards and alert rules and the flavour's read the one series. :func:`exported` builds the list and
refuses a flavour spec that would drop a label groupscope's series of that name has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from streaming.schema.read_model import GroupView, MemberView, PartitionView
from streaming.sinks.metric_catalogue import METRICS, MetricSpec, Scope, Scrape, Value

__all__ = ["FLAVOURS", "COMPAT", "exported"]

Row = Callable[[Scrape], Iterable[tuple[Sequence[str], Value]]]


def _spec(name: str, scope: Scope, labels: tuple[str, ...], help_text: str, samples: Row) -> MetricSpec:
    return MetricSpec(name, "gauge", scope, labels, help_text, samples)


def _partitions(s: Scrape) -> Iterable[tuple[str, GroupView, str, int, PartitionView]]:
    for gid, g in s.groups:
        for (topic, n), p in sorted(s.view.partitions.get(gid, {}).items()):
            yield gid, g, topic, n, p


def _owner(g: GroupView, p: PartitionView) -> MemberView | None:
    return next((m for m in g.members if m.member_id == p.owner), None) if p.owner else None


def _topic_partitions(s: Scrape, value: Callable[[PartitionView], int | None]) -> dict[tuple[str, int], int]:
    """Per topic-partition, the largest ``value`` over the groups that commit to it (the newest end or start)."""
    out: dict[tuple[str, int], int] = {}
    for _, _, topic, n, p in _partitions(s):
        v = value(p)
        if v is not None and v > out.get((topic, n), -1):
            out[(topic, n)] = v
    return out


# ---- Kafka Lag Exporter --------------------------------------------------------------------------------------

def _kle_partition(value: Callable[[PartitionView], Value]) -> Row:
    """``cluster, cluster_name, group, topic, partition, member_host, consumer_id, client_id``: the member labels are
    the owner's host, member id and client id; ``unknown``, as Kafka Lag Exporter writes for a group without members,
    when no member holds the partition."""
    def rows(s: Scrape):
        for gid, g, topic, n, p in _partitions(s):
            m = _owner(g, p)
            member = (m.host, m.member_id, m.client_id) if m else _NO_MEMBER
            yield [s.cluster, s.cluster, gid, topic, str(n), *member], value(p)
    return rows


_NO_MEMBER = ("unknown", "unknown", "unknown")


def _kle_group(value: Callable[[GroupView], Value], simple: bool = True) -> Row:
    """``cluster, group`` (groupscope's), then ``cluster_name`` and, where the flavour has it, ``is_simple_consumer``."""
    def rows(s: Scrape):
        for gid, g in s.groups:
            extra = [s.cluster, "true" if g.is_simple else "false"] if simple else [s.cluster]
            yield ([s.cluster, gid, *extra], value(g))
    return rows


def _kle_topic_sum(s: Scrape):
    return (([s.cluster, s.cluster, gid, t.topic], t.sum_lag) for gid, g in s.groups for t in g.topics)


def _kle_offsets(value: Callable[[PartitionView], int | None], both: bool) -> Row:
    def rows(s: Scrape):
        for (topic, n), v in sorted(_topic_partitions(s, value).items()):
            yield ([s.cluster, topic, str(n), s.cluster] if both else [s.cluster, s.cluster, topic, str(n)]), v
    return rows


_KLE_PARTITION = ("cluster", "cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id")

KAFKA_LAG_EXPORTER: tuple[MetricSpec, ...] = (
    _spec("kafka_consumergroup_group_offset", "partition", _KLE_PARTITION,
          "Kafka Lag Exporter: the group's committed offset of one partition.",
          _kle_partition(lambda p: p.committed_offset)),
    _spec("kafka_consumergroup_group_lag", "partition", _KLE_PARTITION,
          "Kafka Lag Exporter: offset lag of one partition (end offset - committed offset).",
          _kle_partition(lambda p: p.lag)),
    _spec("kafka_consumergroup_group_lag_seconds", "partition", _KLE_PARTITION,
          "Kafka Lag Exporter: time lag of one partition in seconds.",
          _kle_partition(lambda p: p.lag_seconds)),
    _spec("kafka_consumergroup_group_max_lag", "group", ("cluster", "group", "cluster_name", "is_simple_consumer"),
          "Largest offset lag of any partition of the group (groupscope's and Kafka Lag Exporter's labels).",
          _kle_group(lambda g: g.max_lag)),
    _spec("kafka_consumergroup_group_max_lag_seconds", "group",
          ("cluster", "group", "cluster_name", "is_simple_consumer"),
          "Largest time lag of any partition of the group in seconds (groupscope's and Kafka Lag Exporter's labels).",
          _kle_group(lambda g: g.max_lag_seconds)),
    _spec("kafka_consumergroup_group_sum_lag", "group", ("cluster", "group", "cluster_name"),
          "Offset lag summed over the group's partitions (groupscope's and Kafka Lag Exporter's labels).",
          _kle_group(lambda g: g.sum_lag, simple=False)),
    _spec("kafka_consumergroup_group_topic_sum_lag", "group", ("cluster", "cluster_name", "group", "topic"),
          "Kafka Lag Exporter: offset lag summed over the group's partitions of one topic.",
          _kle_topic_sum),
    _spec("kafka_partition_latest_offset", "partition", ("cluster", "topic", "partition", "cluster_name"),
          "End offset of a partition some group commits to (groupscope's and Kafka Lag Exporter's labels).",
          _kle_offsets(lambda p: p.log_end_offset, both=True)),
    _spec("kafka_partition_earliest_offset", "partition", ("cluster", "cluster_name", "topic", "partition"),
          "Kafka Lag Exporter: log start offset of a partition some group commits to.",
          _kle_offsets(lambda p: p.log_start_offset, both=False)),
)


# ---- kafka_exporter ------------------------------------------------------------------------------------------

def _ke_partition(value: Callable[[PartitionView], Value]) -> Row:
    """``cluster, group, topic, partition`` (groupscope's), then ``consumergroup``."""
    return lambda s: (([s.cluster, gid, topic, str(n), gid], value(p)) for gid, _, topic, n, p in _partitions(s))


def _ke_offset_sum(s: Scrape):
    sums: dict[tuple[str, str], int] = {}
    for gid, _, topic, _, p in _partitions(s):
        if p.committed_offset is not None:
            sums[(gid, topic)] = sums.get((gid, topic), 0) + p.committed_offset
    return (([s.cluster, gid, topic], v) for (gid, topic), v in sorted(sums.items()))


def _ke_offsets(value: Callable[[PartitionView], int | None]) -> Row:
    return lambda s: (([s.cluster, topic, str(n)], v) for (topic, n), v in sorted(_topic_partitions(s, value).items()))


KAFKA_EXPORTER: tuple[MetricSpec, ...] = (
    _spec("kafka_consumergroup_current_offset", "partition", ("cluster", "group", "topic", "partition",
                                                              "consumergroup"),
          "Committed offset of one partition (groupscope's and kafka_exporter's labels).",
          _ke_partition(lambda p: p.committed_offset)),
    _spec("kafka_consumergroup_current_offset_sum", "partition", ("cluster", "consumergroup", "topic"),
          "kafka_exporter: the group's committed offsets summed over the partitions of one topic.",
          _ke_offset_sum),
    _spec("kafka_consumergroup_lag", "partition", ("cluster", "group", "topic", "partition", "consumergroup"),
          "Offset lag of one partition (groupscope's and kafka_exporter's labels).",
          _ke_partition(lambda p: p.lag)),
    _spec("kafka_consumergroup_lag_sum", "group", ("cluster", "consumergroup", "topic"),
          "kafka_exporter: offset lag summed over the group's partitions of one topic.",
          lambda s: (([s.cluster, gid, t.topic], t.sum_lag) for gid, g in s.groups for t in g.topics)),
    _spec("kafka_consumergroup_members", "group", ("cluster", "group", "consumergroup"),
          "Members of the group (groupscope's and kafka_exporter's labels).",
          lambda s: (([s.cluster, gid, gid], g.member_count) for gid, g in s.groups)),
    _spec("kafka_topic_partition_current_offset", "partition", ("cluster", "topic", "partition"),
          "kafka_exporter: end offset of a partition some group commits to.",
          _ke_offsets(lambda p: p.log_end_offset)),
    _spec("kafka_topic_partition_oldest_offset", "partition", ("cluster", "topic", "partition"),
          "kafka_exporter: log start offset of a partition some group commits to.",
          _ke_offsets(lambda p: p.log_start_offset)),
)

COMPAT: dict[str, tuple[MetricSpec, ...]] = {"kafka_lag_exporter": KAFKA_LAG_EXPORTER, "kafka_exporter": KAFKA_EXPORTER}
FLAVOURS: tuple[str, ...] = tuple(COMPAT)


def exported(flavours: Iterable[str] = ()) -> tuple[MetricSpec, ...]:
    """:data:`METRICS` with the flavours' metrics: groupscope's own first, a name both use served once, by the
    flavour's spec (which carries groupscope's labels too), the flavour-only metrics after.

    Raises:
        ValueError: an unknown flavour, or a flavour spec of a groupscope name that lacks one of its labels (it would
            break groupscope's own dashboards and alert rules).
    """
    chosen: dict[str, MetricSpec] = {}
    for flavour in dict.fromkeys(flavours):
        if flavour not in COMPAT:
            raise ValueError(f"unknown metrics.compat flavour {flavour!r}; known: {', '.join(FLAVOURS)}")
        for spec in COMPAT[flavour]:
            if spec.name in chosen:
                raise ValueError(f"metrics.compat: {spec.name} is defined by two flavours")
            chosen[spec.name] = spec
    out = []
    for own in METRICS:
        spec = chosen.pop(own.name, None)
        if spec is not None and (spec.kind != own.kind or spec.scope != own.scope
                                 or spec.labels[: len(own.labels)] != own.labels):
            raise ValueError(f"metrics.compat: {own.name} would lose groupscope's labels {own.labels} or change type")
        out.append(spec or own)
    return (*out, *chosen.values())
