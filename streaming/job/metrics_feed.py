"""Feeds each micro-batch's results to the Prometheus endpoint (the driver-side half of the metrics sink), and
serves the same state over the HTTP API when ``api.enabled`` (docs/http-api.md)."""

from __future__ import annotations

import time
from typing import Callable

from streaming.api import ApiServer, ClusterInfo, ClusterSource
from streaming.job.batch_sink import BatchResult, partition_rows_for_metrics, table_rows
from streaming.config import Settings
from streaming.sinks.prometheus import MetricsServer, MetricsState, MonitorHealth

__all__ = ["MetricsFeed"]


class MetricsFeed:
    def __init__(self, settings: Settings, status, emitter: Callable[[], object] | None = None) -> None:
        m = settings.metrics
        self.status = status
        self.emitter = emitter
        self.health = MonitorHealth()
        self.state = MetricsState(keep_partitions=settings.partition_rows_on_driver)
        self._last_batch_at: float | None = None
        self.server = MetricsServer(self.state, cluster=settings.cluster, host=m.host, port=m.port,
                                    partition_metrics=m.partition_metrics, kafka_up=self._kafka_up,
                                    max_batch_age_s=m.ready_max_batch_age_seconds,
                                    max_heartbeat_age_s=m.ready_max_heartbeat_age_seconds)
        self.api = _api_server(settings, self.state) if settings.api.enabled else None

    def _kafka_up(self) -> bool | None:
        """Whether the heartbeat emitter's last attempt reached Kafka; None before it tried or without one."""
        emitter = self.emitter() if self.emitter is not None else None
        if emitter is None:
            return None
        status = emitter.status
        return None if status.ticks == 0 and status.failures == 0 else status.kafka_up

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
        self.state.apply_batch(table_rows(result, "groups"), partition_rows_for_metrics(result),
                               table_rows(result, "group_events"), self.health, batch_id=result.batch_id)


def _api_server(settings: Settings, state: MetricsState) -> ApiServer:
    """The HTTP API over this job's state: one cluster, named as in the metrics' ``cluster`` label."""
    k = settings.kafka
    info = ClusterInfo(servers=tuple(s.strip() for s in k["bootstrap.servers"].split(",") if s.strip()),
                       client_id=k.get("client.id", "groupscope"), refresh_seconds=settings.heartbeat.interval_seconds,
                       security_protocol=k.get("security.protocol", "PLAINTEXT"),
                       sasl_mechanism=k.get("sasl.mechanism", k.get("sasl.mechanisms", "")),
                       sasl_username=k.get("sasl.username", ""))
    source = ClusterSource.of_state(settings.cluster, state, info)
    return ApiServer({settings.cluster: source}, host=settings.api.host, port=settings.api.port)
