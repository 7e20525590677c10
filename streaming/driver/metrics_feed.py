"""Feeds each micro-batch's results to the Prometheus endpoint (the driver-side half of the metrics sink), and
serves the same state over the HTTP API when ``api.enabled`` (docs/http-api.md).

One endpoint serves every cluster of a deployment: each cluster has its own :class:`ClusterFeed` (state and
health, fed by that cluster's query), and the endpoint's series and API responses are labelled with the cluster."""

from __future__ import annotations

import time
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from streaming.api import ApiServer, ClusterInfo, ClusterSource
from streaming.job.batch_sink import BatchResult, partition_rows_for_metrics
from streaming.config import Settings
from streaming.schema.read_model import BatchView
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.monitor_health import MonitorHealth
from streaming.sinks.state_store import STORE_EVENT_KINDS, MetricsState

__all__ = ["MetricsFeed", "ClusterFeed", "read_view"]


class ClusterFeed:
    """One cluster's state as the endpoint shows it, updated after each of that cluster's micro-batches."""

    def __init__(self, settings: Settings, status, emitter: Callable[[], object] | None = None) -> None:
        self.status = status
        self.emitter = emitter
        self.health = MonitorHealth()
        self.state = MetricsState(keep_partitions=settings.partition_rows_on_driver)
        self._last_batch_at: float | None = None

    def kafka_up(self) -> bool | None:
        """Whether the heartbeat emitter's last attempt reached Kafka; None before it tried or without one."""
        emitter = self.emitter() if self.emitter is not None else None
        if emitter is None:
            return None
        status = emitter.status
        return None if status.ticks == 0 and status.failures == 0 else status.kafka_up

    def kafka_silence(self) -> float | None:
        """Seconds since the heartbeat emitter last reached Kafka (None before its first heartbeat or without one):
        how stale the view is while Kafka cannot be reached, even while an attempt still hangs."""
        emitter = self.emitter() if self.emitter is not None else None
        if emitter is None or emitter.status.last_tick_ms < 0:
            return None
        return max(0.0, emitter.clock() - emitter.status.last_tick_ms / 1000)

    def heartbeat_problem(self) -> str | None:
        """Why the heartbeat emitter cannot emit although Kafka answers (its topic missing), for ``/ready``."""
        emitter = self.emitter() if self.emitter is not None else None
        return getattr(emitter, "topic_problem", None)

    def apply(self, result: BatchResult) -> None:
        now = time.time()
        batch_seconds = self.status.batch_duration_s or result.seconds
        # Records of __consumer_offsets over the time since the previous batch. Spark's own row rates count the
        # source's packed chunks, not records, so they are not used here.
        records = sum(h.records for h in result.health)
        elapsed = now - self._last_batch_at if self._last_batch_at is not None else batch_seconds
        self._last_batch_at = now
        self.health = self.health.after_batch(
            result.health,
            batch_seconds=batch_seconds,
            now=now,
            input_records_per_second=records / elapsed if elapsed > 0 else 0.0,
            query_restarts=self.status.restarts,
        )
        self.state.apply(read_view(result, keep_partitions=self.state.keep_partitions), self.health,
                         batch_id=result.batch_id)


def read_view(result: BatchResult, *, keep_partitions: bool = True) -> BatchView:
    """The batch as the driver's read model, built once here for every reader (``/metrics``, the API, the live
    view). Partition rows are turned into Python values only when the driver keeps them."""
    groups = result.tables.get("groups")
    return BatchView.of_rows(() if groups is None else groups,
                             partition_rows_for_metrics(result) if keep_partitions else None, _metric_events(result))


def _metric_events(result: BatchResult) -> list[dict]:
    """The batch's events of the kinds the read model acts on, as rows (the others are not converted at all)."""
    events = result.tables.get("group_events")
    if events is None:
        return []
    return events.filter(pc.is_in(events.column("kind"), pa.array(STORE_EVENT_KINDS))).to_pylist()


class MetricsFeed:
    """The ``/metrics`` endpoint (and the API) of a job, with the first cluster's feed; :meth:`add_cluster` adds
    the others of a deployment that watches several. ``state``, ``health`` and ``apply`` are the first cluster's,
    which is all a single-cluster job has."""

    def __init__(self, settings: Settings, status, emitter: Callable[[], object] | None = None) -> None:
        m = settings.metrics
        first = ClusterFeed(settings, status, emitter)
        self.clusters: dict[str, ClusterFeed] = {settings.cluster: first}
        self.server = MetricsServer(first.state, cluster=settings.cluster, host=m.host, port=m.port,
                                    partition_metrics=m.partition_metrics, kafka_up=first.kafka_up,
                                    heartbeat_problem=first.heartbeat_problem,
                                    max_batch_age_s=m.ready_max_batch_age_seconds,
                                    max_heartbeat_age_s=m.ready_max_heartbeat_age_seconds,
                                    kafka_silence=first.kafka_silence,
                                    max_kafka_silence_s=m.ready_max_kafka_silence_seconds, compat=m.compat)
        self.api = ApiServer(self._api_sources, host=settings.api.host, port=settings.api.port) \
            if settings.api.enabled else None
        self._sources: dict[str, ClusterSource] = {}
        self._add_source(settings, first)

    def add_cluster(self, settings: Settings, status, emitter: Callable[[], object] | None = None) -> ClusterFeed:
        """Serves one more cluster: its series carry ``cluster="<settings.cluster>"``, and the API lists it."""
        if settings.cluster in self.clusters:
            raise ValueError(f"cluster {settings.cluster!r} is served already")
        feed = ClusterFeed(settings, status, emitter)
        self.clusters[settings.cluster] = feed
        self.server.add_cluster(settings.cluster, feed.state, feed.kafka_up, feed.heartbeat_problem,
                                feed.kafka_silence)
        self._add_source(settings, feed)
        return feed

    def _add_source(self, settings: Settings, feed: ClusterFeed) -> None:
        if self.api is not None:
            self._sources = {**self._sources, settings.cluster: _api_source(settings, feed.state)}

    def _api_sources(self) -> dict[str, ClusterSource]:
        return self._sources

    @property
    def _first(self) -> ClusterFeed:
        return next(iter(self.clusters.values()))

    @property
    def state(self) -> MetricsState:
        return self._first.state

    @property
    def health(self) -> MonitorHealth:
        return self._first.health

    def apply(self, result: BatchResult) -> None:
        self._first.apply(result)

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> None:
        self.server.start()
        if self.api is not None:
            try:
                self.api.start()
            except BaseException:
                self.server.stop()
                raise

    def stop(self) -> None:
        if self.api is not None:
            self.api.stop()
        self.server.stop()


def _api_source(settings: Settings, state: MetricsState) -> ClusterSource:
    """What the API shows of one cluster, named as in the metrics' ``cluster`` label."""
    k = settings.kafka
    info = ClusterInfo(servers=tuple(s.strip() for s in k["bootstrap.servers"].split(",") if s.strip()),
                       client_id=k.get("client.id", "groupscope"), refresh_seconds=settings.heartbeat.interval_seconds,
                       security_protocol=k.get("security.protocol", "PLAINTEXT"),
                       sasl_mechanism=k.get("sasl.mechanism", k.get("sasl.mechanisms", "")),
                       sasl_username=k.get("sasl.username", ""))
    return ClusterSource.of_state(settings.cluster, state, info)
