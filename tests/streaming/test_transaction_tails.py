"""Aborted transactions at the end of a partition are not lag: the heartbeat's ``quiet`` rows, what the model makes
of them, and the emitter publishing them. Which tails the probe reads is in ``tests/kafka/test_tail_probe.py``; what
the shard step makes of a quiet tail, in ``tests/job/test_step.py``.

What runs against librdkafka's mock cluster (a real Kafka-protocol broker over TCP): the emitter publishing the
quiet offset it found. The mock cluster falls short of a real broker in two ways that matter here, so two stand-ins are
named where they are used: it never reports an open transaction's last stable offset below the high watermark, and
it does not send the aborted-transaction list, so its ``read_committed`` consumers receive aborted records. Which
records a consumer gets from a real broker is librdkafka's filtering; what is tested here is what groupscope does
with the answer.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.kafka.mock_cluster import MockCluster
from streaming.model import state_v1
from streaming.model.lag import EndOffsetHistory, EndOffsetSample, offset_lag
from streaming.schema.heartbeat_format import decode_heartbeat, encode_heartbeats
from tests.kafka.transactions import transactional_tail

T0 = 1_767_225_600_000


# ---- the model: a quiet tail is not lag --------------------------------------------------------------------------

@pytest.mark.parametrize("committed, hwm, lso, quiet, want", [
    (6, 18, 18, 6, 0),  # read everything before an aborted transaction (11 records and the marker)
    (9, 18, 18, 6, 0),  # committed inside the aborted stretch (a consumer that got them from a read_uncommitted read)
    (5, 18, 18, 6, 13),  # one real record before the quiet stretch is still unread: everything counts
    (6, 18, 18, -1, 12),  # nothing known about the tail
])
def test_a_quiet_tail_counts_as_read(committed, hwm, lso, quiet, want):
    assert offset_lag(committed, hwm, lso, True, quiet)[1] == want


def test_a_quiet_offset_only_speaks_for_the_end_it_was_read_at():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(18, 18, 0, T0, quiet_from=6))
    assert h.lag(6) == (18, 0)
    assert h.time_lag(6, T0 + 60_000) == (0.0, False)
    h.observe(EndOffsetSample(30, 30, 0, T0 + 5_000))  # new records: the probe said nothing about them
    assert h.lag(6) == (30, 24)
    h.observe(EndOffsetSample(40, 35, 0, T0 + 10_000, quiet_from=30))  # a transaction open: nothing is quiet
    assert h.quiet_from == -1 and h.lag(30)[1] == 5
    h.observe(EndOffsetSample(40, 40, 0, T0 + 15_000, quiet_from=40))  # not below the end: says nothing
    assert h.quiet_from == -1


def test_the_quiet_offset_survives_a_state_round_trip_and_old_state_has_none():
    h = EndOffsetHistory()
    h.observe(EndOffsetSample(18, 18, 0, T0, quiet_from=6))
    assert EndOffsetHistory.from_state(h.to_state()).lag(6) == (18, 0)
    old = (h.hwm, h.lso, h.lwm, h.time_ms, h.transactional, h.times.tobytes(), h.ends.tobytes(), h.capacity)
    assert state_v1._end_offsets(old).lag(6) == (18, 12)  # a version-1 state written before quiet tails existed


# ---- the heartbeat message ---------------------------------------------------------------------------------------

def test_quiet_rows_travel_with_their_partitions_end_offsets():
    ends = [("a", 0, 10, 10, 0), ("b", 0, 18, 18, 0), ("b", 1, 5, 5, 0)]
    one, two = encode_heartbeats(T0, "e", 1, ends, chunk_size=2, quiet=[("b", 1, 5, 2)])
    assert decode_heartbeat(one).quiet == ()
    assert b'"quiet"' not in one, "messages without quiet tails look as they always did"
    assert decode_heartbeat(two).quiet == (("b", 1, 5, 2),)


# ---- against a real Kafka-protocol broker -------------------------------------------------------------------------

def test_the_emitter_publishes_the_quiet_offset_it_read():
    with MockCluster(1) as mc:
        mc.create_topic("payments", 1)
        mc.create_topic("plain", 1)
        mc.create_topic("groupscope-heartbeat", 1)  # the mock cluster cannot answer CreateTopics
        end = transactional_tail(mc.bootstrap_servers)
        fill = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(3):
            fill.produce("plain", b"r%d" % i, partition=0)
        fill.flush(10)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, include="^(payments|plain)$",
                                   check_topic_config=False)
        for _ in range(3):  # the ends are seen; they stayed put for a tick: first looks; nothing new
            assert emitter.tick(), emitter.status.last_error
        emitter.stop()
        consumer = Consumer({"bootstrap.servers": mc.bootstrap_servers, "group.id": "t", "log_level": 3})
        consumer.assign([TopicPartition("groupscope-heartbeat", 0, 0)])
        beats = []
        while len(beats) < 3:
            m = consumer.poll(10)
            assert m is not None, f"only {len(beats)} heartbeats"
            beats.append(decode_heartbeat(m.value()))
        consumer.close()
        quiet = (("payments", 0, end, 6),)  # the COMMIT marker at 6: a consumer committed at 6 read everything
        assert [hb.quiet for hb in beats] == [(), quiet, quiet]
