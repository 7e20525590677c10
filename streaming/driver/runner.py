"""``groupscope run``: the long-running job, its services started in order and stopped in reverse.

Order (services before their clients, as in Burrow's coordinator): metrics endpoint, then per cluster its Delta
sink and heartbeat emitter, then the Spark session and each cluster's streaming query. A failed start unwinds what
already started. While running, a supervisor loop watches every query: a query that dies (for example after a
broker outage longer than the read timeout) is restarted from its checkpoint with a growing back-off, and the
failure is counted and reported. With several clusters, one that cannot be reached at start is tried again with
the same back-off while the others run. On SIGTERM/SIGINT each query's micro-batch in flight finishes before the
query stops, so no batch is left half written (and Delta's per-batch app transactions make even a hard kill safe).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from streaming.job.batch_sink import BatchResult, BatchSink
from streaming.driver.progress import query_error_line
from streaming.config import Settings

__all__ = ["CheckpointUnusable", "GroupscopeJob", "ClusterRun", "JobStatus", "refuse_tables_of_another_checkpoint"]

log = logging.getLogger("groupscope.run")


@dataclass
class JobStatus:
    batches: int = 0
    restarts: int = 0
    last_error: str | None = None
    last_batch: BatchResult | None = None
    batch_duration_s: float = 0.0
    started_at: float = field(default_factory=time.time)


class ClusterNotYet(RuntimeError):
    """A cluster of a several-cluster job cannot start yet (unreachable, no offsets topic): retried later."""


class CheckpointUnusable(RuntimeError):
    """The checkpoint holds state this version cannot read (written by a newer groupscope): restarting the query
    from it would fail the same way for ever, so the job stops with the one line saying what to do."""


# Errors of a shard's step that no restart can mend: the class names as Spark's error text carries them.
_CHECKPOINT_ERRORS = ("StateFormatError",)


def checkpoint_error(error: str) -> str | None:
    """The operator's line when a query error is the checkpoint's state being unreadable, else None."""
    if not any(name in error for name in _CHECKPOINT_ERRORS):
        return None
    line = query_error_line(error)
    return line.split(": ", 1)[1] if line.split(":", 1)[0].endswith(_CHECKPOINT_ERRORS) else line


class _ClusterLog(logging.LoggerAdapter):
    """Lines about one cluster of several start with ``cluster NAME:``; a single-cluster job's lines stay bare."""

    def process(self, msg, kwargs):
        prefix = self.extra.get("prefix", "")
        return (f"{prefix}{msg}" if prefix else msg), kwargs


