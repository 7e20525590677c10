"""The metrics endpoint: ``/metrics`` (an explicit registry, no global ``REGISTRY``), ``/ready`` and ``/healthz``.

One server serves every cluster of a deployment (:meth:`MetricsServer.add_cluster`). What ``/ready`` answers is the
:class:`~streaming.sinks.monitor_health.ReadinessPolicy`'s; what ``/metrics`` serves is the collector's; this
module holds the per-cluster wiring and the HTTP paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import choose_encoder, gzip_accepted

from streaming.sinks.collector import GroupscopeCollector, KafkaUp
from streaming.sinks.exposition import Format
from streaming.sinks.http_server import BackgroundHttpServer
from streaming.sinks.metrics_page import MetricsPage, page_format
from streaming.sinks.monitor_health import ReadinessPolicy
from streaming.sinks.state_store import MetricsState

__all__ = ["MetricsServer"]


class MetricsServer(BackgroundHttpServer):
    """Serves ``/metrics`` (an explicit registry), ``/ready`` (200 once caught up, else 503) and ``/healthz``.

    Their series share the families and differ by the ``cluster`` label. ``/ready`` is 200 when every cluster is
    ready and otherwise names each one that is not and why; ``/ready?cluster=NAME`` answers for one cluster (404 for
    a name it does not serve).

    Constructing binds nothing; :meth:`start` binds (``port=0`` picks a free port, see :attr:`port`) and serves
    from a daemon thread; :meth:`stop` shuts the loop down and closes the socket.
    """

    thread_name = "groupscope-metrics"

    def __init__(self, state: MetricsState, *, cluster: str, host: str = "0.0.0.0", port: int = 9308,
                 partition_metrics: bool = False, process_metrics: bool = True,
                 clock: Callable[[], float] = time.time, kafka_up: Callable[[], bool | None] | None = None,
                 max_batch_age_s: float | None = None, max_heartbeat_age_s: float | None = None,
                 heartbeat_problem: Callable[[], str | None] | None = None,
                 kafka_silence: Callable[[], float | None] | None = None,
                 max_kafka_silence_s: float | None = None, compat: Sequence[str] = ()) -> None:
        """The limits are the :class:`ReadinessPolicy`'s. ``heartbeat_problem``: why no heartbeat can be emitted
        though Kafka answers (its topic cannot be created), added to a not-ready reason. ``kafka_silence``: seconds
        since the heartbeat emitter last reached Kafka (``groupscope_kafka_unreachable_seconds``). ``compat``: the
        compatibility flavours (``metrics.compat``) served beside groupscope's own series."""
        super().__init__(host=host, port=port)
        self.policy = ReadinessPolicy(max_batch_age_s, max_heartbeat_age_s, max_kafka_silence_s)
        self.clock = clock
        self._silences: dict[str, Callable[[], float | None]] = {}
        self._heartbeat_problems: dict[str, Callable[[], str | None]] = {}
        self._wire(cluster, kafka_silence, heartbeat_problem)
        self.registry = CollectorRegistry()
        self.collector = GroupscopeCollector(state, cluster=cluster, partition_metrics=partition_metrics,
                                             clock=clock, kafka_up=self._kafka(cluster, kafka_up), compat=compat)
        self.registry.register(self.collector)
        self._process: CollectorRegistry | None = None
        if process_metrics:
            from prometheus_client import ProcessCollector

            process = ProcessCollector(registry=None)  # process_* of the driver (memory, CPU, open files)
            self.registry.register(process)
            self._process = CollectorRegistry()
            self._process.register(process)
        # What a scrape with a name filter (``name[]``) or a format the page does not write gets.
        self._metrics_app = make_wsgi_app(self.registry)
        self._pages: dict[Format, MetricsPage] = {}

    @property
    def state(self) -> MetricsState:
        """The first cluster's state (the only one of a single-cluster job)."""
        return self.collector.state

    def add_cluster(self, cluster: str, state: MetricsState,
                    kafka_up: Callable[[], bool | None] | None = None,
                    heartbeat_problem: Callable[[], str | None] | None = None,
                    kafka_silence: Callable[[], float | None] | None = None) -> None:
        """Serves one more cluster (before or after :meth:`start`)."""
        self._wire(cluster, kafka_silence, heartbeat_problem)
        self.collector.add_cluster(cluster, state, self._kafka(cluster, kafka_up))

    def _wire(self, cluster: str, silence: Callable[[], float | None] | None,
              heartbeat_problem: Callable[[], str | None] | None) -> None:
        if silence is not None:
            self._silences[cluster] = silence
        if heartbeat_problem is not None:
            self._heartbeat_problems[cluster] = heartbeat_problem

    def _silence(self, cluster: str) -> float | None:
        of = self._silences.get(cluster)
        return None if of is None else of()

    def _kafka(self, cluster: str, kafka_up: Callable[[], bool | None] | None) -> KafkaUp:
        """What the collector reads of the cluster's Kafka: nothing without an emitter, else the policy's verdict
        on its last attempt (down once silent too long: an attempt against a frozen broker hangs instead of
        failing, and the gauge must not wait for it) and the silence itself."""
        if kafka_up is None:
            return KafkaUp()
        return KafkaUp(lambda: self.policy.kafka_up(kafka_up(), self._silence(cluster)),
                       lambda: self._silence(cluster))

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
            return self._cluster_not_ready(cluster, clusters[cluster][0])
        reasons = {name: self._cluster_not_ready(name, state) for name, (state, _) in clusters.items()}
        if len(reasons) == 1:
            return next(iter(reasons.values()))
        waiting = [f"cluster {name}: {reason}" for name, reason in reasons.items() if reason is not None]
        return "; ".join(waiting) or None

    def _cluster_not_ready(self, cluster: str, state: MetricsState) -> str | None:
        reason = self.policy.not_ready(state.health, self.clock(), self._silence(cluster))
        problem_of = self._heartbeat_problems.get(cluster)
        problem = problem_of() if reason is not None and problem_of is not None else None
        return f"{reason}; {problem}" if problem else reason

    # ---- WSGI -------------------------------------------------------------------------------------------------

    def _app(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return self._metrics(environ, start_response)
        if path == "/ready":
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

    def _metrics(self, environ: dict[str, Any], start_response: Callable) -> list[bytes]:
        """The page, in the format the scraper asked for, gzipped if it accepts that (as prometheus_client's own
        application negotiates both); a name filter or a format the page does not write goes to the library."""
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT") or "")
        fmt = page_format(encoder)
        if fmt is None or environ.get("REQUEST_METHOD", "GET") != "GET" or "name[]" in parse_qs(
                environ.get("QUERY_STRING") or ""):
            return self._metrics_app(environ, start_response)
        page = self._page(fmt).render(gzip=gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING") or ""))
        headers = [("Content-Type", content_type)]
        if page.gzipped:
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return list(page.parts)

    def _page(self, fmt: Format) -> MetricsPage:
        if fmt not in self._pages:
            self._pages[fmt] = MetricsPage(self.collector, fmt, self._process)
        return self._pages[fmt]


def _text(start_response: Callable, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]
