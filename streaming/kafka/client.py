"""confluent-kafka clients configured the way groupscope needs them, and end-offset queries.

User settings (``kafka`` section of the config: ``bootstrap.servers``, SASL, SSL, anything librdkafka accepts) are
passed through verbatim; groupscope only adds what its own correctness needs (isolation level, no auto commit, no
group coordination for range reads) and what its throughput needs (``fetch.queue.backoff.ms=0``: librdkafka's
default 1000 ms caps a consumer at about a third of what it can read).
"""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from typing import Iterable, Mapping

from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

__all__ = ["EndOffsets", "KafkaAccess", "KafkaUnavailable", "consumer_config"]

# Settings a user must not override: they would break exactly-once replay or the range reads.
_FORCED_CONSUMER = {"enable.auto.commit": "false", "enable.auto.offset.store": "false"}


class KafkaUnavailable(RuntimeError):
    """The cluster did not answer in time; callers treat it as "no news" and report it."""


def consumer_config(kafka: Mapping[str, str], *, isolation: str = "read_committed") -> dict[str, str]:
    conf = {"fetch.queue.backoff.ms": "0", "queued.max.messages.kbytes": "65536", "log_level": "3"}
    conf.update({k: str(v) for k, v in kafka.items()})
    conf.update(_FORCED_CONSUMER)
    conf.setdefault("group.id", f"groupscope-reader-{uuid.uuid4().hex[:12]}")  # never joins: assign() only
    conf["isolation.level"] = isolation
    return conf


@dataclass(frozen=True, slots=True)
class EndOffsets:
    high_watermark: int
    last_stable: int
    low_watermark: int


class KafkaAccess:
    """Metadata and end-offset queries against one cluster (driver side)."""

    def __init__(self, kafka: Mapping[str, str], *, timeout_s: float = 10.0) -> None:
        conf = {k: str(v) for k, v in kafka.items()}
        conf.setdefault("client.id", f"groupscope-{socket.gethostname()}")
        conf.setdefault("log_level", "3")
        self._admin = AdminClient(conf)
        self._kafka = dict(kafka)
        self.timeout_s = timeout_s

    def topics(self) -> dict[str, int]:
        """Every topic with its partition count."""
        try:
            md = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"metadata request failed: {exc}") from None
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def partitions(self, topic: str) -> list[int]:
        try:
            md = self._admin.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"metadata request for {topic} failed: {exc}") from None
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return []
        return sorted(t.partitions)

    def _list(self, tps: list[TopicPartition], spec: OffsetSpec, isolation: IsolationLevel) -> dict[tuple[str, int], int]:
        if not tps:
            return {}
        try:
            futures = self._admin.list_offsets({tp: spec for tp in tps}, isolation_level=isolation,
                                               request_timeout=self.timeout_s)
            return {(tp.topic, tp.partition): f.result(timeout=self.timeout_s).offset for tp, f in futures.items()}
        except KafkaException as exc:
            raise KafkaUnavailable(f"list offsets failed: {exc}") from None
        except Exception as exc:  # concurrent.futures.TimeoutError and friends
            raise KafkaUnavailable(f"list offsets failed: {type(exc).__name__}: {exc}") from None

    def end_offsets(self, partitions: Iterable[tuple[str, int]], *, low: bool = True) -> dict[tuple[str, int], EndOffsets]:
        """High watermark, last stable offset and (optionally) low watermark of each partition."""
        tps = [TopicPartition(t, p) for t, p in partitions]
        hw = self._list(tps, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED)
        lso = self._list(tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
        lw = self._list(tps, OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED) if low else {}
        return {k: EndOffsets(hw[k], lso.get(k, hw[k]), lw.get(k, -1)) for k in hw}

    def producer(self, extra: Mapping[str, str] | None = None) -> Producer:
        conf = {k: str(v) for k, v in self._kafka.items()}
        conf.setdefault("log_level", "3")
        conf.update(extra or {})
        return Producer(conf)

    def consumer(self, *, isolation: str = "read_committed") -> Consumer:
        return Consumer(consumer_config(self._kafka, isolation=isolation))
