"""``groupscope run``: the long-running job, its services started in order and stopped in reverse.

Order (services before their clients, as in Burrow's coordinator): metrics endpoint, Delta sink, heartbeat
emitter, Spark session, streaming query. A failed start unwinds what already started. While running, a supervisor
loop watches the query: a query that dies (for example after a broker outage longer than the read timeout) is
restarted from its checkpoint with a growing back-off, and the failure is counted and reported. On SIGTERM/SIGINT
the loop waits for the micro-batch in flight to finish before stopping the query, so no batch is left half
written (and Delta's per-batch app transactions make even a hard kill safe).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from .batch_sink import BatchResult, BatchSink
from .config import Settings

__all__ = ["GroupscopeJob", "JobStatus"]

log = logging.getLogger("groupscope.run")


@dataclass
class JobStatus:
    batches: int = 0
    restarts: int = 0
    last_error: str | None = None
    last_batch: BatchResult | None = None
    batch_duration_s: float = 0.0
    started_at: float = field(default_factory=time.time)


class GroupscopeJob:
    def __init__(self, settings: Settings, *, on_batch: Callable[[BatchResult], None] | None = None,
                 install_signal_handlers: bool = True) -> None:
        self.settings = settings
        self.on_batch = on_batch
        self.status = JobStatus()
        self.stop_requested = threading.Event()
        self.install_signal_handlers = install_signal_handlers
        self._started: list[tuple[str, Callable[[], None]]] = []
        self.spark = None
        self.query = None
        self.metrics = None
        self.emitter = None
        self.sink: BatchSink | None = None
        self.plan = None

    # ---- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._start_services()
        except BaseException:
            self.stop()
            raise

    def _start_services(self) -> None:
        from .kafka.client import KafkaAccess, KafkaUnavailable
        from .sinks.delta import DeltaSink
        from .spark.job import JobPlan

        s = self.settings
        metrics_callback = None
        if s.metrics.enabled:
            from .metrics_feed import MetricsFeed

            self.metrics = MetricsFeed(s, self.status, emitter=lambda: self.emitter)
            self.metrics.start()
            self._started.append(("metrics", self.metrics.stop))
            metrics_callback = self.metrics.apply
        delta = DeltaSink(s.delta.path, app_id=f"groupscope-{s.cluster}", storage_options=s.delta.storage_options) \
            if s.delta.enabled and s.delta.writer == "deltalake" else None
        self.sink = BatchSink(delta=delta, metrics=metrics_callback, on_batch=self._after_batch)

        access = KafkaAccess(s.kafka)
        deadline = time.monotonic() + 60
        while True:
            try:
                partitions = access.partitions(s.source.offsets_topic)
                break
            except KafkaUnavailable as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"cannot reach Kafka at {s.kafka['bootstrap.servers']}: {exc}") from None
                time.sleep(2)
        if not partitions:
            raise RuntimeError(f"topic {s.source.offsets_topic} not found at {s.kafka['bootstrap.servers']}")
        self.plan = JobPlan(len(partitions), s.heartbeat.topic, s.source.offsets_topic)

        if s.heartbeat.enabled:
            from .kafka.heartbeat import HeartbeatEmitter

            hb = s.heartbeat
            self.emitter = HeartbeatEmitter(s.kafka, topic=hb.topic, interval_s=hb.interval_seconds,
                                            include=hb.include_topics, exclude=hb.exclude_topics,
                                            offsets_topic=s.source.offsets_topic, retention_ms=hb.retention_ms,
                                            chunk_partitions=hb.chunk_partitions)
            self.emitter.tick()  # the first heartbeat before the first batch: no blind warm-up window
            self.emitter.start()
            self._started.append(("heartbeat", self.emitter.stop))

        from .spark.session import build_session

        sp = s.spark
        self.spark = build_session(master=sp.master, app_name=sp.app_name, shuffle_partitions=sp.shuffle_partitions,
                                   driver_memory=sp.driver_memory, conf=sp.conf)
        self._started.append(("spark", self.spark.stop))
        if s.delta.enabled and s.delta.writer == "delta-spark":
            from .sinks.delta_spark import DeltaSparkSink, delta_spark_available

            if not delta_spark_available(self.spark):
                raise RuntimeError("delta.writer is delta-spark but Delta's jars are not on Spark's classpath "
                                   "(add io.delta:delta-spark to spark.jars.packages, or use delta.writer: deltalake)")
            self.sink.delta = DeltaSparkSink(self.spark, s.delta.path, app_id=f"groupscope-{s.cluster}")
        self._start_query()
        if self.install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop_requested.set())

    def _start_query(self) -> None:
        from .spark.job import start_query

        self.query = start_query(self.spark, self.settings, self.plan, self.sink)

    def _after_batch(self, result: BatchResult) -> None:
        self.status.batches += 1
        self.status.last_batch = result
        if self.on_batch is not None:
            self.on_batch(result)

    def run(self, *, duration_s: float | None = None, poll_s: float = 0.5) -> None:
        """Supervises the query until stopped (signal, :meth:`request_stop`, or ``duration_s``)."""
        deadline = None if duration_s is None else time.monotonic() + duration_s
        backoff = 2.0
        while not self.stop_requested.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            q = self.query
            if q is not None and not q.isActive:
                exc = q.exception()
                self.status.last_error = str(exc) if exc else "query stopped"
                self.status.restarts += 1
                log.error("streaming query stopped (%s); restarting in %.0f s", self.status.last_error, backoff)
                if self.stop_requested.wait(backoff):
                    break
                backoff = min(backoff * 2, 60.0)
                try:
                    self._start_query()
                except Exception as exc:  # noqa: BLE001 - reported; the loop retries
                    self.status.last_error = f"restart failed: {exc}"
                    self.query = None
                continue
            if q is None:
                try:
                    self._start_query()
                except Exception as exc:  # noqa: BLE001
                    self.status.last_error = f"restart failed: {exc}"
                    self.stop_requested.wait(backoff)
                    backoff = min(backoff * 2, 60.0)
                continue
            progress = q.lastProgress
            if progress:
                self.status.batch_duration_s = (progress.get("durationMs", {}).get("triggerExecution") or 0) / 1000
                backoff = 2.0
            self.stop_requested.wait(poll_s)

    def request_stop(self) -> None:
        self.stop_requested.set()

    def stop(self) -> None:
        q = self.query
        if q is not None:
            try:
                # Let the batch in flight finish: no half-written batch, and a clean checkpoint.
                deadline = time.monotonic() + 60
                while q.isActive and q.status.get("isTriggerActive") and time.monotonic() < deadline:
                    time.sleep(0.1)
                q.stop()
            except Exception as exc:  # noqa: BLE001 - stopping must go on with the other services
                log.warning("stopping the query: %s", exc)
            self.query = None
        while self._started:
            name, stop = self._started.pop()
            try:
                stop()
            except Exception as exc:  # noqa: BLE001
                log.warning("stopping %s: %s", name, exc)
