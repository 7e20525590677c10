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
from pathlib import Path
from typing import Callable

from streaming.job.batch_sink import BatchResult, BatchSink
from streaming.job.progress import query_error_line
from streaming.config import Settings

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
                 install_signal_handlers: bool = True, heartbeat_clock: Callable[[], float] | None = None,
                 jvm_log: str | None = None) -> None:
        """``heartbeat_clock``: the clock heartbeats are stamped with (default: the wall clock); the demo passes
        its simulation's clock so records and heartbeats share one. ``jvm_log``: where the JVM's own output goes
        (default: this process's stderr)."""
        self.settings = settings
        self.heartbeat_clock = heartbeat_clock
        self.jvm_log = jvm_log
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
        self.maintenance = None  # DeltaMaintenance: compaction, checkpoint, vacuum in the background
        self.plan = None
        self.catch_up = None  # CatchUpWatch: "caught up after S s", once per start

    # ---- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started_at = time.monotonic()
        try:
            self._start_services()
        except BaseException:
            self.stop()
            raise

    def _start_services(self) -> None:
        from streaming.kafka.client import KafkaAccess, KafkaUnavailable
        from streaming.sinks.delta import DeltaSink
        from streaming.spark.job import JobPlan

        s = self.settings
        metrics_callback = None
        if s.metrics.enabled:
            from streaming.job.metrics_feed import MetricsFeed

            self.metrics = MetricsFeed(s, self.status, emitter=lambda: self.emitter)
            self.metrics.start()
            self._started.append(("metrics", self.metrics.stop))
            metrics_callback = self.metrics.apply
        # Said once the metrics port is taken (a port in use stays the one line of a failed start).
        log.info("starting: cluster %s, Kafka at %s, checkpoint %s, Delta tables in %s", s.cluster,
                 s.kafka.get("bootstrap.servers", "?"), s.spark.checkpoint, s.delta.path)
        delta = DeltaSink(s.delta.path, app_id=f"groupscope-{s.cluster}", storage_options=s.delta.storage_options) \
            if s.delta.enabled and s.delta.writer == "deltalake" else None
        if delta is not None:
            _refuse_tables_of_another_checkpoint(delta, s.spark.checkpoint)
        self.sink = BatchSink(delta=delta, metrics=metrics_callback, on_batch=self._after_batch)
        if delta is not None and s.delta.maintenance.enabled:
            from streaming.sinks.delta_maintenance import DeltaMaintenance

            self.maintenance = DeltaMaintenance(delta, s.delta.maintenance)
            self._started.append(("delta maintenance", self.maintenance.stop))

        access = KafkaAccess(s.kafka)
        try:
            access.wait_reachable(8.0)  # an unreachable cluster is one line within 10 s, not minutes of retries
            partitions = access.partitions(s.source.offsets_topic)
        except KafkaUnavailable as exc:
            raise RuntimeError(str(exc) if str(exc).startswith("cannot reach") else
                               f"cannot reach Kafka at {s.kafka['bootstrap.servers']}: {exc}") from None
        if not partitions:
            partitions = self._wait_for_offsets_topic(access)
        self.plan = JobPlan(len(partitions), s.heartbeat.topic, s.source.offsets_topic)
        self._log_resume(access, partitions)

        if s.heartbeat.enabled:
            from streaming.kafka.heartbeat import HeartbeatEmitter

            hb = s.heartbeat
            self.emitter = HeartbeatEmitter(s.kafka, topic=hb.topic, interval_s=hb.interval_seconds,
                                            include=hb.include_topics, exclude=hb.exclude_topics,
                                            offsets_topic=s.source.offsets_topic, retention_ms=hb.retention_ms,
                                            chunk_partitions=hb.chunk_partitions,
                                            **({"clock": self.heartbeat_clock} if self.heartbeat_clock else {}))
            self.emitter.tick()  # the first heartbeat before the first batch: no blind warm-up window
            self.emitter.start()
            self._started.append(("heartbeat", self.emitter.stop))

        from streaming.spark.session import build_session

        sp = s.spark
        self.spark = build_session(master=sp.master, app_name=sp.app_name, shuffle_partitions=sp.shuffle_partitions,
                                   driver_memory=sp.driver_memory, conf=sp.conf, jvm_log=self.jvm_log)
        self._started.append(("spark", self.spark.stop))
        if s.delta.enabled and s.delta.writer == "delta-spark":
            from streaming.sinks.delta_spark import DeltaSparkSink, delta_spark_available

            if not delta_spark_available(self.spark):
                raise RuntimeError("delta.writer is delta-spark but Delta's jars are not on Spark's classpath "
                                   "(add io.delta:delta-spark to spark.jars.packages, or use delta.writer: deltalake)")
            self.sink.delta = DeltaSparkSink(self.spark, s.delta.path, app_id=f"groupscope-{s.cluster}")
        self._start_query()
        log.info("running; metrics on %s, Delta tables in %s", f":{self.metrics.port}" if self.metrics else "(off)",
                 s.delta.path)
        if self.install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop_requested.set())

    def _start_query(self) -> None:
        from streaming.spark.job import start_query

        self.query = start_query(self.spark, self.settings, self.plan, self.sink)

    offsets_topic_poll_s: float = 2.0

    def _wait_for_offsets_topic(self, access) -> list[int]:
        """Waits until ``__consumer_offsets`` exists and returns its partitions.

        Kafka creates the topic when the first consumer group commits or joins, so a brand-new cluster has none;
        exiting then made a deployment next to a new cluster crash-loop. The wait is said once, in one line; a
        stop request (SIGTERM/SIGINT) ends it; a cluster that stops answering for a minute ends it with an error."""
        from streaming.kafka.client import KafkaUnavailable

        topic = self.settings.source.offsets_topic
        log.warning("topic %s does not exist yet at %s; waiting for it (Kafka creates it when the first consumer "
                    "group commits or joins)", topic, access.bootstrap)
        self.status.last_error = f"waiting for topic {topic} to exist"
        unreachable_since: float | None = None
        while not self.stop_requested.wait(self.offsets_topic_poll_s):
            try:
                partitions = access.partitions(topic)
                unreachable_since = None
            except KafkaUnavailable as exc:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > 60:
                    raise RuntimeError(f"cannot reach Kafka at {access.bootstrap}: {exc}") from None
                continue
            if partitions:
                log.info("topic %s found with %d partitions", topic, len(partitions))
                self.status.last_error = None
                return partitions
        raise RuntimeError(f"stopped while waiting for topic {topic} to exist")

    def _log_resume(self, access, partitions: list[int]) -> None:
        """One line: where the checkpoint resumes (or a first start begins) and how far behind that is."""
        from streaming.job.progress import CatchUpWatch, checkpoint_position, resume_line
        from streaming.kafka.client import KafkaUnavailable

        s = self.settings
        self.catch_up = CatchUpWatch(len(partitions), log, started=self._started_at)
        position = checkpoint_position(s.spark.checkpoint, s.source.offsets_topic)
        try:
            ends = access.end_offsets([(s.source.offsets_topic, p) for p in partitions])
        except KafkaUnavailable:
            ends = None
        if ends is None:  # Kafka stopped answering right now: the line without the distance
            log.info("%s", f"resumed from checkpoint at batch {position[0]}" if position else "no checkpoint yet")
            return
        log.info("%s", resume_line(position, {p: e.last_stable for (_, p), e in ends.items()},
                                   {p: e.low_watermark for (_, p), e in ends.items()},
                                   starting_offsets=s.source.starting_offsets, offsets_topic=s.source.offsets_topic))

    def _after_batch(self, result: BatchResult) -> None:
        self.status.batches += 1
        if self.catch_up is not None:
            self.catch_up.after_batch(result.health)
        self.status.last_batch = result
        if self.maintenance is not None:
            self.maintenance.after_batch(result.batch_id)
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
                self.status.last_error = query_error_line(str(exc)) if exc else "query stopped"
                self.status.restarts += 1
                log.debug("streaming query stopped: %s", exc)
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

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stops the query after the batch in flight, then every service in reverse order.

        With a processing-time state timeout Spark runs a batch at every trigger even when no data came, so "no
        batch running" may never be seen for long: waiting for it could use the whole deadline. Instead the batch
        that was in flight when the stop began is waited for (its id reaches the progress report once its output
        and its checkpoint commit are written) and the query is stopped right then, before the next trigger."""
        q = self.query
        if q is not None:
            try:
                deadline = time.monotonic() + timeout_s
                if q.isActive and q.status.get("isTriggerActive"):
                    done = (q.lastProgress or {}).get("batchId", -1)
                    while (q.isActive and q.status.get("isTriggerActive")
                           and (q.lastProgress or {}).get("batchId", -1) == done and time.monotonic() < deadline):
                        time.sleep(0.05)
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


def _refuse_tables_of_another_checkpoint(delta, checkpoint: str) -> None:
    """A new checkpoint numbers its micro-batches from 0 again, and the Delta tables skip every batch id they have
    already recorded (that is how a replayed batch is written once). Tables written under an earlier checkpoint
    would therefore silently drop this one's first batches: refuse to start, in one line, instead."""
    if "://" in checkpoint and not checkpoint.startswith("file:"):
        return  # not a local folder: cannot tell whether it is new
    root = Path(checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint)
    offsets = root / "offsets"
    if offsets.is_dir() and any(offsets.iterdir()):
        return  # resuming: the tables' batch ids continue this checkpoint's
    written = delta.batches_written()
    if written:
        raise RuntimeError(
            f"the Delta tables in {delta.root} were written under another checkpoint (up to batch "
            f"{max(written.values())}) but the checkpoint {checkpoint} is new, so its first batches would be "
            "skipped: point delta.path at a new folder, remove those tables, or restore their checkpoint")
