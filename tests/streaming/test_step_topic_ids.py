"""A shard step learns topic names from Kafka 4.1+ offset commits, as the record-by-record replay does.

From Kafka 4.1 the coordinator no longer writes a consumer group's subscription metadata (the record that named
its topic ids), and an offset commit value v4 carries the topic id instead. The step replays commits from its
vectorized columns, not through the record-by-record path; without taking the id from there, a KIP-848 member's
partitions kept their ids and no lag row named its owner (seen against a real Kafka 4.4 broker).
"""

from __future__ import annotations

import pyarrow as pa

from protocol import Uuid
from protocol.builders import (new_consumer_group_epoch, new_consumer_group_member, new_current_assignment,
                               new_offset_commit)
from protocol.codec import encode_record
from streaming.job.step import ShardStep, StepConfig
from streaming.schema.tables import SOURCE

SHARD = 7
T0 = 1_767_225_600_000
TOPIC_ID = Uuid(bytes(range(16)))


def test_a_v4_commit_names_the_topic_of_a_consumer_group_member_assignment():
    records = [
        new_consumer_group_member("g", "m1", client_id="c1", subscribed_topic_names=["orders"]),
        new_consumer_group_epoch("g", 1),
        new_current_assignment("g", "m1", member_epoch=1, previous_member_epoch=0, assigned={TOPIC_ID: [0, 1]}),
        new_offset_commit("g", "orders", 0, 5, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
        new_offset_commit("g", "orders", 1, 6, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
    ]
    rows = []
    for offset, record in enumerate(records):
        key, value = encode_record(record)
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD,
                     "offset": offset, "timestamp": (T0 + offset) * 1000})
    step = ShardStep(SHARD, StepConfig())
    step.process(pa.Table.from_pylist(rows, schema=SOURCE), wall_ms=T0 + 10_000)
    (member,) = step.model.member_views("g")
    assert member.assignment == (("orders", 0), ("orders", 1))
    snapshot = step.model.snapshot_groups(["g"], T0 + 10_000)[0]
    assert {(p.topic, p.partition): p.owner for p in snapshot.partitions} == {("orders", 0): "m1", ("orders", 1): "m1"}
