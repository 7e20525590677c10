"""Feeds each micro-batch's results to the Prometheus endpoint (the driver-side half of the metrics sink)."""

from __future__ import annotations

import time
from typing import Callable

from .batch_sink import BatchResult, table_rows
from .config import Settings
from .sinks.prometheus import MetricsServer, MetricsState, MonitorHealth

__all__ = ["MetricsFeed"]


class MetricsFeed:
    def __init__(self, settings: Settings, status, emitter: Callable[[], object] | None = None) -> None:
        m = settings.metrics
        self.status = status
        self.emitter = emitter
        self.health = MonitorHealth()
        self.state = MetricsState(keep_partitions=m.partition_metrics)
        self.server = MetricsServer(self.state, cluster=settings.cluster, host=m.host, port=m.port,
                                    partition_metrics=m.partition_metrics)

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()

    def apply(self, result: BatchResult) -> None:
        self.health = self.health.after_batch(
            result.health,
            batch_seconds=self.status.batch_duration_s or result.seconds,
            now=time.time(),
            input_records_per_second=self.status.input_rows_per_second,
            query_restarts=self.status.restarts,
        )
        self.state.apply_batch(table_rows(result, "groups"), table_rows(result, "lag"),
                               table_rows(result, "group_events"), self.health, batch_id=result.batch_id)
