"""The prometheus_client custom collector: fresh metric families from each cluster's latest state on every scrape.

Mirrors prometheus/client_python's custom-collector pattern (docs/design-notes.md#metrics-lifecycle): the collector
keeps nothing itself, so a group or offset that is gone from the state is gone from ``/metrics`` (and Prometheus
marks its series stale) without any bookkeeping of "series to delete". What is exported, and from which figure,
is the catalogue's (``metric_catalogue.METRICS``); this module only walks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from streaming.sinks.compat_catalogue import exported
from streaming.sinks.metric_catalogue import MetricSpec, Scrape
from streaming.sinks.state_store import MetricsState

__all__ = ["GroupscopeCollector", "KafkaUp"]


class KafkaUp:
    """A cluster's Kafka as the heartbeat emitter sees it: whether its last attempt got through (None: cannot
    tell) and the seconds since it last did (None: not yet, or no emitter)."""

    def __init__(self, up: Callable[[], bool | None] | None = None,
                 silence: Callable[[], float | None] | None = None) -> None:
        self.up = up or (lambda: None)
        self.silence = silence or (lambda: None)


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("groupscope")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def _family(spec: MetricSpec) -> Metric:
    cls = CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily
    return cls(spec.family_name, spec.help, labels=list(spec.labels))


class GroupscopeCollector:
    """Serves every cluster of a deployment from one registry (one registry cannot hold two collectors of the same
    families); their series differ by the ``cluster`` label.

    ``clock`` (Unix seconds) is injected so ages are testable; the collector holds no other state. ``compat``: the
    compatibility flavours served beside groupscope's own series (``compat_catalogue.py``).

    Raises:
        ValueError: an unknown compatibility flavour.
    """

    def __init__(self, state: MetricsState, *, cluster: str, partition_metrics: bool = False,
                 clock: Callable[[], float] = time.time, kafka_up: Callable[[], bool | None] | KafkaUp | None = None,
                 compat: Iterable[str] = ()) -> None:
        self.partition_metrics = partition_metrics
        self.metrics = exported(compat)
        self.clock = clock
        self.version = _version()
        self.clusters: dict[str, tuple[MetricsState, KafkaUp]] = {}
        self.add_cluster(cluster, state, kafka_up)

    def add_cluster(self, cluster: str, state: MetricsState,
                    kafka_up: Callable[[], bool | None] | KafkaUp | None = None) -> None:
        """Serves one more cluster's state, its series labelled ``cluster``."""
        if not cluster:
            raise ValueError("cluster must be a non-empty label value")
        if cluster in self.clusters:
            raise ValueError(f"cluster {cluster!r} is served already")
        self.clusters[cluster] = (state, kafka_up if isinstance(kafka_up, KafkaUp) else KafkaUp(kafka_up))

    @property
    def state(self) -> MetricsState:
        """The first cluster's state (the only one of a single-cluster job)."""
        return next(iter(self.clusters.values()))[0]

    @property
    def cluster(self) -> str:
        return next(iter(self.clusters))

    def specs(self) -> list[MetricSpec]:
        """The metrics this collector exports, in exposition order."""
        return [s for s in self.metrics if s.scope != "partition" or self.partition_metrics]

    def scrapes(self) -> list[Scrape]:
        """What one scrape reads of each cluster, all at one clock reading."""
        now = self.clock()
        return [Scrape(cluster, state.view(), now, self.version, kafka.up(), kafka.silence())
                for cluster, (state, kafka) in self.clusters.items()]

    def describe(self) -> Iterator[Metric]:
        """The families without samples, so registering never runs a full collect."""
        for spec in self.specs():
            yield _family(spec)

    def collect(self) -> Iterator[Metric]:
        specs = self.specs()
        families = [_family(s) for s in specs]
        for scrape in self.scrapes():
            for spec, family in zip(specs, families):
                for labels, value in spec.samples(scrape):
                    if value is not None:
                        family.add_metric(list(labels), float(value))
        yield from families
