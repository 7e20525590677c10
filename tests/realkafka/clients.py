"""Real Kafka clients driven into a known set of consumer groups, then held still at a quiet point.

The comparison tests need groups of every kind a production cluster has, made by the clients that make them there:
librdkafka consumers on the classic protocol (eager range, cooperative-sticky, a static member), librdkafka on the
KIP-848 consumer protocol, Kafka's own Java consumer, a transactional consume-transform-produce loop with aborted
transactions, a group that only commits (no membership), and the operator's actions (offsets reset backwards, a
deleted group, deleted offsets). Live members keep polling on their own threads, so they stay in their groups
while the tests compare; nothing commits after the quiet point, so Kafka's answers and groupscope's stay put.

Every name starts with the driver's prefix, so scenarios of different tests on the shared broker never meet.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.realkafka.broker import KafkaBroker
from tests.realkafka.tools import consumer_groups, delete_group, reset_offsets

#: Messages produced to every partition of a live group's topic before its members join.
MESSAGES_PER_PARTITION = 20


def committed_target(end: int, partition: int) -> int:
    """Where a live librdkafka group commits: behind the log end by a partition-dependent amount, so every
    partition has its own, non-zero lag."""
    return max(0, end - 3 - partition)


@dataclass(frozen=True)
class LiveGroup:
    """A group whose members stay connected: the quiet point waits until Kafka says it is Stable like this."""

    group: str
    topic: str
    partitions: int
    members: int
    protocol: str  # "classic" or "consumer"
    commits_everything: bool = False  # the Java consumer commits what it consumed; the others commit behind


def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               detail: Callable[[], str] = lambda: "") -> object:
    """Polls ``predicate`` until it is truthy; fails naming ``what`` (and ``detail()``) after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{detail()}")
        time.sleep(0.25)


class PolledConsumer:
    """A librdkafka consumer polled on its own thread (so it keeps its membership and its max.poll.interval),
    committing only when told to."""

    def __init__(self, bootstrap: str, group: str, topic: str, **conf: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                                  "enable.auto.commit": False, "log_level": 3, **conf})
        self.consumer.subscribe([topic])
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._poll, name=f"consumer-{group}", daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                message = self.consumer.poll(0.1)
            if message is not None and message.error():
                self.errors.append(str(message.error()))
            time.sleep(0.02)

    def assignment(self) -> list[TopicPartition]:
        with self._lock:
            return self.consumer.assignment()

    def commit(self, offsets: list[TopicPartition]) -> None:
        with self._lock:
            self.consumer.commit(offsets=offsets, asynchronous=False)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


