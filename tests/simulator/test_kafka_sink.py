"""The simulator against a real Kafka-protocol broker over TCP: librdkafka's mock cluster.

Records are produced to ``__consumer_offsets`` (partitioned by the group hash) and read back with a confluent-kafka
consumer in ``isolation.level=read_committed``; decoded with ``protocol.codec.decode_record`` and replayed, they
rebuild exactly the simulated groups. Topic high watermarks grow with the simulated produce rates.

Mock-cluster limitation (measured, see ``kafka_sink.py``): it writes real COMMIT/ABORT markers but does not hide
aborted records from read_committed consumers, so the sink drops aborted transactions and produces committed ones
at their marker.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from protocol.codec import decode_record
from protocol.partitioner import partition_for
from streaming.kafka.mock_cluster import MockCluster
from streaming.model.describe import describe
from streaming.model.shard import CoordinatorModel
from streaming.simulator import Simulation, project
from streaming.simulator.kafka_sink import KafkaSink


def _read_all(bootstrap: str, hws: dict[int, int]) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "groupscope-test", "enable.auto.commit": "false",
                  "isolation.level": "read_committed", "fetch.queue.backoff.ms": "0", "log_level": "3"})
    try:
        c.assign([TopicPartition("__consumer_offsets", p, 0) for p, hw in hws.items() if hw > 0])
        out, deadline = [], time.monotonic() + 30
        while time.monotonic() < deadline:
            msgs = c.consume(1000, 0.3)
            out.extend(m for m in msgs if m.error() is None)
            positions = c.position([TopicPartition("__consumer_offsets", p) for p, hw in hws.items() if hw > 0])
            if not msgs and all(tp.offset >= hws[tp.partition] for tp in positions):
                return out
        raise AssertionError("timed out reading __consumer_offsets back")
    finally:
        c.close()


def test_scenarios_through_the_mock_cluster_rebuild_the_simulated_groups():
    with MockCluster() as mc:
        sink = KafkaSink(mc.bootstrap_servers, create_topic=mc.create_topic)
        sim = Simulation(["steady", "kip848", "transactional", "deletion"], seed=4)
        sim.run_until(20_000, sink)
        sink.flush()
        probe = Consumer({"bootstrap.servers": mc.bootstrap_servers, "group.id": "probe", "log_level": "3"})
        hw20 = probe.get_watermark_offsets(TopicPartition("steady-orders", 0), timeout=10)[1]
        sim.run_until(70_000, sink)
        sink.flush()
        hws = {p: probe.get_watermark_offsets(TopicPartition("__consumer_offsets", p), timeout=10)[1]
               for p in range(50)}
        hw70 = probe.get_watermark_offsets(TopicPartition("steady-orders", 0), timeout=10)[1]
        probe.close()
        msgs = _read_all(mc.bootstrap_servers, hws)
        sink.close()
    model = CoordinatorModel()
    groups_seen = set()
    for m in msgs:
        rec = decode_record(m.key(), m.value())
        gid = getattr(rec.key, "group", None) or rec.key.group_id
        assert m.partition() == partition_for(gid, 50)  # partitioned by the group hash
        groups_seen.add(gid)
        model.shard(m.partition()).replay(m.offset(), m.timestamp()[1], rec)
    assert {"steady-range", "kip848-uniform", "txn-classic", "deletion-classic"} <= groups_seen
    assert project(describe(model)) == sim.expected()
    # end offsets moved for real: 20 msg/s on steady-orders partition 0
    assert hw20 == sim.topics["steady-orders"].end_offset(0, sim.sched.start_ms + 20_000)
    assert hw70 == sim.end_offsets()[("steady-orders", 0)] > hw20 > 0
