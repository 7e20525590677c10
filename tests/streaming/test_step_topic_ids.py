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


def offsets_rows(records) -> pa.Table:
    """The records as the source hands them to the step: ``__consumer_offsets`` rows of one shard."""
    rows = []
    for offset, record in enumerate(records):
        key, value = encode_record(record)
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD,
                     "offset": offset, "timestamp": (T0 + offset) * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def test_a_v4_commit_names_the_topic_of_a_consumer_group_member_assignment():
    records = [
        new_consumer_group_member("g", "m1", client_id="c1", subscribed_topic_names=["orders"]),
        new_consumer_group_epoch("g", 1),
        new_current_assignment("g", "m1", member_epoch=1, previous_member_epoch=0, assigned={TOPIC_ID: [0, 1]}),
        new_offset_commit("g", "orders", 0, 5, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
        new_offset_commit("g", "orders", 1, 6, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
    ]
    step = ShardStep(SHARD, StepConfig())
    step.process(offsets_rows(records), wall_ms=T0 + 10_000)
    (member,) = step.model.member_views("g")
    assert member.assignment == (("orders", 0), ("orders", 1))
    snapshot = step.model.snapshot_groups(["g"], T0 + 10_000)[0]
    assert {(p.topic, p.partition): p.owner for p in snapshot.partitions} == {("orders", 0): "m1", ("orders", 1): "m1"}


def test_a_heartbeat_names_the_topic_a_member_was_assigned_but_never_committed_to():
    """Without a commit nothing in ``__consumer_offsets`` names the topic: the heartbeat's ``topic_ids`` does, as
    the broker's metadata (and so Kafka's tools) would."""
    from streaming.schema.heartbeat_format import encode_heartbeats

    records = [
        new_consumer_group_member("g", "m1", client_id="c1", subscribed_topic_names=["orders"]),
        new_consumer_group_epoch("g", 1),
        new_current_assignment("g", "m1", member_epoch=1, previous_member_epoch=0, assigned={TOPIC_ID: [0, 1]}),
    ]
    step = ShardStep(SHARD, StepConfig())
    step.process(offsets_rows(records), wall_ms=T0 + 1_000)
    (member,) = step.model.member_views("g")
    assert member.assignment != (("orders", 0), ("orders", 1))  # only the id is known so far
    ends = [("orders", 0, 10, 10, 0), ("orders", 1, 12, 12, 0)]
    (value,) = encode_heartbeats(T0 + 2_000, "e", 1, ends, topic_ids=[("orders", str(TOPIC_ID)), ("x", "bad")])
    heartbeat = {"key": b"e", "value": value, "topic": StepConfig().heartbeat_topic, "partition": 0, "offset": 0,
                 "timestamp": (T0 + 2_000) * 1000}
    step.process(pa.Table.from_pylist([heartbeat], schema=SOURCE), wall_ms=T0 + 2_000)
    (member,) = step.model.member_views("g")
    assert member.assignment == (("orders", 0), ("orders", 1))
