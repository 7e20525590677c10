"""The output tables: every row builder fills exactly its table's columns, snapshots and events of a replayed
group become the rows the Delta tables and sinks read, and broken clocks become nulls instead of errors."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.rules import Status
from streaming.model.shard import GroupCoordinatorShard
from streaming.model.states import GroupType
from streaming.schema import tables as tb

T0 = 1_800_000_000_000  # 2027-01-15T08:00:00Z
DAY = dt.date(2027, 1, 15)


def _snapshot() -> ev.GroupSnapshot:
    member = b.new_classic_member("a", client_id="c", subscription=b.new_consumer_subscription(["t"]),
                                  assignment=b.new_consumer_assignment({"t": [0, 1]}))
    shard = GroupCoordinatorShard(4)
    recs = [b.new_group_metadata("g", generation=2, protocol_type="consumer", protocol="range", leader="a",
                                 members=[member], current_state_timestamp=T0),
            b.new_offset_commit("g", "t", 0, 90, commit_timestamp=T0),
            b.new_offset_commit("g", "t", 1, 40, commit_timestamp=T0 + 1)]
    for i, rec in enumerate(recs):
        shard.replay(i, T0, decode_record(*encode_record(rec)))
    shard.apply_heartbeat(T0 + 5_000, {("t", 0): 100, ("t", 1): 40})
    (snap,) = shard.snapshot(T0 + 5_000).groups
    return snap


def test_partition_columns_exist_in_their_tables():
    assert set(tb.TABLES) == set(tb.PARTITION_COLUMNS)
    for name, columns in tb.PARTITION_COLUMNS.items():
        for column in columns:
            assert tb.TABLES[name].field(column).type == pa.date32()


def test_group_row_fills_the_groups_table():
    row = tb.group_row(_snapshot(), shard=4, now_ms=T0 + 5_000)
    assert set(row) == set(tb.GROUPS.names)
    assert (row["group_id"], row["shard"], row["group_type"], row["generation"], row["member_count"]) == (
        "g", 4, "CLASSIC", 2, 1)
    assert (row["sum_lag"], row["max_lag"], row["partition_count"]) == (10, 10, 2)  # 100 - 90 and 40 - 40
    assert row["members"] == [{"member_id": "a", "client_id": "c", "host": "/127.0.0.1", "instance_id": None,
                               "partitions": 2, "member_epoch": None, "state": None}]
    assert row["last_commit_time"] == T0 + 1 and row["deleted"] is False
    table = tb.to_table("groups", [row])
    assert table.num_rows == 1 and table.schema == tb.GROUPS


def test_partition_rows_fill_the_lag_table():
    rows = tb.partition_rows(_snapshot(), shard=4, now_ms=T0 + 5_000)
    assert all(set(r) == set(tb.LAG.names) for r in rows)
    assert [(r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"]) for r in rows] == [
        (0, 90, 100, 10), (1, 40, 40, 0)]
    assert {r["snapshot_date"] for r in rows} == {DAY} and rows[0]["owner"] == "a"
    assert tb.to_table("lag", rows).num_rows == 2


def test_event_row_fills_the_group_events_table():
    event = ev.Rebalance("g", 7, T0, GroupType.CLASSIC, 3, 2, (ev.RebalanceCause.MEMBER_JOINED,), 1, 2, 1, 1, 4.5,
                         joined=("b",))
    row = tb.event_row(event, shard=4)
    assert set(row) == set(tb.GROUP_EVENTS.names)
    assert (row["kind"], row["group_type"], row["generation"], row["causes"]) == (
        "Rebalance", "CLASSIC", 3, ["member_joined"])
    assert (row["event_time"], row["event_date"]) == (T0, DAY)
    detail = json.loads(row["detail"])
    assert detail["joined"] == ["b"] and detail["previous_generation"] == 2
    assert tb.to_table("group_events", [row]).num_rows == 1


def test_status_changes_are_written_by_name():
    row = tb.event_row(ev.StatusChanged("g", 1, T0, "t", 0, None, Status.STOP, "no commits"), shard=0)
    assert (row["topic"], row["partition"], row["old"], row["new"]) == ("t", 0, None, "STOP")


@pytest.mark.parametrize("ms", [-1, 253_402_300_800_000, 10**18])
def test_broken_clocks_become_null_not_errors(ms):
    row = tb.event_row(ev.OffsetDeleted("g", 1, ms, "t", 0), shard=0)
    assert row["event_time"] is None
    assert row["event_date"] is None  # before the epoch, or a day past year 9999: no date either
    tb.to_table("group_events", [row])


def test_last_row_per_group_keeps_the_last_of_each_group_in_order():
    table = pa.table({"group_id": ["a", "b", "a", "c", "b"], "n": [1, 2, 3, 4, 5]})
    assert tb.last_row_per_group(table).to_pydict() == {"group_id": ["a", "c", "b"], "n": [3, 4, 5]}


def test_batch_tables_skips_empty_ones_and_casts_in_declared_order():
    events = pa.Table.from_pylist([tb.event_row(ev.OffsetDeleted("g", 1, T0, "t", 0), shard=0)])
    groups = tb.to_table("groups", [])
    out = list(tb.batch_tables({"groups": groups, "group_events": events}))
    assert [name for name, _ in out] == ["group_events"]
    assert out[0][1].schema == tb.GROUP_EVENTS