@dataclass
class ScenarioDriver:
    """Creates the scenario on ``broker`` under ``prefix`` and keeps its live clients running until ``close``."""

    broker: KafkaBroker
    prefix: str
    live: list[LiveGroup] = field(default_factory=list)
    inactive: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    _consumers: list[PolledConsumer] = field(default_factory=list)
    _java: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": 3})
        self.producer = Producer({"bootstrap.servers": self.broker.bootstrap, "linger.ms": 5, "log_level": 3})

    def name(self, what: str) -> str:
        return f"{self.prefix}-{what}"

    # ---- topics ------------------------------------------------------------------------------------------------

    def topic(self, what: str, partitions: int, messages: int = MESSAGES_PER_PARTITION) -> str:
        """A new topic with ``messages`` records in each partition."""
        topic = self.name(what)
        for future in self.admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            future.result(30)
        for p in range(partitions):
            for i in range(messages):
                self.producer.produce(topic, value=b"%d" % i, partition=p)
        assert self.producer.flush(30) == 0
        return topic

    # ---- live groups -------------------------------------------------------------------------------------------

    def librdkafka_group(self, what: str, partitions: int, members: int, **conf: str) -> LiveGroup:
        """``members`` librdkafka consumers in one group, on a topic of their own."""
        group, topic = self.name(what), self.topic(what, partitions)
        for i in range(members):
            instance = {"group.instance.id": f"{conf['group.instance.id']}-{i}"} if "group.instance.id" in conf else {}
            self._consumers.append(PolledConsumer(self.broker.bootstrap, group, topic,
                                                  **{"client.id": f"{what}-{i}", **conf, **instance}))
        spec = LiveGroup(group, topic, partitions, members, conf.get("group.protocol", "classic"))
        self.live.append(spec)
        return spec

    def java_group(self, what: str, partitions: int, assignor: str) -> LiveGroup:
        """Kafka's own Java consumer (``VerifiableConsumer``), committing everything it consumed."""
        group, topic = self.name(what), self.topic(what, partitions)
        command = self.broker.install.java_command(
            "org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", self.broker.bootstrap,
            "--topic", topic, "--group-id", group, "--reset-policy", "earliest",
            "--assignment-strategy", f"org.apache.kafka.clients.consumer.{assignor}", heap="128m")
        self._java.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           stdin=subprocess.DEVNULL, start_new_session=True))
        spec = LiveGroup(group, topic, partitions, 1, "classic", commits_everything=True)
        self.live.append(spec)
        return spec

    def wait_stable(self, timeout: float = 90) -> None:
        """Waits until Kafka describes every live group as Stable with all its members, every partition assigned
        once and (KIP-848) every member at its target assignment; then the librdkafka members commit."""
        wait_until(self._all_stable, timeout, "every live group to be Stable", lambda: f": {self._describe_live()}")
        ends = self.end_offsets([g.topic for g in self.live])
        for consumer in self._consumers:
            tps = consumer.assignment()
            if tps:
                consumer.commit([TopicPartition(tp.topic, tp.partition,
                                                committed_target(ends[(tp.topic, tp.partition)], tp.partition))
                                 for tp in tps])
        java = [g for g in self.live if g.commits_everything]
        wait_until(lambda: all(self.committed(g.group) == {k: v for k, v in ends.items() if k[0] == g.topic}
                               for g in java), timeout, "the Java consumer to commit everything")

    def _describe_live(self) -> dict[str, object]:
        described = self.admin.describe_consumer_groups([g.group for g in self.live])
        out = {}
        for group, future in described.items():
            try:
                out[group] = future.result(10)
            except KafkaException as exc:
                out[group] = exc
        return out

    def _all_stable(self) -> bool:
        described = self._describe_live()
        for spec in self.live:
            d = described[spec.group]
            if isinstance(d, Exception) or str(d.state).rsplit(".", 1)[-1] != "STABLE" \
                    or len(d.members) != spec.members:
                return False
            owned = [(tp.topic, tp.partition) for m in d.members for tp in m.assignment.topic_partitions]
            if sorted(owned) != [(spec.topic, p) for p in range(spec.partitions)]:
                return False
            if spec.protocol == "consumer" and any(
                    m.target_assignment is None or sorted((tp.topic, tp.partition) for tp in m.target_assignment
                                                          .topic_partitions)
                    != sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
                    for m in d.members):
                return False
        return True

    # ---- groups without members --------------------------------------------------------------------------------

    def consume_and_leave(self, group: str, topics: list[str], **conf: str) -> None:
        """A member that reads every message of ``topics``, commits where it got to and leaves (the group is
        Empty with its offsets)."""
        ends = self.end_offsets(topics)
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": group, "log_level": 3,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf})
        consumer.subscribe(topics)
        seen: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + 60
        while any(seen.get(tp, 0) < end for tp, end in ends.items() if end) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                seen[(message.topic(), message.partition())] = message.offset() + 1
        consumer.commit(asynchronous=False)
        consumer.close()
        assert self.committed(group) == {tp: end for tp, end in ends.items() if end}, group

    def reset_backwards(self, what: str, to_offset: int) -> str:
        """A group that consumed its topic, left, and was reset to an earlier offset by the operator."""
        group, topic = self.name(what), self.topic(what, 2)
        self.consume_and_leave(group, [topic])
        reset_offsets(self.broker, group, topic, to_offset)
        self.inactive.append(group)
        return group

    def deleted_group(self, what: str) -> str:
        group, topic = self.name(what), self.topic(what, 1)
        self.consume_and_leave(group, [topic])
        delete_group(self.broker, group)
        self.deleted.append(group)
        return group

    def deleted_offsets(self, what: str) -> str:
        """A group that read two topics and had the offsets of one deleted (``--delete-offsets``)."""
        group = self.name(what)
        kept, dropped = self.topic(f"{what}-kept", 2), self.topic(f"{what}-dropped", 2)
        self.consume_and_leave(group, [kept, dropped])
        consumer_groups(self.broker, "--delete-offsets", "--group", group, "--topic", dropped)
        self.inactive.append(group)
        return group

    def simple_commits(self, what: str) -> str:
        """Commits by a consumer that assigned partitions itself: the group has offsets and never had a member."""
        group, topic = self.name(what), self.topic(what, 2)
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": group, "log_level": 3,
                             "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 11)], asynchronous=False)
        consumer.close()
        self.inactive.append(group)
        return group

    def transactional(self, what: str, transactions: int = 6, aborted: tuple[int, ...] = (1, 4)) -> str:
        """A consume-transform-produce loop: each transaction reads a few records, writes them to an output topic
        and commits the input offsets with ``send_offsets_to_transaction``; the transactions numbered in
        ``aborted`` are aborted (and the consumer rewound), the last is committed. The group is left Empty."""
        group, source = self.name(what), self.topic(what, 2)
        sink = self.topic(f"{what}-out", 1, messages=0)
        consumer = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": group, "log_level": 3,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        producer = Producer({"bootstrap.servers": self.broker.bootstrap, "transactional.id": group,
                             "log_level": 3})
        producer.init_transactions(30)
        consumer.subscribe([source])
        position: dict[tuple[str, int], int] = {}  # the next offset to read, as of the last committed transaction
        for n in range(transactions):
            read = dict(position)
            producer.begin_transaction()
            got = 0
            while got < 5:
                message = consumer.poll(0.5)
                if message is None or message.error():
                    continue
                producer.produce(sink, value=message.value(), key=message.key())
                read[(message.topic(), message.partition())] = message.offset() + 1
                got += 1
            producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in sorted(read.items())],
                                                 consumer.consumer_group_metadata(), 30)
            if n in aborted:
                producer.abort_transaction(30)
                for (t, p), o in read.items():  # read again what the aborted transaction had read
                    if o != position.get((t, p)):
                        consumer.seek(TopicPartition(t, p, position.get((t, p), 0)))
            else:
                producer.commit_transaction(30)
                position = read
        consumer.close()
        self.inactive.append(group)
        return group

    # ---- reading back ------------------------------------------------------------------------------------------

    def end_offsets(self, topics: list[str]) -> dict[tuple[str, int], int]:
        reader = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": self.name("probe"),
                           "log_level": 3})
        try:
            ends = {}
            for topic in topics:
                meta = reader.list_topics(topic, timeout=10).topics[topic]
                for p in meta.partitions:
                    ends[(topic, p)] = reader.get_watermark_offsets(TopicPartition(topic, p), 10, cached=False)[1]
            return ends
        finally:
            reader.close()

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        result = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}

    def close(self) -> None:
        """Stops every client this driver started (the Java consumers by their own process ids)."""
        for consumer in self._consumers:
            consumer.close()
        for proc in self._java:
            proc.terminate()
        for proc in self._java:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self._consumers.clear()
        self._java.clear()


def build_scenario(broker: KafkaBroker, prefix: str) -> ScenarioDriver:
    """The whole scenario the comparison tests share, brought to its quiet point: every kind of group above."""
    driver = ScenarioDriver(broker, prefix)
    try:
        driver.transactional("txn")
        driver.reset_backwards("reset", to_offset=5)
        driver.deleted_group("gone")
        driver.deleted_offsets("trim")
        driver.simple_commits("simple")
        driver.librdkafka_group("range", 3, 2, **{"partition.assignment.strategy": "range"})
        driver.librdkafka_group("coop", 4, 2, **{"partition.assignment.strategy": "cooperative-sticky"})
        driver.librdkafka_group("static", 2, 1, **{"group.instance.id": f"{prefix}-static"})
        driver.librdkafka_group("kip848", 4, 2, **{"group.protocol": "consumer"})
        driver.java_group("java", 3, "RoundRobinAssignor")
        driver.wait_stable()
    except BaseException:
        driver.close()
        raise
    return driver
