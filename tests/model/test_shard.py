"""The shard as the entry point of the model: records dispatched by type, offsets of unknown groups creating
Kafka's simple group, transactional commits held until their marker, tombstones, heartbeats in every accepted
shape, snapshots that are queries and evaluations that record statuses, and the state round trip."""

from __future__ import annotations

import pytest

from protocol import UnknownRecord, Uuid
from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.lag import EndOffsetSample
from streaming.model.rules import Status
from streaming.model.shard import CoordinatorModel, GroupCoordinatorShard

T0 = 1_800_000_000_000


def replay(shard: GroupCoordinatorShard, offset: int, record, **kw) -> None:
    shard.replay(offset, T0 + offset, decode_record(*encode_record(record)), **kw)


def commit(group: str, partition: int, offset: int, topic: str = "t", **kw):
    return b.new_offset_commit(group, topic, partition, offset, commit_timestamp=T0, **kw)


def test_offsets_of_an_unknown_group_make_a_simple_classic_group():
    s = GroupCoordinatorShard(3)
    replay(s, 0, commit("g", 0, 42))
    (created,) = s.drain_events()
    assert isinstance(created, ev.GroupCreated) and created.group_id == "g" and created.group_type.name == "CLASSIC"
    assert s.groups["g"].is_simple and s.offsets.get("g", "t", 0)[0] == 42
    assert (s.last_offset, s.last_timestamp) == (0, T0)


def test_offset_tombstone_reports_the_deletion_once():
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 1))
    s.drain_events()
    replay(s, 1, b.new_offset_commit_tombstone("g", "t", 0))
    replay(s, 2, b.new_offset_commit_tombstone("g", "t", 0))  # nothing left to delete
    (deleted,) = s.drain_events()
    assert isinstance(deleted, ev.OffsetDeleted) and (deleted.topic, deleted.partition, deleted.offset) == ("t", 0, 1)


def test_transactional_commit_waits_for_its_marker():
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 7), producer_id=55, transactional=True)
    assert s.offsets.get("g", "t", 0) is None
    s.replay_end_txn_marker(55, "COMMIT", 1, T0 + 1)
    ended = [e for e in s.drain_events() if isinstance(e, ev.TransactionEnded)]
    assert [(e.group_id, e.producer_id, e.committed, e.applied, e.skipped) for e in ended] == [("g", 55, True, 1, 0)]
    assert s.offsets.get("g", "t", 0)[0] == 7 and s.last_offset == 1


@pytest.mark.parametrize("control", ["commit", 1, "ABORT", 0])
def test_marker_types_by_name_or_code(control):
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 7), producer_id=1, transactional=True)
    s.replay_end_txn_marker(1, control, 1, T0)
    committed = control in ("commit", 1)
    assert (s.offsets.get("g", "t", 0) is not None) == committed


@pytest.mark.parametrize("control", ["LEADER_CHANGE", 2, -1])
def test_other_control_types_are_refused(control):
    with pytest.raises(ValueError, match="COMMIT or ABORT|0 \\(ABORT\\) or 1 \\(COMMIT\\)"):
        GroupCoordinatorShard(0).replay_end_txn_marker(1, control)


def test_unknown_records_are_counted_and_reported_once_per_type_and_version():
    s = GroupCoordinatorShard(0)
    for i in range(3):
        s.replay(i, T0, UnknownRecord(99, 0, b"\x00\x63", b"\x00\x00", "unknown record type 99"))
    s.replay(3, T0, UnknownRecord(99, 1, b"\x00\x63", b"\x00\x01", "unknown record type 99"))
    anomalies = [e for e in s.drain_events() if isinstance(e, ev.Anomaly)]
    assert s.unknown_records == 4 and len(anomalies) == 2
    assert anomalies[0].reason == "skipped: unknown record type 99"


def test_group_tombstone_deletes_the_group_but_its_offsets_stay():
    s = GroupCoordinatorShard(0)
    replay(s, 0, b.new_empty_group_metadata("g", generation=1, protocol_type="consumer", current_state_timestamp=T0))
    replay(s, 1, commit("g", 0, 5))
    s.drain_events()
    replay(s, 2, b.new_group_metadata_tombstone("g"))
    assert [e.kind for e in s.drain_events()] == ["GroupDeleted"]
    assert "g" not in s.groups and s.group_ids() == ["g"]  # offsets left: still listed (Dead)


@pytest.mark.parametrize(
    "given, expected",
    [
        (100, (100, -1, -1)),
        ((100,), (100, -1, -1)),
        ((100, 90, 5), (100, 90, 5)),
        (EndOffsetSample(100, 95, 1), (100, 95, 1)),
    ],
)
def test_heartbeat_end_offsets_in_every_shape(given, expected):
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 5))
    s.apply_heartbeat(T0 + 10, {("t", 0): given})
    h = s.ends[("t", 0)]
    assert (h.hwm, h.lso, h.lwm, h.time_ms) == (*expected, T0 + 10)


def test_heartbeat_refuses_other_shapes_and_ignores_untracked_topics():
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 5))
    with pytest.raises(ValueError, match="expected EndOffsetSample"):
        s.apply_heartbeat(T0, {("t", 0): (1, 2, 3, 4)})
    s.apply_heartbeat(T0, {("nobody-reads", 0): 10})
    assert ("nobody-reads", 0) not in s.ends


def test_heartbeat_topic_ids_name_the_ids_of_modern_records():
    s = GroupCoordinatorShard(0)
    tid = Uuid(bytes(range(16)))
    s.apply_heartbeat(T0, {}, topic_ids={"orders": tid})
    assert s.topic_names[tid] == "orders"


def test_snapshot_is_a_query_and_evaluate_records_statuses():
    s = GroupCoordinatorShard(0)
    replay(s, 0, commit("g", 0, 90))
    s.apply_heartbeat(T0 + 1_000, {("t", 0): 100})
    s.drain_events()
    first = s.snapshot()
    assert first == s.snapshot() and s.drain_events() == []
    (g,) = first.groups
    assert (g.group_id, g.sum_lag, g.partitions[0].lag, g.partitions[0].log_end) == ("g", 10, 10, 100)
    s.evaluate()
    changed = [e for e in s.drain_events() if isinstance(e, ev.StatusChanged)]
    assert [(e.topic, e.partition, e.old, e.new) for e in changed] == [("t", 0, None, Status.OK)]
    s.evaluate()
    assert not [e for e in s.drain_events() if isinstance(e, ev.StatusChanged)]  # unchanged: nothing new


def test_state_bytes_round_trip():
    s = GroupCoordinatorShard(5)
    replay(s, 0, commit("g", 0, 90))
    replay(s, 1, commit("h", 2, 7, topic="u"), producer_id=3, transactional=True)
    s.apply_heartbeat(T0 + 1_000, {("t", 0): 100})
    back = GroupCoordinatorShard.from_bytes(s.to_bytes())
    assert back.to_state() == s.to_state()
    assert back.snapshot() == s.snapshot()


def test_coordinator_model_keeps_one_shard_per_partition_in_order():
    model = CoordinatorModel()
    replay(model.shard(7), 0, commit("g", 0, 1))
    replay(model.shard(2), 0, commit("h", 0, 1))
    assert model.shard(7) is model.shard(7)
    assert [s.partition for s in model] == [2, 7]
    assert [e.group_id for e in model.drain_events()] == ["h", "g"]
    model.apply_heartbeat(T0, {("t", 0): 5})
    assert [len(snap.groups) for snap in model.snapshot()] == [1, 1]
