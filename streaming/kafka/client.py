"""confluent-kafka clients configured the way groupscope needs them, and end-offset queries.

User settings (``kafka`` section of the config: ``bootstrap.servers``, SASL, SSL, anything librdkafka accepts) are
passed through verbatim; groupscope only adds what its own correctness needs (isolation level, no auto commit, no
group coordination for range reads) and what its throughput needs (``fetch.queue.backoff.ms=0``: librdkafka's
default 1000 ms caps a consumer at about a third of what it can read), and how soon it notices Kafka is back
(:data:`RECONNECT`).
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from confluent_kafka import Consumer, IsolationLevel, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

__all__ = ["EndOffsets", "KafkaAccess", "KafkaUnavailable", "RECONNECT", "Reachability", "consumer_config",
           "librdkafka_logger", "with_logger"]

LIBRDKAFKA_LOGGER = "groupscope.librdkafka"
# Reconnection back-off of every client (the user's setting wins). librdkafka doubles the wait after each refused
# connection up to 10 s by default, so after an outage of a minute the heartbeat emitter, the planner and the
# readers reached Kafka up to 10 s after it answered again (5 s measured on a real broker): /ready stayed 503 and the
# model's clock stood still that long, and the outage looked longer than it was. One attempt a second against a
# broker that is away costs nothing.
RECONNECT = {"reconnect.backoff.max.ms": "1000"}
_CONNECT_FAILED = re.compile(r"Connect to \S+ failed: (?P<reason>[^(]+?)\s*(\(after|$)")
_RESOLVE_FAILED = re.compile(r"Failed to resolve '(?P<host>[^']+)': (?P<reason>[^(]+?)\s*(\(after|$)")
# A listener that is not plaintext Kafka (an HTTP server, a TLS port): librdkafka's advice for these is misleading
# ("increase receive.message.max.bytes"); groupscope's own line says what answered (streaming.kafka.listener_probe).
_NOT_KAFKA = re.compile(r"Invalid response size|incorrect security\.protocol")
_NUMBERS = re.compile(r"\d+")
_KAFKA_ERROR = re.compile(r'KafkaError\{[^}]*?str="([^"]*)"\}')  # KafkaError{code=..,val=..,str="what"} -> what


class _Librdkafka(logging.Filter):
    """librdkafka repeats a failing connection's line every few hundred milliseconds, per broker, per client. This
    filter lets the first of each kind through and then at most one per ``every_s`` (with how many were held back),
    and counts the connection failures for the one line groupscope prints itself (see
    :meth:`KafkaAccess.wait_reachable`); those pass only when the logger is at DEBUG."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}
        self.connect_failures = 0
        self.last_failure_reason: str | None = None
        self.not_kafka_answers = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if _NOT_KAFKA.search(message):
            with self._lock:
                self.not_kafka_answers += 1
            if not logging.getLogger(LIBRDKAFKA_LOGGER).isEnabledFor(logging.DEBUG):
                return False  # groupscope's own line says what answered
        failed = _CONNECT_FAILED.search(message) or _RESOLVE_FAILED.search(message)
        if failed:
            reason = failed.group("reason").strip()
            if "host" in failed.groupdict():  # a server name that does not resolve: say which
                reason = f"cannot resolve {failed.group('host')}: {reason}"
            with self._lock:
                self.connect_failures += 1
                self.last_failure_reason = reason
            if not logging.getLogger(LIBRDKAFKA_LOGGER).isEnabledFor(logging.DEBUG):
                return False  # summarized by groupscope's own line; shown as they come only when debugging
        # rdkafka#producer-3, thread names and counters differ between repeats of the same problem
        key = _NUMBERS.sub("N", message.split("]: ", 1)[-1])
        now = time.monotonic()
        with self._lock:
            first, held = self._seen.get(key, (0.0, -1))
            if held >= 0 and now - first < self.every_s:
                self._seen[key] = (first, held + 1)
                return False
            self._seen[key] = (now, 0)
        if held > 0:
            record.msg, record.args = f"{message} ({held} more like it in the last {self.every_s:.0f} s)", None
        return True


_FILTER = _Librdkafka()


def librdkafka_logger() -> logging.Logger:
    """The Python logger librdkafka's own log lines go to (deduplicated and rate-limited), never the raw terminal."""
    logger = logging.getLogger(LIBRDKAFKA_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger


def with_logger(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A client configuration whose librdkafka log lines go through :func:`librdkafka_logger`."""
    out = dict(conf)
    out.setdefault("logger", librdkafka_logger())
    return out


class Reachability:
    """Says in one line when a cluster stops answering and in one line when it answers again.

    Callers report each attempt (:meth:`failed`, :meth:`reached`); only the changes are logged, at WARNING both, so
    an operator who reads warnings sees the pair: "Kafka unreachable at HOST:PORT since <time> (<reason>)" and
    "Kafka reachable again after N s". The reason is the one librdkafka gave for its failed connections when there
    were any (e.g. "connection refused"), else the caller's."""

    def __init__(self, bootstrap: str, logger: logging.Logger, *, clock=time.time) -> None:
        self.bootstrap = bootstrap
        self.logger = logger
        self.clock = clock
        self.down_since: float | None = None
        self._failures_seen = _FILTER.connect_failures

    @property
    def up(self) -> bool:
        return self.down_since is None

    def failed(self, reason: str, *, since: float | None = None) -> None:
        """An attempt that began at ``since`` (default: now) did not reach the cluster."""
        if self.down_since is not None:
            return
        if _FILTER.connect_failures > self._failures_seen and _FILTER.last_failure_reason:
            reason = _FILTER.last_failure_reason.lower()
        else:
            reason = _KAFKA_ERROR.sub(lambda m: m.group(1), reason)
        self.down_since = since if since is not None else self.clock()
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.down_since))
        self.logger.warning("Kafka unreachable at %s since %s (%s)", self.bootstrap, when, reason)

    def reached(self) -> None:
        self._failures_seen = _FILTER.connect_failures
        if self.down_since is None:
            return
        down_s = self.clock() - self.down_since
        self.down_since = None
        self.logger.warning("Kafka reachable again after %.0f s", down_s)


