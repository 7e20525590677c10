"""The driver's read model (``streaming/schema/read_model.py``): one conversion from the tables' rows, whichever way
they arrive, and the two meanings it settles for every reader (not judged; recent activity)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.rules import Status
from streaming.model.shard import GroupCoordinatorShard
from streaming.schema import tables
from streaming.schema.read_model import (BatchView, GroupActivity, GroupView, PartitionView, group_activity,
                                         judged_status)

T0 = 1_800_000_000_000


def _snapshots() -> dict[str, ev.GroupSnapshot]:
    """``lagging`` has a known log end (judged), ``unjudged`` commits to a topic no heartbeat covers."""
    shard = GroupCoordinatorShard(3)
    for offset, (gid, topic) in enumerate((("lagging", "t"), ("unjudged", "u"))):
        key, value = encode_record(b.new_offset_commit(gid, topic, 0, 10, commit_timestamp=T0 + 500))
        shard.replay(offset, T0 + 500, decode_record(key, value))
    shard.apply_heartbeat(T0 + 1_000, {("t", 0): 25})
    return {g.group_id: g for g in shard.snapshot(T0 + 2_000).groups}


def test_rows_as_built_and_as_read_back_from_arrow_are_the_same_view():
    """The job's rows carry times as epoch ms; Delta and Arrow give them back as ``datetime``: one view either way."""
    snapshots = _snapshots()
    rows = [tables.group_row(s, shard=3, now_ms=T0 + 2_000) for s in snapshots.values()]
    parts = [r for s in snapshots.values() for r in tables.partition_rows(s, shard=3, now_ms=T0 + 2_000)]
    back = tables.to_table("groups", rows).to_pylist()
    parts_back = pa.Table.from_pylist(parts, schema=tables.LAG).to_pylist()
    assert [GroupView.of_row(r) for r in rows] == [GroupView.of_row(r) for r in back]
    assert [PartitionView.of_row(r) for r in parts] == [PartitionView.of_row(r) for r in parts_back]
    lagging = GroupView.of_row(rows[0])
    assert (lagging.group_id, lagging.sum_lag, lagging.partition_count) == ("lagging", 15, 1)
    assert lagging.last_commit_ms == T0 + 500 and lagging.updated_ms == T0 + 2_000


def test_ok_for_want_of_an_end_offset_is_not_judged():
    snapshots = _snapshots()
    assert snapshots["unjudged"].status is Status.OK  # the model's rule keeps it OK
    views = {gid: GroupView.of_row(tables.group_row(s, shard=3, now_ms=T0 + 2_000)) for gid, s in snapshots.items()}
    assert views["unjudged"].status is None and not views["unjudged"].judged
    assert views["lagging"].status is snapshots["lagging"].status and views["lagging"].judged
    (unjudged_partition,) = tables.partition_rows(snapshots["unjudged"], shard=3, now_ms=T0 + 2_000)
    assert PartitionView.of_row(unjudged_partition).status is None


@pytest.mark.parametrize("name,lag,expected", [
    ("OK", None, None),  # OK only because nothing was measured
    ("OK", 0, Status.OK),
    ("WARN", None, Status.WARN),  # judged without end offsets: shown as it is
    ("ERR", None, Status.ERR),
    ("SOMETHING_NEW", 5, None),  # a newer job's status this version does not know
    (None, 5, None),
])
def test_judged_status(name, lag, expected):
    assert judged_status(name, lag) is expected


def test_a_row_without_a_group_id_is_refused():
    with pytest.raises(ValueError, match="group_id"):
        GroupView.of_row({"state": "STABLE"})


def _event(kind: str, group: str | None, at_ms: int, **more) -> dict:
    return {"kind": kind, "group_id": group, "event_time": at_ms, **more}


def test_activity_counts_rebalances_and_verdicts_since_a_moment():
    events = [_event("Rebalance", "g", T0), _event("Rebalance", "g", T0 + 60_000),
              _event("RollingRestart", "g", T0 + 90_000), _event("GroupDeleted", "gone", T0 + 1_000),
              _event("KafkaUnavailable", None, T0)]  # a cluster event names no group
    activity = group_activity(events)
    assert set(activity) == {"g", "gone"}
    g = activity["g"]
    assert (g.rebalances_since(T0), g.rebalances_since(T0 + 1), g.rebalances_since(T0 + 60_001)) == (2, 1, 0)
    assert g.verdict_since(T0 + 90_000) and not g.verdict_since(T0 + 90_001)
    assert (activity["gone"].last_event_kind, activity["gone"].last_event_ms) == ("GroupDeleted", T0 + 1_000)
    assert group_activity(events, since_ms=T0 + 1)["g"].rebalance_ms == (T0 + 60_000,)


def test_activity_of_a_later_batch_adds_to_the_earlier_one():
    earlier = GroupActivity((T0,), T0, T0, "Rebalance")
    later = GroupActivity((T0 + 5,), None, T0 + 5, "Rebalance")
    merged = earlier.merged(later)
    assert (merged.rebalance_ms, merged.last_verdict_ms, merged.last_event_ms) == ((T0, T0 + 5), T0, T0 + 5)
    assert merged.since(T0 + 1).rebalance_ms == (T0 + 5,)


