"""Second mode: real confluent-kafka consumers in groups against a real Kafka, which writes ``__consumer_offsets``
itself (the docker-compose stack, integration tests with ``GROUPSCOPE_KAFKA_BOOTSTRAP``).

:func:`plan` turns scenario names into consumer specs (classic range / roundrobin / cooperative-sticky groups,
``group.protocol=consumer`` groups, slow and stalled consumers); :func:`consumer_config` maps a spec to librdkafka
settings. Both are pure. :class:`RealConsumerRunner` runs them: one producer thread feeding the topics at their
rates and one thread per consumer, polling and committing as the spec says. Their librdkafka log lines go through
Python logging (``groupscope.librdkafka``), never raw to the terminal.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from streaming.kafka.client import with_logger

from .scenarios import resolve
from .topics import TopicSpec

__all__ = ["RealConsumerSpec", "plan", "consumer_config", "RealConsumerRunner", "REAL_SCENARIOS"]


@dataclass(frozen=True, slots=True)
class RealConsumerSpec:
    group: str
    client_id: str
    topics: tuple[str, ...]
    protocol: str = "classic"  # classic | consumer
    assignor: str | None = "range"
    commit: str = "auto"  # auto | sync | async
    instance_id: str | None = None
    max_per_second: float | None = None  # throttle (lagging)
    stall_after_s: float | None = None  # stop polling after this many seconds (stalled)


REAL_SCENARIOS = ("steady", "lagging", "stalled", "kip848", "storm", "static-restart")


def plan(scenarios: Iterable[str] | str, seed: int = 0) -> tuple[list[TopicSpec], list[RealConsumerSpec]]:
    """Topics and consumers for the scenarios that make sense with real clients (others are skipped).

    Raises:
        ValueError: an unknown scenario name.
    """
    rng = random.Random(seed)
    topics: list[TopicSpec] = []
    specs: list[RealConsumerSpec] = []
    for sc in resolve(scenarios):
        n = sc.name
        if n == "steady":
            topics += [TopicSpec("real-orders", 6, 20.0)]
            for assignor, commit in (("range", "auto"), ("roundrobin", "sync"), ("cooperative-sticky", "async")):
                specs += [RealConsumerSpec(f"real-{assignor}", f"real-{assignor}-m{i}", ("real-orders",),
                                           assignor=assignor, commit=commit) for i in (1, 2)]
        elif n == "lagging":
            topics += [TopicSpec("real-clicks", 4, 100.0)]
            specs += [RealConsumerSpec("real-lagging", "real-lagging-m1", ("real-clicks",), max_per_second=50.0)]
        elif n == "stalled":
            topics += [TopicSpec("real-events", 4, 20.0)]
            specs += [RealConsumerSpec("real-stalled", f"real-stalled-m{i}", ("real-events",),
                                       stall_after_s=20.0 if i == 2 else None) for i in (1, 2)]
        elif n == "kip848":
            topics += [TopicSpec("real-alpha", 6, 20.0)]
            specs += [RealConsumerSpec("real-kip848", f"real-kip848-c{i}", ("real-alpha",), protocol="consumer",
                                       assignor=None, commit="sync") for i in (1, 2, 3)]
        elif n == "storm":
            topics += [TopicSpec("real-storm", 8, 20.0)]
            specs += [RealConsumerSpec("real-storm", f"real-storm-m{i}", ("real-storm",),
                                       assignor="cooperative-sticky") for i in (1, 2, 3)]
        elif n == "static-restart":
            topics += [TopicSpec("real-static", 6, 20.0)]
            specs += [RealConsumerSpec("real-static", f"real-static-s{i}", ("real-static",),
                                       instance_id=f"real-static-instance-{i}") for i in (1, 2)]
    rng.shuffle(specs)  # start order varies with the seed, like real deployments
    return topics, specs


def consumer_config(spec: RealConsumerSpec, bootstrap: str, extra: Mapping[str, str] | None = None) -> dict:
    """librdkafka settings for one consumer (user ``extra`` settings such as SASL/SSL pass through)."""
    conf = {"bootstrap.servers": bootstrap, "group.id": spec.group, "client.id": spec.client_id,
            "enable.auto.commit": "true" if spec.commit == "auto" else "false",
            "auto.offset.reset": "earliest", "log_level": "3"}
    if spec.protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if spec.assignor:
            conf["group.remote.assignor"] = spec.assignor
    else:
        conf["partition.assignment.strategy"] = spec.assignor or "range"
        conf["session.timeout.ms"] = "10000"
        conf["heartbeat.interval.ms"] = "1000"
        if spec.stall_after_s is not None:
            conf["max.poll.interval.ms"] = "30000"
    if spec.instance_id:
        conf["group.instance.id"] = spec.instance_id
    conf.update(extra or {})
    return conf


class RealConsumerRunner:
    """Runs real consumers and a producer until :meth:`stop`. Constructing connects to nothing."""

    def __init__(self, bootstrap: str, topics: Sequence[TopicSpec], specs: Sequence[RealConsumerSpec], *,
                 extra: Mapping[str, str] | None = None, create_topics: bool = True) -> None:
        self.bootstrap, self.topics, self.specs = bootstrap, list(topics), list(specs)
        self.extra = dict(extra or {})
        self.create_topics = create_topics
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.consumed: dict[str, int] = {}

    def start(self) -> RealConsumerRunner:
        from confluent_kafka.admin import AdminClient, NewTopic

        if self.create_topics and self.topics:
            admin = AdminClient(with_logger({"bootstrap.servers": self.bootstrap, **self.extra}))
            futures = admin.create_topics([NewTopic(t.name, t.partitions, 1) for t in self.topics])
            for f in futures.values():
                try:
                    f.result(30)
                except Exception as exc:  # TOPIC_ALREADY_EXISTS is fine
                    if "TOPIC_ALREADY_EXISTS" not in str(exc):
                        raise
        self._spawn(self._produce)
        for spec in self.specs:
            self._spawn(lambda spec=spec: self._consume(spec))
        return self

    def _spawn(self, fn) -> None:
        t = threading.Thread(target=fn, daemon=True)
        t.start()
        self._threads.append(t)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        prod = Producer(with_logger({"bootstrap.servers": self.bootstrap, "linger.ms": "20", **self.extra}))
        t0 = time.monotonic()
        sent: dict[tuple[str, int], int] = {}
        while not self._stop.wait(0.2):
            el = time.monotonic() - t0
            for t in self.topics:
                for p in range(t.partitions):
                    want = int(el * t.rate)
                    for _ in range(want - sent.get((t.name, p), 0)):
                        prod.produce(t.name, value=b"groupscope", partition=p)
                    sent[(t.name, p)] = want
            prod.poll(0)
        prod.flush(10)

    def _consume(self, spec: RealConsumerSpec) -> None:
        from confluent_kafka import Consumer, KafkaException

        try:
            c = Consumer(with_logger(consumer_config(spec, self.bootstrap, self.extra)))
            c.subscribe(list(spec.topics))
            t0 = time.monotonic()
            n = 0
            while not self._stop.is_set():
                if spec.stall_after_s is not None and time.monotonic() - t0 > spec.stall_after_s:
                    self._stop.wait(0.5)  # the application stopped polling
                    continue
                msg = c.poll(0.2)
                if msg is None or msg.error():
                    continue
                n += 1
                self.consumed[spec.client_id] = n
                if spec.commit in ("sync", "async") and n % 10 == 0:
                    try:
                        c.commit(asynchronous=spec.commit == "async")
                    except KafkaException:
                        pass
                if spec.max_per_second:
                    time.sleep(1.0 / spec.max_per_second)
            c.close()
        except Exception as exc:  # reported by stop()
            self.errors.append(f"{spec.client_id}: {type(exc).__name__}: {exc}")

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
