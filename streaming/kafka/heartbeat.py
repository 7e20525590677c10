"""The heartbeat emitter: every few seconds, list the end offsets of the consumed topics and publish them.

The stateful model only sees what arrives on Kafka, so end offsets come to it as data, stamped with the emitter's
clock: lag for silent groups, a steady tick for stall/stop detection and time lag, and the high watermark and LSO
of ``__consumer_offsets`` itself so the job can say how far behind it is and why. Runs as a thread in the driver of
``groupscope run`` or alone as ``groupscope heartbeat``. A failed tick is reported and retried; it never stops the
thread.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from confluent_kafka.admin import NewTopic

from ..heartbeat_format import encode_heartbeats
from .client import KafkaAccess, KafkaUnavailable

__all__ = ["HeartbeatEmitter", "EmitterStatus"]

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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.access = KafkaAccess(kafka)
        self.topic = topic
        self.interval_s = interval_s
        self.include = re.compile(include)
        self.exclude = re.compile(exclude)
        self.offsets_topic = offsets_topic
        self.retention_ms = retention_ms
        self.chunk_partitions = chunk_partitions
        self.clock = clock
        self.emitter_id = f"{socket.gethostname()}:{os.getpid()}"
        self._producer = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._status = EmitterStatus(0, 0, -1, None, False, 0)
        self._seq = 0

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

    def ensure_topic(self) -> bool:
        """Creates the heartbeat topic (1 partition, time retention) if missing; False if it cannot."""
        try:
            if self.access.partitions(self.topic):
                return True
            futures = self.access._admin.create_topics(
                [NewTopic(self.topic, num_partitions=1, replication_factor=-1,
                          config={"retention.ms": str(self.retention_ms), "cleanup.policy": "delete"})])
            for f in futures.values():
                f.result(timeout=self.access.timeout_s)
            return True
        except Exception as exc:  # noqa: BLE001 - reported, and the next tick tries again
            log.warning("cannot create heartbeat topic %s: %s", self.topic, exc)
            return False

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
        try:
            if self._producer is None:
                if not self.ensure_topic():
                    raise KafkaUnavailable(f"heartbeat topic {self.topic} is missing and cannot be created")
                self._producer = self.access.producer({"linger.ms": "5", "acks": "all"})
            partitions = self.watched_partitions()
            ends = self.access.end_offsets(partitions)
            now_ms = int(self.clock() * 1000)
            rows = [(t, p, e.high_watermark, e.last_stable, e.low_watermark) for (t, p), e in sorted(ends.items())]
            self._seq += 1
            for value in encode_heartbeats(now_ms, self.emitter_id, self._seq, rows, self.chunk_partitions):
                self._producer.produce(self.topic, key=self.emitter_id.encode(), value=value, partition=0,
                                       timestamp=now_ms)
            remaining = self._producer.flush(self.access.timeout_s)
            if remaining:
                raise KafkaUnavailable(f"{remaining} heartbeat message(s) not delivered")
        except Exception as exc:  # noqa: BLE001 - a tick never kills the emitter
            with self._lock:
                s = self._status
                self._status = EmitterStatus(s.ticks, s.failures + 1, s.last_tick_ms, str(exc), False, s.partitions)
            log.warning("heartbeat tick failed: %s", exc)
            return False
        with self._lock:
            s = self._status
            self._status = EmitterStatus(s.ticks + 1, s.failures, now_ms, None, True, len(rows))
        return True