class ClusterRun:
    """One watched cluster's part of the job: its Delta tables and their maintenance, Kafka access, heartbeat
    emitter and streaming query, started and stopped together. A several-cluster job runs one per cluster in one
    Spark application; each has its own checkpoint, tables, state and back-off, so one cluster's outage or failed
    query never stops another's."""

    def __init__(self, settings: Settings, *, several: bool, heartbeat_clock: Callable[[], float] | None) -> None:
        self.settings = settings
        self.name = settings.cluster
        self.several = several
        self.heartbeat_clock = heartbeat_clock
        self.status = JobStatus()
        self.log = _ClusterLog(log, {"prefix": f"cluster {self.name}: " if several else ""})
        self.sink: BatchSink | None = None
        self.maintenance = None  # DeltaMaintenance: compaction, checkpoint, vacuum in the background
        self.plan = None
        self.catch_up = None  # CatchUpWatch: "caught up after S s", once per start
        self.catching_up = None  # (OffsetsRead, Progress): a line every 15 s until caught up
        self.stall = None  # BatchStallWatch: "no micro-batch completed for S s", once per stall
        self.emitter = None
        self.query = None
        self.prepared = False
        self.backoff = 2.0
        self.next_attempt = 0.0  # monotonic time of the next start or restart attempt
        self._started: list[tuple[str, Callable[[], None]]] = []

    @property
    def query_name(self) -> str:
        return f"groupscope-{self.name}" if self.several else "groupscope"

    def prepare(self, *, on_batch: Callable[[BatchResult], None], metrics: Callable[[BatchResult], None] | None,
                started_at: float, stop_requested: threading.Event) -> None:
        """Everything but the query: Delta sink, Kafka reachable and its offsets topic found, heartbeat emitter.
        Unwinds what it started when it fails."""
        try:
            self._prepare(on_batch, metrics, started_at, stop_requested)
        except BaseException:
            self.stop_services()
            raise
        self.prepared = True

    def _prepare(self, on_batch, metrics, started_at: float, stop_requested: threading.Event) -> None:
        from streaming.driver.checkpoint_lock import CheckpointLock
        from streaming.kafka.client import KafkaAccess, KafkaUnavailable
        from streaming.sinks.delta import DeltaSink
        from streaming.spark.job import JobPlan

        s = self.settings
        self.log.info("starting: cluster %s, Kafka at %s, checkpoint %s, Delta tables in %s", s.cluster,
                      s.kafka.get("bootstrap.servers", "?"), s.spark.checkpoint, s.delta.path)
        # Kafka first: a wrong address is one line, and leaves no empty table folder behind.
        access = KafkaAccess(s.kafka)
        try:
            access.wait_reachable(8.0)  # an unreachable cluster is one line within 10 s, not minutes of retries
            partitions = access.partitions(s.source.offsets_topic)
        except KafkaUnavailable as exc:
            message = str(exc) if str(exc).startswith("cannot reach") else \
                f"cannot reach Kafka at {s.kafka['bootstrap.servers']}: {exc}"
            raise (ClusterNotYet if self.several else RuntimeError)(message) from None
        lock = CheckpointLock(s.spark.checkpoint)
        if lock.acquire():  # one job per checkpoint (streaming.driver.checkpoint_lock)
            self._started.append(("checkpoint lock", lock.release))
        delta = DeltaSink(s.delta.path, app_id=f"groupscope-{s.cluster}", storage_options=s.delta.storage_options) \
            if s.delta.enabled and s.delta.writer == "deltalake" else None
        if delta is not None:
            refuse_tables_of_another_checkpoint(delta, s.spark.checkpoint)
        self.sink = BatchSink(delta=delta, metrics=metrics, on_batch=on_batch)
        if delta is not None and s.delta.maintenance.enabled:
            from streaming.sinks.delta_maintenance import DeltaMaintenance

            self.maintenance = DeltaMaintenance(delta, s.delta.maintenance)
            self._started.append(("delta maintenance", self.maintenance.stop))

        if not partitions:
            if self.several:  # the other clusters go on; this one is tried again later
                raise ClusterNotYet(f"topic {s.source.offsets_topic} does not exist yet at {access.bootstrap} (Kafka "
                                    "creates it when the first consumer group commits or joins)")
            partitions = self._wait_for_offsets_topic(access, stop_requested)
        self.plan = JobPlan(len(partitions), s.heartbeat.topic, s.source.offsets_topic)
        self._log_resume(access, partitions, started_at)

        if s.heartbeat.enabled:
            from streaming.kafka.heartbeat import HeartbeatEmitter

            self.emitter = HeartbeatEmitter.from_settings(
                s.kafka, s.heartbeat, s.source.offsets_topic,
                **({"clock": self.heartbeat_clock} if self.heartbeat_clock else {}))
            self.emitter.tick()  # the first heartbeat before the first batch: no blind warm-up window
            self.emitter.start()
            self._started.append(("heartbeat", self.emitter.stop))

    offsets_topic_poll_s: float = 2.0

    def _wait_for_offsets_topic(self, access, stop_requested: threading.Event) -> list[int]:
        """Waits until ``__consumer_offsets`` exists and returns its partitions.

        Kafka creates the topic when the first consumer group commits or joins, so a brand-new cluster has none;
        exiting then made a deployment next to a new cluster crash-loop. The wait is said once, in one line; a
        stop request (SIGTERM/SIGINT) ends it; a cluster that stops answering for a minute ends it with an error."""
        from streaming.kafka.client import KafkaUnavailable

        topic = self.settings.source.offsets_topic
        self.log.warning("topic %s does not exist yet at %s; waiting for it (Kafka creates it when the first "
                         "consumer group commits or joins)", topic, access.bootstrap)
        self.status.last_error = f"waiting for topic {topic} to exist"
        unreachable_since: float | None = None
        while not stop_requested.wait(self.offsets_topic_poll_s):
            try:
                partitions = access.partitions(topic)
                unreachable_since = None
            except KafkaUnavailable as exc:
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > 60:
                    raise RuntimeError(f"cannot reach Kafka at {access.bootstrap}: {exc}") from None
                continue
            if partitions:
                self.log.info("topic %s found with %d partitions", topic, len(partitions))
                self.status.last_error = None
                return partitions
        raise RuntimeError(f"stopped while waiting for topic {topic} to exist")

    def _log_resume(self, access, partitions: list[int], started_at: float) -> None:
        """One line: where the checkpoint resumes (or a first start begins) and how far behind that is."""
        from streaming.driver.progress import CatchUpWatch, checkpoint_position, resume_line
        from streaming.kafka.client import KafkaUnavailable

        s = self.settings
        self.catch_up = CatchUpWatch(len(partitions), self.log, started=started_at)
        position = checkpoint_position(s.spark.checkpoint, s.source.offsets_topic)
        try:
            ends = access.end_offsets([(s.source.offsets_topic, p) for p in partitions])
        except KafkaUnavailable:
            ends = None
        if ends is None:  # Kafka stopped answering right now: the line without the distance
            self.log.info("%s", f"resumed from checkpoint at batch {position[0]}" if position else "no checkpoint yet")
            return
        self.log.info("%s", resume_line(position, {p: e.last_stable for (_, p), e in ends.items()},
                                        {p: e.low_watermark for (_, p), e in ends.items()},
                                        starting_offsets=s.source.starting_offsets,
                                        offsets_topic=s.source.offsets_topic))
        self._watch_catch_up(position, ends)

    def _watch_catch_up(self, position, ends) -> None:
        """A line every 15 s while the job reads what it is behind (records read of the total, rate, time left),
        until it has caught up; nothing when that takes only a few seconds."""
        from streaming.progress import OffsetsRead, Progress

        if position is None and self.settings.source.starting_offsets == "latest":
            return
        at = position[1] if position is not None else {}
        read = OffsetsRead({p: (max(at.get(p, 0), e.low_watermark), e.last_stable) for (_, p), e in ends.items()})
        if read.total:
            self.catching_up = (read, Progress("catching up", total_records=read.total, logger=self.log))

    def start_query(self, spark) -> None:
        from streaming.spark.job import start_query

        if self.several:  # each cluster's jobs in a pool of their own: a busy cluster cannot starve the others
            spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.name)
        self.query = start_query(spark, self.settings, self.plan, self.sink, query_name=self.query_name)
        from streaming.driver.progress import BatchStallWatch

        self.stall = BatchStallWatch(self.settings.metrics.ready_max_batch_age_seconds, self.log)

    def after_batch(self, result: BatchResult) -> None:
        self.status.batches += 1
        if self.catch_up is not None:
            self.catch_up.after_batch(result.health)
        if self.catching_up is not None:
            read, progress = self.catching_up
            progress.update(records=read.read_to({h.shard: h.last_offset + 1 for h in result.health}))
            if self.catch_up is not None and self.catch_up.done:
                progress.close()
                self.catching_up = None
        self.status.last_batch = result
        if self.stall is not None:
            self.stall.batch_completed(time.monotonic())
        if self.maintenance is not None:
            self.maintenance.after_batch(result.batch_id)
        if self.emitter is not None:  # what the emitter measures the time lag of (streaming.job.lagging)
            from streaming.job.lagging import LAGGING, lagging_of

            full = [h.shard for h in result.health if h.full_snapshot and h.caught_up]
            for shard, lagging in lagging_of(result.tables.get(LAGGING), full).items():
                self.emitter.want_oldest(shard, lagging)

    def supervise(self, now: float, start: Callable[[ClusterRun], None]) -> None:
        """One look at this cluster: (re)starts what is down once its back-off has passed."""
        if now < self.next_attempt:
            return
        if not self.prepared or self.query is None:
            try:
                start(self)
                if self.query is not None:
                    self.log.info("streaming query started")
            except Exception as exc:  # noqa: BLE001 - reported; tried again after the back-off
                self.retry_later(f"restart failed: {exc}" if self.prepared else str(exc), now)
            return
        q = self.query
        if not q.isActive:
            exc = q.exception()
            unusable = checkpoint_error(str(exc)) if exc else None
            if unusable is not None:
                self.query = None
                raise CheckpointUnusable(f"{self.log.extra.get('prefix', '')}cannot resume from the checkpoint "
                                         f"{self.settings.spark.checkpoint}: {unusable}")
            self.status.last_error = query_error_line(str(exc)) if exc else "query stopped"
            self.status.restarts += 1
            self.log.debug("streaming query stopped: %s", exc)
            self.log.error("streaming query stopped (%s); restarting in %.0f s", self.status.last_error, self.backoff)
            self.query = None
            self._later(now)
            return
        if self.stall is not None:
            self.stall.look(now, lambda: q.status.get("message"))
        progress = q.lastProgress
        if progress:
            self.status.batch_duration_s = (progress.get("durationMs", {}).get("triggerExecution") or 0) / 1000
            self.backoff = 2.0

    def retry_later(self, reason: str, now: float) -> None:
        """Says why this cluster is not running, in one line, and when it is tried again."""
        self.status.last_error = reason
        self.log.error("%s; trying again in %.0f s", reason, self.backoff)
        self._later(now)

    def _later(self, now: float) -> None:
        self.next_attempt = now + self.backoff
        self.backoff = min(self.backoff * 2, 60.0)

    def stop_query(self, deadline: float) -> None:
        """Stops the query after the batch in flight (see :meth:`GroupscopeJob.stop`)."""
        q = self.query
        if q is None:
            return
        try:
            if q.isActive and q.status.get("isTriggerActive"):
                done = (q.lastProgress or {}).get("batchId", -1)
                while (q.isActive and q.status.get("isTriggerActive")
                       and (q.lastProgress or {}).get("batchId", -1) == done and time.monotonic() < deadline):
                    time.sleep(0.05)
            q.stop()
        except Exception as exc:  # noqa: BLE001 - stopping must go on with the other services
            self.log.warning("stopping the query: %s", exc)
        self.query = None

    def stop_services(self) -> None:
        if self.catching_up is not None:
            self.catching_up[1].close()
            self.catching_up = None
        while self._started:
            _stop_quietly(*self._started.pop(), logger=self.log)
        self.prepared = False


