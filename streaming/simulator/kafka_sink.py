"""Produces the simulator's records to a Kafka-protocol broker (librdkafka's mock cluster), so they move for real.

* Coordinator records go to topic ``__consumer_offsets`` (or ``offsets_topic``), partition ``partition_for(group,
  N)``, key and value exactly as encoded. Each :class:`~.sinks.Append` is produced and flushed before the next
  producer writes, so the log keeps the simulator's order across producers.
* Transactional appends go through a real transactional producer per simulated producer id (``transactional.id``
  ``<prefix>-<pid>``), so the broker writes real COMMIT/ABORT control batches. librdkafka's mock cluster writes the
  markers but does NOT hide aborted records from read_committed consumers (measured: an aborted record is
  delivered under both isolation levels; it returns no aborted-transaction list in fetch responses). So by default
  (``aborted="drop"``) a transaction's records are held until its marker: COMMIT produces them in a real
  transaction that is committed, ABORT drops them. A read_committed reader then sees exactly what it would see on a
  real broker, except that committed transactional records land at marker time rather than before plain commits
  written while the transaction was open (the simulator's EOS apps never mix the two). ``aborted="produce"``
  produces aborted transactions for real (for brokers that filter them).
* The consumed topics get real messages: at every topic tick the sink produces up to the simulated end offsets,
  so high watermarks move for real.

Differences from a real broker's own writes (unavoidable when a client produces them): batch headers carry the
producing client's fields (idempotent producer id and sequence, the producer's batching) instead of the
coordinator's (producer id -1, base sequence 0, one batch per operation); a real Apache Kafka refuses client writes to
``__consumer_offsets`` altogether (use ``real_consumers`` there).
"""

from __future__ import annotations

from typing import Callable, Mapping

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from streaming.kafka.client import with_logger

from .sinks import Append, Marker

__all__ = ["KafkaSink", "MissingTopics"]


class MissingTopics(RuntimeError):
    """The broker lacks topics the scenarios write and would not create them (the message lists them)."""


