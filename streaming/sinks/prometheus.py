"""The Prometheus sink, by its parts: the latest group snapshots as ``kafka_consumergroup_*`` series, plus the
monitor's own health.

The Spark job's ``foreachBatch`` hands every micro-batch to a :class:`MetricsState` on the driver; each scrape
builds fresh families from it. The parts, one job each:

* ``metric_catalogue.py``: :data:`METRICS`, every exported metric once (name, type, labels, help, and the figure
  it reads); dashboards, alert rules and docs/metrics.md are checked against it.
* ``monitor_health.py``: :class:`MonitorHealth` (the job's own figures after each batch) and the ``/ready`` policy.
* ``state_store.py``: :class:`MetricsState`, the driver's store of the read model (``schema/read_model.py``) that
  ``/metrics``, the HTTP API and the demo's live view read through :class:`StateView`.
* ``collector.py``: :class:`GroupscopeCollector`, the prometheus_client collector that walks the catalogue.
* ``metrics_server.py``: :class:`MetricsServer`, ``/metrics``, ``/ready`` and ``/healthz`` over ``http_server.py``.

This module names them together, for the job and for what checks the catalogue.
"""

from streaming.sinks.collector import GroupscopeCollector
from streaming.sinks.metric_catalogue import METRICS, MetricSpec
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.monitor_health import MonitorHealth, OffsetsPartitionHealth, ReadinessPolicy, StepHealthLike
from streaming.sinks.state_store import METRIC_EVENT_KINDS, MetricsState, StateView

__all__ = [
    "MetricSpec",
    "METRICS",
    "OffsetsPartitionHealth",
    "MonitorHealth",
    "ReadinessPolicy",
    "StepHealthLike",
    "StateView",
    "MetricsState",
    "METRIC_EVENT_KINDS",
    "GroupscopeCollector",
    "MetricsServer",
]