# Settings a user must not override: they would break exactly-once replay or the range reads.
_FORCED_CONSUMER = {"enable.auto.commit": "false", "enable.auto.offset.store": "false"}


class KafkaUnavailable(RuntimeError):
    """The cluster did not answer in time; callers treat it as "no news" and report it."""


def consumer_config(kafka: Mapping[str, str], *, isolation: str = "read_committed") -> dict[str, str]:
    conf = {"fetch.queue.backoff.ms": "0", "queued.max.messages.kbytes": "65536", "log_level": "3", **RECONNECT}
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
        conf = {**RECONNECT, **{k: str(v) for k, v in kafka.items()}}
        conf.setdefault("client.id", f"groupscope-{socket.gethostname()}")
        conf.setdefault("log_level", "3")
        # A metadata lookup must never create the topic it asks about: librdkafka's admin handle allows it by
        # default, and a broker with auto.create.topics.enable would create the heartbeat topic with its defaults
        # (not the heartbeat retention), or a bare __consumer_offsets before Kafka makes it properly.
        conf.setdefault("allow.auto.create.topics", "false")
        self._admin = AdminClient(with_logger(conf))
        self._kafka = dict(kafka)
        self.timeout_s = timeout_s

    @property
    def bootstrap(self) -> str:
        return str(self._kafka.get("bootstrap.servers", "?"))

    def wait_reachable(self, timeout_s: float = 8.0) -> None:
        """Returns once the cluster answers a metadata request; otherwise raises :class:`KafkaUnavailable` with one
        line naming the servers, the reason librdkafka saw and how many connection attempts failed in how long."""
        started = time.monotonic()
        before, odd_before = _FILTER.connect_failures, _FILTER.not_kafka_answers
        last: Exception | None = None
        not_kafka: str | None = None
        probed = False  # the listener is asked at most once (streaming.kafka.listener_probe)
        while True:
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                break
            try:
                self._admin.list_topics(timeout=min(2.0, left))
                return
            except KafkaException as exc:
                last = exc
            finally:
                self._admin.poll(0)  # hands the log lines queued meanwhile to the logger (and the counter)
            if not probed and _FILTER.not_kafka_answers > odd_before:
                probed, not_kafka = True, self._what_answers()
                if not_kafka:
                    break  # something other than Kafka answers: waiting longer changes nothing
        attempts = _FILTER.connect_failures - before
        reason = (_FILTER.last_failure_reason or "").lower() if attempts else ""
        if not probed and not attempts:
            not_kafka = self._what_answers()  # connected, yet no metadata: ask what is listening
        reason = not_kafka or reason
        if not reason and last is not None:
            err = last.args[0] if last.args else last
            reason = getattr(err, "str", lambda: str(err))()
        took = time.monotonic() - started
        tried = f"{attempts} attempts in {took:.0f} s" if attempts else f"for {took:.0f} s"
        raise KafkaUnavailable(f"cannot reach Kafka at {self.bootstrap}: {reason or 'no answer'} ({tried})")

    def _what_answers(self) -> str | None:
        """Why the first bootstrap address is not a plaintext Kafka listener, if it is not one."""
        from streaming.kafka.listener_probe import first_address, probe_listener

        if str(self._kafka.get("security.protocol", "plaintext")).lower() != "plaintext":
            return None
        address = first_address(self.bootstrap)
        return probe_listener(*address) if address else None

    def poll_logs(self) -> None:
        """Hands librdkafka's log lines queued by the admin client to the logger (and its failure counter)."""
        self._admin.poll(0)

    def topics(self) -> dict[str, int]:
        """Every topic with its partition count."""
        try:
            md = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"metadata request failed: {exc}") from None
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def describe_topics(self, names: list[str]) -> Mapping[str, Future]:
        """Starts a DescribeTopics request without waiting: one future per name, whose result has ``topic_id``.
        Not waiting matters: a broker that does not answer it (the demo's embedded one) would otherwise hold the
        caller for the whole request timeout."""
        return self._admin.describe_topics(TopicCollection(names), request_timeout=self.timeout_s)

    def partitions(self, topic: str) -> list[int]:
        try:
            md = self._admin.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"metadata request for {topic} failed: {exc}") from None
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return []
        return sorted(t.partitions)

    def leaders(self, topic: str) -> tuple[dict[int, tuple[str, int]], dict[int, int]]:
        """Every broker's address, and the leader of each partition of ``topic`` that has one."""
        try:
            md = self._admin.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as exc:
            raise KafkaUnavailable(f"metadata request for {topic} failed: {exc}") from None
        brokers = {b.id: (b.host, b.port) for b in md.brokers.values()}
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return brokers, {}
        return brokers, {p.id: p.leader for p in t.partitions.values() if p.leader >= 0}

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
        conf = {**RECONNECT, **{k: str(v) for k, v in self._kafka.items()}}
        conf.setdefault("log_level", "3")
        conf.update(extra or {})
        return Producer(with_logger(conf))

    def consumer(self, *, isolation: str = "read_committed") -> Consumer:
        return Consumer(with_logger(consumer_config(self._kafka, isolation=isolation)))