class KafkaSink:
    """Constructing connects to nothing; :meth:`open` (called by the simulation) creates topics and producers.

    ``create_topic(name, partitions)`` creates a topic (e.g. ``MockCluster.create_topic``); without it the topics
    must exist. ``max_messages_per_tick`` bounds how many messages one tick produces per partition.
    """

    def __init__(self, bootstrap_servers: str, *, offsets_topic: str = "__consumer_offsets",
                 create_topic: Callable[[str, int], None] | None = None, produce_messages: bool = True,
                 transactional_id_prefix: str = "groupscope-sim", message_bytes: int = 64,
                 max_messages_per_tick: int = 100_000, aborted: str = "drop",
                 config: Mapping[str, str] | None = None) -> None:
        if aborted not in ("drop", "produce"):
            raise ValueError(f"aborted must be drop or produce, got {aborted!r}")
        self.aborted = aborted
        self._held: dict[int, list[Append]] = {}
        self.bootstrap_servers = bootstrap_servers
        self.offsets_topic = offsets_topic
        self.create_topic = create_topic
        self.produce_messages = produce_messages
        self.transactional_id_prefix = transactional_id_prefix
        self.payload = b"x" * message_bytes
        self.max_messages_per_tick = max_messages_per_tick
        self.config = dict(config or {})
        self._producer: Producer | None = None
        self._txn: dict[int, Producer] = {}
        self._open_txn: set[int] = set()
        self._produced: dict[tuple[str, int], int] = {}
        self._partitions: dict[str, int] = {}
        self.records = 0
        self.messages = 0

    def _conf(self, **extra) -> dict:
        """A client's settings; its librdkafka log lines go through Python logging (``groupscope.librdkafka``, as
        the job's), never raw to the terminal."""
        conf = {"bootstrap.servers": self.bootstrap_servers, "log_level": "3", "linger.ms": "5"}
        conf.update(self.config)
        conf.update(extra)
        return with_logger(conf)

    def open(self, topics: Mapping[str, int], offsets_partitions: int) -> dict[tuple[str, int], int]:
        wanted = {self.offsets_topic: offsets_partitions, **topics}
        self._partitions = dict(wanted)  # what the broker has: messages go only to partitions that exist
        if self.create_topic is not None:
            for name, n in wanted.items():
                self.create_topic(name, n)
        else:
            self._create_with_admin(wanted)
        self._producer = Producer(self._conf(**{"enable.idempotence": "true"}))
        bases = self._watermarks(topics)
        self._produced = dict(bases)
        return bases

    def _create_with_admin(self, wanted: Mapping[str, int]) -> None:
        """Best effort CreateTopics (a real Kafka); then every topic must exist with enough partitions.

        Raises:
            KafkaException: a topic is missing or has fewer partitions than the simulation needs.
        """
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self._conf())
        md = admin.list_topics(timeout=10)
        missing = [NewTopic(n, p, 1) for n, p in wanted.items() if n not in md.topics]
        if missing:
            for f in admin.create_topics(missing, operation_timeout=10).values():
                try:
                    f.result(15)
                except Exception:
                    pass  # checked below
            md = admin.list_topics(timeout=10)
        short = []
        for name, n in wanted.items():
            t = md.topics.get(name)
            have = 0 if t is None or t.error is not None else len(t.partitions)
            if have < n:
                short.append(f"{name} ({n} partitions" + (f", has {have})" if have else ")"))
        if short:
            raise MissingTopics(f"the broker at {self.bootstrap_servers} lacks topics the scenarios write, and did not "
                                f"create them: {', '.join(short)}. Create them first (kafka-topics.sh --create "
                                "--topic NAME --partitions N), or run `groupscope demo`, whose embedded broker has "
                                "them")

    def _watermarks(self, topics: Mapping[str, int]) -> dict[tuple[str, int], int]:
        consumer = Consumer(self._conf(**{"group.id": "groupscope-sim-watermarks", "enable.auto.commit": "false"}))
        try:
            out = {}
            for name, n in topics.items():
                for p in range(n):
                    out[(name, p)] = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1]
            return out
        finally:
            consumer.close()

    def _txn_producer(self, pid: int) -> Producer:
        prod = self._txn.get(pid)
        if prod is None:
            prod = self._txn[pid] = Producer(self._conf(**{"transactional.id": f"{self.transactional_id_prefix}-{pid}"}))
            prod.init_transactions(30)
        return prod

    def append(self, batch: Append) -> None:
        topic, part = self.offsets_topic, batch.partition
        if batch.transactional:
            self._held.setdefault(batch.producer_id, []).append(batch)
        else:
            for key, value in batch.records:
                self._produce(self._producer, topic, key, value, part, batch.timestamp)
        self.records += len(batch.records)

    @staticmethod
    def _produce(prod: Producer, topic: str, key, value, partition: int, timestamp: int) -> None:
        while True:
            try:
                prod.produce(topic, key=key, value=value, partition=partition, timestamp=timestamp)
                return
            except BufferError:  # local queue full: let deliveries drain
                prod.poll(0.05)

    def marker(self, marker: Marker) -> None:
        held = self._held.pop(marker.producer_id, None)
        if held is None:
            return  # one Marker per offsets partition; the broker writes them all when the transaction ends
        if not marker.commit and self.aborted == "drop":
            return
        self._producer.flush(30)  # keep the log in simulation order across producers
        prod = self._txn_producer(marker.producer_id)
        prod.begin_transaction()
        self._open_txn.add(marker.producer_id)
        for batch in held:
            for key, value in batch.records:
                prod.produce(self.offsets_topic, key=key, value=value, partition=batch.partition,
                             timestamp=batch.timestamp)
        if marker.commit:
            prod.commit_transaction(30)
        else:
            prod.abort_transaction(30)
        self._open_txn.discard(marker.producer_id)

    def advance_topics(self, ends: Mapping[tuple[str, int], int], now_ms: int) -> None:
        if not self.produce_messages or self._producer is None:
            return
        for (topic, p), end in ends.items():
            if p >= self._partitions.get(topic, p + 1):
                continue  # a partition the broker could not add (mock cluster): its end stays simulated only
            done = self._produced.get((topic, p), 0)
            n = min(end - done, self.max_messages_per_tick)
            for _ in range(max(0, n)):
                self._produce(self._producer, topic, None, self.payload, p, now_ms)
            if n > 0:
                self._produced[(topic, p)] = done + n
                self.messages += n
        self._producer.poll(0)

    def add_partitions(self, topic: str, total: int) -> None:
        """CreatePartitions where the broker supports it (a real Kafka); librdkafka's mock cluster cannot grow a
        topic, so there the added partitions get no messages (their simulated end offsets still grow)."""
        if self.create_topic is not None:
            return
        from confluent_kafka.admin import AdminClient, NewPartitions

        try:
            for f in AdminClient(self._conf()).create_partitions([NewPartitions(topic, total)]).values():
                f.result(15)
            self._partitions[topic] = total
        except Exception:  # noqa: BLE001 - best effort, documented above
            pass

    def flush(self) -> None:
        if self._producer is not None:
            remaining = self._producer.flush(30)
            if remaining:
                raise KafkaException(f"{remaining} messages not delivered to {self.bootstrap_servers}")

    def close(self) -> None:
        self.flush()
        for pid in list(self._open_txn):
            self._txn[pid].abort_transaction(30)
        self._open_txn.clear()
        self._txn.clear()
        self._producer = None