class GroupscopeJob:
    """``groupscope run``: one :class:`ClusterRun` per watched cluster (one for a single-cluster config), one Spark
    session, one metrics endpoint and API for all of them, and the supervisor loop that keeps every cluster's query
    running. The single-cluster attributes (``query``, ``status``, ``emitter``, ``sink``, ``plan``...) are the first
    cluster's."""

    def __init__(self, settings: Settings, *, on_batch: Callable[[BatchResult], None] | None = None,
                 install_signal_handlers: bool = True, heartbeat_clock: Callable[[], float] | None = None,
                 jvm_log: str | None = None) -> None:
        """``heartbeat_clock``: the clock heartbeats are stamped with (default: the wall clock); the demo passes
        its simulation's clock so records and heartbeats share one. ``jvm_log``: where the JVM's own output goes
        (default: this process's stderr)."""
        self.settings = settings
        per_cluster = settings.cluster_settings()
        several = len(per_cluster) > 1
        self.clusters = [ClusterRun(c, several=several, heartbeat_clock=heartbeat_clock) for c in per_cluster]
        self.jvm_log = jvm_log
        self.on_batch = on_batch
        self.stop_requested = threading.Event()
        self.install_signal_handlers = install_signal_handlers
        self.spark = None
        self.metrics = None
        self.failure: Exception | None = None  # why run() ended on its own (Spark's JVM exited), for a caller's view
        self.stop_reason: str | None = None  # the signal that asked for the stop, said when it begins
        self._stop_said = self._stopped_said = False
        self._heap_settled = False  # see streaming.driver.heap

    # The first (or only) cluster's parts, by their single-cluster names.
    first = property(lambda self: self.clusters[0])
    status = property(lambda self: self.first.status)
    query = property(lambda self: self.first.query)
    emitter = property(lambda self: self.first.emitter)
    sink = property(lambda self: self.first.sink)
    plan = property(lambda self: self.first.plan)
    catch_up = property(lambda self: self.first.catch_up)
    maintenance = property(lambda self: self.first.maintenance)

    @property
    def several(self) -> bool:
        return len(self.clusters) > 1

    # ---- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._started_at = time.monotonic()
        try:
            self._start_services()
        except BaseException:
            self.stop()
            raise

    def _packages(self):
        """The Spark packages this job's writers and sources need (a missing Python half is one line, before
        anything starts)."""
        from streaming.spark.packages import needed_packages

        return needed_packages(
            delta_spark=any(r.settings.delta.enabled and r.settings.delta.writer == "delta-spark"
                            for r in self.clusters),
            builtin_kafka=any(r.settings.source.builtin_kafka_source for r in self.clusters))

    def _start_services(self) -> None:
        self._packages()
        s = self.clusters[0].settings
        if s.metrics.enabled:
            from streaming.driver.metrics_feed import MetricsFeed

            first = self.clusters[0]
            self.metrics = MetricsFeed(s, first.status, emitter=lambda: first.emitter)
            for run in self.clusters[1:]:
                self.metrics.add_cluster(run.settings, run.status, emitter=lambda run=run: run.emitter)
            self.metrics.start()
        failed: list[str] = []
        for run in self.clusters:
            try:
                self._prepare(run)
            except ClusterNotYet as exc:  # several clusters: the others start; this one is retried
                run.retry_later(str(exc), time.monotonic())
                failed.append(f"cluster {run.name}: {exc}")
        if len(failed) == len(self.clusters):
            raise RuntimeError("; ".join(failed))
        self._start_spark()
        for run in self.clusters:
            if run.prepared:
                run.start_query(self.spark)
        from streaming.spark import worker_daemon

        worker_daemon.start_early(self.spark)  # while the first batch is planned
        log.info("running; metrics on %s, Delta tables in %s", f":{self.metrics.port}" if self.metrics else "(off)",
                 ", ".join(run.settings.delta.path for run in self.clusters))
        if self.install_signal_handlers and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda signum, _frame: self.request_stop(signal.Signals(signum).name))

    def _prepare(self, run: ClusterRun) -> None:
        feed = self.metrics.clusters[run.name].apply if self.metrics is not None else None
        run.prepare(on_batch=lambda result, run=run: self._after_batch(result, run), metrics=feed,
                    started_at=self._started_at, stop_requested=self.stop_requested)
        if self.spark is not None:
            self._delta_spark(run)

    def _start_spark(self) -> None:
        from streaming.spark.session import build_session

        sp = self.settings.spark
        conf = dict(sp.conf)
        master = sp.master
        if self.several:
            # Each cluster's jobs in their own fair-share pool, and (on the default local master) two task slots
            # per cluster: a read task waiting on a cluster that went down must not hold the only slots.
            conf.setdefault("spark.scheduler.mode", "FAIR")
            if master == type(sp)().master:
                master = f"local[{2 * len(self.clusters)}]"
        from streaming.spark.packages import check_session, session_conf

        packages = self._packages()
        fetched = packages.coordinates and not ({"spark.jars", "spark.jars.packages"} & conf.keys())
        conf = session_conf(packages, conf, shuffle_partitions=sp.shuffle_partitions)
        try:
            self.spark = build_session(master=master, app_name=sp.app_name,
                                       shuffle_partitions=sp.shuffle_partitions, driver_memory=sp.driver_memory,
                                       conf=conf, jvm_log=self.jvm_log, class_archive=sp.class_archive)
        except Exception as exc:
            if fetched and "JAVA_GATEWAY_EXITED" in str(exc):  # Spark's JVM exits when Ivy cannot fetch them
                from streaming.spark.packages import JarsMissing

                raise JarsMissing(f"Spark could not start with {conf['spark.jars.packages']} (spark.jars.packages, "
                                  "fetched by Spark's Ivy from Maven Central): fetch those jars and list the files "
                                  "in spark.conf spark.jars, or fix Spark's access to Maven Central") from None
            raise
        check_session(self.spark, packages)
        from streaming.spark.jvm_exit import quiet_accumulator_server

        quiet_accumulator_server(self.spark)
        for run in self.clusters:
            if run.prepared:
                self._delta_spark(run)

    def _delta_spark(self, run: ClusterRun) -> None:
        s = run.settings
        if s.delta.enabled and s.delta.writer == "delta-spark" and run.sink.delta is None:
            from streaming.sinks.delta_spark import DeltaSparkSink

            delta = DeltaSparkSink(self.spark, s.delta.path, app_id=f"groupscope-{s.cluster}")
            refuse_tables_of_another_checkpoint(delta, s.spark.checkpoint)
            run.sink.delta = delta
            if s.delta.maintenance.enabled:
                from streaming.sinks.delta_maintenance import DeltaMaintenance

                run.maintenance = DeltaMaintenance(delta, s.delta.maintenance)
                run._started.append(("delta maintenance", run.maintenance.stop))

    def _start_cluster(self, run: ClusterRun) -> None:
        """Starts what of ``run`` is not running: everything for a cluster that could not start, else its query."""
        if not run.prepared:
            self._prepare(run)
        run.start_query(self.spark)

    def _after_batch(self, result: BatchResult, run: ClusterRun | None = None) -> None:
        (run or self.first).after_batch(result)
        if not self._heap_settled:
            from streaming.driver import heap

            heap.settle()  # once, after the first batch: everything the job needed to get going is loaded
            self._heap_settled = True
        if self.on_batch is not None:
            self.on_batch(result)

    def run(self, *, duration_s: float | None = None, poll_s: float = 0.5) -> None:
        """Supervises every cluster's query until stopped (signal, :meth:`request_stop`, or ``duration_s``)."""
        deadline = None if duration_s is None else time.monotonic() + duration_s
        while not self.stop_requested.is_set():
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self.stop_reason = self.stop_reason or f"--duration {duration_s:g} s reached"
                break
            self._raise_if_jvm_exited()
            for run in self.clusters:
                try:
                    run.supervise(now, self._start_cluster)
                except Exception as exc:
                    self._raise_if_jvm_exited(wait_s=3.0)  # a call into a JVM that died: say that, not the call
                    self.failure = exc
                    raise
            self.stop_requested.wait(poll_s)

    def jvm_exit_status(self, wait_s: float = 0.0) -> int | None:
        """Spark's JVM's exit status once it has exited (see :mod:`streaming.spark.jvm_exit`), else None."""
        from streaming.spark.jvm_exit import jvm_exit_status

        return None if self.spark is None else jvm_exit_status(self.spark, wait_s)

    def _raise_if_jvm_exited(self, wait_s: float = 0.0) -> None:
        from streaming.spark.jvm_exit import jvm_exited_error

        status = self.jvm_exit_status(wait_s)
        if status is not None:
            self.failure = jvm_exited_error(status)
            raise self.failure from None

    def request_stop(self, why: str | None = None) -> None:
        """Ends :meth:`run`; ``why`` (a signal's name) is said when the stop begins."""
        from streaming.spark.session import mark_stopping

        mark_stopping(self.spark)  # what the JVM says of its workers ending with a group-wide signal is the stop
        if why is not None and self.stop_reason is None:
            self.stop_reason = why  # logged by stop(), not here: a signal handler interrupts whatever was logging
        self.stop_requested.set()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stops every query after its batch in flight, then every service in reverse order.

        With a processing-time state timeout Spark runs a batch at every trigger even when no data came, so "no
        batch running" may never be seen for long: waiting for it could use the whole deadline. Instead the batch
        that was in flight when the stop began is waited for (its id reaches the progress report once its output
        and its checkpoint commit are written) and the query is stopped right then, before the next trigger."""
        began = time.monotonic()
        if self.spark is not None and not self._stop_said:
            self._stop_said = True
            log.info("stopping (%s): finishing the batch in flight, then the services", self.stop_reason or "requested")
        self.request_stop()
        deadline = time.monotonic() + timeout_s
        if self.jvm_exit_status() is not None:  # nothing to stop there, and every call into it would fail
            for run in self.clusters:
                run.query = None
            self.spark = None
        for run in self.clusters:
            run.stop_query(deadline)
        if self.spark is not None:  # Spark first: no task may still read through a stopped service
            from streaming.spark.session import stop_session

            _stop_quietly("spark", lambda: stop_session(self.spark))
        for run in self.clusters:
            run.stop_services()
        if self.metrics is not None:
            _stop_quietly("metrics", self.metrics.stop)
        if self._stop_said and not self._stopped_said:
            self._stopped_said = True
            log.info("stopped in %.1f s", time.monotonic() - began)


def _stop_quietly(name: str, stop: Callable[[], None], logger: logging.Logger | logging.LoggerAdapter = log) -> None:
    try:
        stop()
    except Exception as exc:  # noqa: BLE001 - stopping must go on with the other services
        logger.warning("stopping %s: %s", name, exc)


def refuse_tables_of_another_checkpoint(delta, checkpoint: str) -> None:
    """A new checkpoint numbers its micro-batches from 0 again, and the Delta tables skip every batch id they have
    already recorded (that is how a replayed batch is written once). Tables written under an earlier checkpoint
    would therefore silently drop this one's first batches: refuse to start, in one line, instead."""
    from streaming.spark.checkpoint_files import local_path

    root = local_path(checkpoint)
    if root is None:
        return  # not a local folder: cannot tell whether it is new
    offsets = root / "offsets"
    if offsets.is_dir() and any(offsets.iterdir()):
        return  # resuming: the tables' batch ids continue this checkpoint's
    written = delta.batches_written()
    if written:
        raise RuntimeError(
            f"the Delta tables in {delta.root} were written under another checkpoint (up to batch "
            f"{max(written.values())}) but the checkpoint {checkpoint} is new, so its first batches would be "
            "skipped: point delta.path at a new folder, remove those tables, or restore their checkpoint")