def test_a_batch_names_its_deletions_and_anomalies():
    batch = BatchView.of_rows(
        [{"group_id": "g", "status": "OK", "sum_lag": 0}],
        [{"group_id": "g", "topic": "t", "partition": 0, "lag": 0, "status": "OK"}],
        [_event("OffsetDeleted", "g", T0, topic="t", partition=1), _event("GroupDeleted", "h", T0),
         _event("Anomaly", None, T0), _event("Anomaly", "g", T0), _event("StatusChanged", "g", T0)])
    assert [g.group_id for g in batch.groups] == ["g"]
    assert list(batch.partitions["g"]) == [("t", 0)]
    assert batch.deletions == {"g", "h"} and batch.offsets_deleted == (("g", "t", 1),)
    assert batch.anomalies == 2
    with pytest.raises(ValueError, match="topic/partition"):
        BatchView.of_rows(partition_rows=[{"group_id": "g", "topic": None, "partition": 0}])


def test_every_event_kind_read_by_name_is_an_event_of_the_model():
    """The read model picks events by kind name: a renamed event class must fail here, not silently count nothing."""
    from streaming.schema.read_model import ACTIVITY_EVENT_KINDS
    from streaming.sinks.state_store import STORE_EVENT_KINDS

    for kind in (*ACTIVITY_EVENT_KINDS, *STORE_EVENT_KINDS):
        assert issubclass(getattr(ev, kind), ev.Event), kind


def _recorded_group_rows() -> list[dict]:
    """The group rows of real recordings two thirds of the way through (members, topics, rebalance causes and
    verdicts filled in), as the job builds them."""
    return [tables.group_row(s, shard=1, now_ms=T0) for s in _recorded_snapshots()]


def _recorded_snapshots() -> list[ev.GroupSnapshot]:
    """The groups of real recordings two thirds of the way through."""
    from streaming.offline.recording import load_recording
    from tests.conftest import captures_dir

    snapshots: list[ev.GroupSnapshot] = []
    for name in ("storm_crashloop", "kip848_storm_and_rolling", "rewind", "rolling_restart_classic"):
        recording = load_recording(captures_dir() / "conformance" / "verdicts" / name)
        at = recording.samples[len(recording.samples) * 2 // 3]
        shards: dict[int, GroupCoordinatorShard] = {}
        for r in recording.records:
            shard = shards.setdefault(r.partition, GroupCoordinatorShard(r.partition))
            if r.key is not None and r.timestamp <= at.t_ms:
                shard.replay(r.offset, r.timestamp, decode_record(r.key, r.value))
        for shard in shards.values():
            shard.apply_heartbeat(at.t_ms, {tp: ends[0] for tp, ends in at.ends.items()})
            snapshots += shard.snapshot(at.t_ms).groups
    return snapshots


def test_a_table_of_groups_is_the_views_of_its_rows():
    """The column-wise path the driver takes for a batch equals the row path, on groups as the job builds them and
    as read back."""
    from streaming.job.batch_sink import BatchResult, table_rows

    rows = _recorded_group_rows()
    table = tables.to_table("groups", rows)
    views = GroupView.of_table(table)
    assert len(views) >= 5 and all(v.members and v.rebalance_causes and v.topics and v.verdict for v in views)
    assert views == tuple(GroupView.of_row(r) for r in table_rows(BatchResult(0, {"groups": table}), "groups"))
    assert views == tuple(GroupView.of_row(r) for r in rows)
    assert GroupView.of_table(table.slice(1, 3)) == views[1:4]  # a slice's nested lists start mid-buffer
    assert GroupView.of_table(pa.concat_tables([table.slice(0, 2), table.slice(2)])) == views  # two chunks
    assert GroupView.of_table(table.select(["group_id", "sum_lag"])) == tuple(
        GroupView.of_row({"group_id": v.group_id, "sum_lag": v.sum_lag}) for v in views)


def test_a_table_of_partitions_is_the_views_of_its_rows():
    from streaming.job.batch_sink import BatchResult, table_rows

    rows = [r for s in _recorded_snapshots() for r in tables.partition_rows(s, shard=1, now_ms=T0)]
    table = pa.Table.from_pylist(rows, schema=tables.LAG)
    views = PartitionView.of_table(table)
    assert len(views) >= 5 and any(v.owner for _, _, v in views) and any(v.lag for _, _, v in views)
    by_rows = [PartitionView.of_row(r) for r in table_rows(BatchResult(0, {"lag": table}), "lag")]
    assert [v for _, _, v in views] == by_rows == [PartitionView.of_row(r) for r in rows]
    assert [(g, k) for g, k, _ in views] == [(r["group_id"], (r["topic"], r["partition"])) for r in rows]
    assert BatchView.of_rows(partition_rows=table).partitions == BatchView.of_rows(partition_rows=rows).partitions
    with pytest.raises(ValueError, match="without topic/partition"):
        PartitionView.of_table(pa.Table.from_pylist([{**rows[0], "topic": None}], schema=tables.LAG))


def test_a_table_row_without_a_group_id_is_refused():
    table = tables.to_table("groups", [{"group_id": None, "state": "STABLE"}])
    with pytest.raises(ValueError, match="group_id"):
        GroupView.of_table(table)
