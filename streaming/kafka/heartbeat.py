"""The heartbeat emitter: every few seconds, list the end offsets of the consumed topics and publish them.

The stateful model only sees what arrives on Kafka, so end offsets come to it as data, stamped with the emitter's
clock: lag for silent groups, a steady tick for stall/stop detection and time lag, and the high watermark and LSO
of ``__consumer_offsets`` itself so the job can say how far behind it is and why; where it read them, the quiet
tails of transactional partitions (``tail_probe``) and the timestamps of the oldest records lagging groups have not
processed (``oldest_probe``, for the offsets the job hands it with :meth:`HeartbeatEmitter.want_oldest`). Runs as a
thread in the driver of ``groupscope run`` or alone as ``groupscope heartbeat``. A failed tick is retried and never stops the thread; an
outage is said once when it begins and once when it ends (:class:`~.client.Reachability`), the failed ticks in
between only at DEBUG.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from streaming.schema.heartbeat_format import OldestRecord, encode_heartbeats
from .client import KafkaAccess, KafkaUnavailable, Reachability
from .oldest_probe import Lagging, OldestProbe, read_first_records
from .tail_probe import TailProbe, read_last_offsets
from .topic_ids import TopicIds

if TYPE_CHECKING:
    from streaming.config import HeartbeatSettings

__all__ = ["HeartbeatEmitter", "EmitterStatus", "config_fixes"]

log = logging.getLogger("groupscope.heartbeat")


@dataclass(frozen=True, slots=True)
class EmitterStatus:
    ticks: int
    failures: int
    last_tick_ms: int  # emitter clock of the last successful tick (-1: none yet)
    last_error: str | None
    kafka_up: bool
    partitions: int  # end offsets listed in the last tick


class HeartbeatEmitter:
    def __init__(
        self,
        kafka: Mapping[str, str],
        *,
        topic: str = "groupscope-heartbeat",
        interval_s: float = 5.0,
        include: str = ".*",
        exclude: str = "^__(?!consumer_offsets$)",
        offsets_topic: str = "__consumer_offsets",
        retention_ms: int = 86_400_000,
        chunk_partitions: int = 5000,
        check_topic_config: bool = True,
        probe_tails: bool = True,
        tail_window: int = 1000,
        tail_partitions: int = 200,
        probe_oldest: bool = True,
        oldest_partitions: int = 100,
        oldest_budget_s: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.access = KafkaAccess(kafka)
        # Aborted transactions at the end of a partition (streaming.kafka.tail_probe): read where they may be.
        self.tails = TailProbe(lambda ranges: read_last_offsets(kafka, ranges), window=tail_window,
                               max_partitions=tail_partitions) if probe_tails else None
        # The oldest unprocessed record of lagging consumers (streaming.kafka.oldest_probe): measured time lag.
        self.oldest = OldestProbe(lambda ranges, timeout_s: read_first_records(kafka, ranges, timeout_s),
                                  max_partitions=oldest_partitions, budget_s=oldest_budget_s) if probe_oldest else None
        self.reachability = Reachability(self.access.bootstrap, log)
        self.topic_ids = TopicIds(self.access.describe_topics)
        self.topic = topic
        self.interval_s = interval_s
        self.include = re.compile(include)
        self.exclude = re.compile(exclude)
        self.offsets_topic = offsets_topic
        self.retention_ms = retention_ms
        self.chunk_partitions = chunk_partitions
        self.check_topic_config = check_topic_config
        self.clock = clock
        self.emitter_id = f"{socket.gethostname()}:{os.getpid()}"
        self._producer = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._status = EmitterStatus(0, 0, -1, None, False, 0)
        self._seq = 0
        # The heartbeat topic's configuration check (see ensure_topic): None (not started), "describing",
        # "altering", then "ok", "corrected" or "failed" (config_problem says why); "off" when not wanted.
        self._config_state: str | None = None
        self._config_future = None
        self._config_fixes: dict[str, str] = {}
        self.config_problem: str | None = None
        # Why the heartbeat topic is missing and cannot be created (None: it exists). Kafka answered, so this is
        # not an outage: it is said once (again only if the reason changes), and /ready names it.
        self.topic_problem: str | None = None

    @classmethod
    def from_settings(cls, kafka: Mapping[str, str], settings: HeartbeatSettings, offsets_topic: str,
                      **overrides) -> "HeartbeatEmitter":
        """The emitter the ``heartbeat`` section of the configuration describes (``streaming.config``)."""
        return cls(kafka, topic=settings.topic, interval_s=settings.interval_seconds,
                   include=settings.include_topics, exclude=settings.exclude_topics, offsets_topic=offsets_topic,
                   retention_ms=settings.retention_ms, chunk_partitions=settings.chunk_partitions,
                   check_topic_config=settings.check_topic_config, probe_tails=settings.probe_transaction_tails,
                   tail_window=settings.tail_probe_window, tail_partitions=settings.tail_probe_partitions,
                   probe_oldest=settings.probe_oldest_records, oldest_partitions=settings.oldest_record_partitions,
                   oldest_budget_s=settings.oldest_record_budget_seconds, **overrides)

    # ---- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="groupscope-heartbeat", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None  # release librdkafka's threads now, not at garbage collection

    @property
    def status(self) -> EmitterStatus:
        with self._lock:
            return self._status

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.tick()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    # ---- one tick ---------------------------------------------------------------------------------------------

    def wanted_config(self) -> dict[str, str]:
        """The topic configuration heartbeats need: time retention (they are only read near the end)."""
        return {"retention.ms": str(self.retention_ms), "cleanup.policy": "delete"}

    def ensure_topic(self) -> bool:
        """Makes sure the heartbeat topic exists (1 partition, :meth:`wanted_config`); False if it cannot.

        Where the broker auto-creates topics, something else (another client's lookup, a producer) may have created
        it first with the broker's defaults: creation then says TOPIC_ALREADY_EXISTS, which is success here, and the
        configuration is corrected with IncrementalAlterConfigs. The correction runs in the background (admin
        futures, checked at each tick), so a broker that is slow to answer it never delays or fails a tick.

        Raises:
            KafkaUnavailable (or a client error): the cluster did not answer the metadata request; that is an
                outage, reported by :meth:`tick` as one."""
        if self.access.partitions(self.topic):
            self._topic_exists()
            self._check_config()
            return True
        try:
            futures = self.access._admin.create_topics(
                [NewTopic(self.topic, num_partitions=1, replication_factor=-1, config=self.wanted_config())],
                request_timeout=self.access.timeout_s)
            for f in futures.values():
                # In short waits, so that a stop does not wait for a broker that takes its time to answer.
                deadline = time.monotonic() + self.access.timeout_s + 5
                while not f.done() and not self._stop.is_set() and time.monotonic() < deadline:
                    concurrent.futures.wait([f], timeout=0.25)
                if not f.done():
                    if self._stop.is_set():
                        return False  # stopping: nothing to report
                    raise KafkaUnavailable("no answer to CreateTopics")
                try:
                    f.result(timeout=0)
                except KafkaException as exc:
                    if exc.args and getattr(exc.args[0], "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS:
                        log.info("heartbeat topic %s was created meanwhile by someone else; checking its "
                                 "configuration", self.topic)
                        self._topic_exists()
                        self._check_config()
                        return True
                    raise
        except Exception as exc:  # noqa: BLE001 - reported once, and the next tick tries again
            # The fix is part of the problem: /ready and `heartbeat --once` repeat it where the log is not seen.
            settings = ", ".join(f"{k}={v}" for k, v in sorted(self.wanted_config().items()))
            problem = (f"heartbeat topic {self.topic} does not exist and cannot be created ({_one_line(exc)}): "
                       f"create it (1 partition, {settings}) or allow this client to create topics")
            if problem != self.topic_problem:
                log.warning("%s; no heartbeat, so no end offsets, lag or readiness until it exists (retrying every "
                            "%.0f s)", problem, self.interval_s)
            self.topic_problem = problem
            return False
        self._topic_exists()
        return True

    def _topic_exists(self) -> None:
        if self.topic_problem is not None:
            log.warning("heartbeat topic %s exists now; heartbeats start", self.topic)
            self.topic_problem = None

    def _check_config(self) -> None:
        """Starts (once) reading the topic's configuration; :meth:`_poll_config` corrects it when it differs."""
        if self._config_state is not None:
            return
        if not self.check_topic_config:
            self._config_state = "off"
            return
        resource = ConfigResource(ResourceType.TOPIC, self.topic)
        try:
            self._config_future = self.access._admin.describe_configs(
                [resource], request_timeout=self.access.timeout_s)[resource]
            self._config_state = "describing"
        except Exception as exc:  # noqa: BLE001
            self._config_done(f"cannot read its configuration: {_one_line(exc)}")

    def _poll_config(self) -> None:
        """Advances the background configuration check by one step if its answer has come."""
        future = self._config_future
        if future is None or not future.done():
            return
        self._config_future = None
        try:
            result = future.result(timeout=0)
        except Exception as exc:  # noqa: BLE001
            what = "read" if self._config_state == "describing" else "correct"
            self._config_done(f"cannot {what} its configuration: {_one_line(exc)}")
            return
        if self._config_state == "describing":
            current = {name: entry.value for name, entry in result.items()}
            fixes = config_fixes(current, self.wanted_config())
            if not fixes:
                self._config_done(None)
                return
            resource = ConfigResource(ResourceType.TOPIC, self.topic, incremental_configs=[
                ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in fixes.items()])
            try:
                self._config_future = self.access._admin.incremental_alter_configs(
                    [resource], request_timeout=self.access.timeout_s)[resource]
                self._config_state = "altering"
                self._config_fixes = fixes
            except Exception as exc:  # noqa: BLE001
                self._config_done(f"cannot correct its configuration: {_one_line(exc)}")
            return
        log.info("heartbeat topic %s configuration corrected: %s", self.topic,
                 ", ".join(f"{k}={v}" for k, v in sorted(self._config_fixes.items())))
        self._config_done(None, corrected=True)

    def _config_done(self, problem: str | None, *, corrected: bool = False) -> None:
        self._config_state = "corrected" if corrected else ("ok" if problem is None else "failed")
        self.config_problem = problem
        if problem is not None:
            log.warning("heartbeat topic %s: %s; heartbeats go on with the topic as it is (wanted: %s)", self.topic,
                        problem, ", ".join(f"{k}={v}" for k, v in sorted(self.wanted_config().items())))

    def watched_partitions(self) -> list[tuple[str, int]]:
        topics = self.access.topics()
        out = []
        for name, count in sorted(topics.items()):
            if name == self.offsets_topic or (self.include.search(name) and not self.exclude.search(name)):
                if name == self.topic:
                    continue
                out.extend((name, p) for p in range(count))
        return out

    def tick(self) -> bool:
        began = time.time()
        try:
            if self._producer is None:
                if not self.ensure_topic():
                    self._failed(self.topic_problem, kafka_up=True)  # Kafka answered: not an outage
                    self.reachability.reached()
                    return False
                self._producer = self.access.producer({"linger.ms": "5", "acks": "all"})
            self._poll_config()
            partitions = self.watched_partitions()
            ends = self.access.end_offsets(partitions)
            now_ms = int(self.clock() * 1000)
            rows = [(t, p, e.high_watermark, e.last_stable, e.low_watermark) for (t, p), e in sorted(ends.items())]
            quiet = self._quiet_tails(rows)
            oldest = self._oldest_records(rows)
            data_topics = sorted({t for t, _ in partitions if t != self.offsets_topic})  # no group is assigned it
            ids = self.topic_ids.announcement(data_topics, self.clock())
            self._seq += 1
            for value in encode_heartbeats(now_ms, self.emitter_id, self._seq, rows, self.chunk_partitions, quiet,
                                           ids, oldest):
                self._producer.produce(self.topic, key=self.emitter_id.encode(), value=value, partition=0,
                                       timestamp=now_ms)
            remaining = self._producer.flush(self.access.timeout_s)
            if remaining:
                raise KafkaUnavailable(f"{remaining} heartbeat message(s) not delivered")
        except Exception as exc:  # noqa: BLE001 - a tick never kills the emitter
            self._failed(str(exc), kafka_up=False)
            if self.reachability.up:
                self.access.poll_logs()  # librdkafka's own reason for the failed connections, if it has one
                self.reachability.failed(_one_line(exc), since=began)
            else:
                log.debug("heartbeat tick failed: %s", exc)
            return False
        with self._lock:
            s = self._status
            self._status = EmitterStatus(s.ticks + 1, s.failures, now_ms, None, True, len(rows))
        self.reachability.reached()
        return True

    def _failed(self, error: str | None, *, kafka_up: bool) -> None:
        """Counts a tick that emitted nothing, with why."""
        with self._lock:
            s = self._status
            self._status = EmitterStatus(s.ticks, s.failures + 1, s.last_tick_ms, error, kafka_up, s.partitions)

    def _quiet_tails(self, rows: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int]]:
        """Reads the transactional tails that are due and says which end in offsets no consumer gets."""
        if self.tails is None:
            return []
        # __consumer_offsets too: a transactional offset commit leaves its partition ending in a marker, and the
        # job's shard knows it has read everything only from the quiet tail (streaming.job.step._Meta.position)
        ends = {(t, p): (hw, lso, low) for t, p, hw, lso, low in rows}
        self.tails.probe(self.tails.due(ends))
        return self.tails.quiet(ends)

    def want_oldest(self, shard: int, lagging: list[Lagging]) -> None:
        """What one shard of the job found lagging at its last full refresh: the committed offsets whose oldest
        unprocessed record the next ticks read (called from the driver's batch thread)."""
        if self.oldest is not None:
            self.oldest.want(shard, lagging)

    def _oldest_records(self, rows: list[tuple[str, int, int, int, int]]) -> list[OldestRecord]:
        """Reads the oldest unprocessed records that are due and returns every one measured and still wanted."""
        if self.oldest is None:
            return []
        self.oldest.probe(self.oldest.due({(t, p): (hw, lso, low) for t, p, hw, lso, low in rows}))
        return self.oldest.oldest()


def config_fixes(current: Mapping[str, str | None], wanted: Mapping[str, str]) -> dict[str, str]:
    """The settings of ``wanted`` whose current value differs (a broker default counts as a value)."""
    return {name: value for name, value in wanted.items() if current.get(name) != value}


def _one_line(exc: BaseException) -> str:
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    text = getattr(err, "str", lambda: str(err))() if not isinstance(err, str) else err
    return (str(text).splitlines() or [type(exc).__name__])[0] or type(exc).__name__
