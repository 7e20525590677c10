"""The executor side of a micro-batch (``streaming.job.bulk_files``): the bulk tables become Parquet data files
where they were computed, and only their add actions travel to the driver. Plain pyarrow, no Spark."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.job.batch_sink import FILES_PREFIX, collect_outputs, decode_table
from streaming.job.bulk_files import BulkWrite, step_rows
from streaming.schema.tables import COMMITS, TABLES

UTC = dt.timezone.utc


def _commits(days: list[dt.date]) -> pa.Table:
    rows = [{"shard": 2, "offset": i, "record_time": dt.datetime(d.year, d.month, d.day, 12, tzinfo=UTC),
             "group_id": "g", "topic": "t", "partition": 0, "committed_offset": 100 + i, "leader_epoch": 0,
             "metadata": "", "commit_time": None, "expire_time": None, "is_tombstone": False, "value_version": 3,
             "record_date": d} for i, d in enumerate(days)]
    return pa.Table.from_pylist(rows, schema=COMMITS)


def _groups() -> pa.Table:
    return pa.Table.from_pylist([], schema=TABLES["groups"])


def test_without_a_bulk_write_every_table_travels_as_its_rows():
    commits = _commits([dt.date(2026, 1, 1)])
    rows = step_rows(2, {"commits": commits, "groups": _groups()})
    assert [(shard, kind) for shard, kind, _ in rows] == [(2, "commits"), (2, "groups")]
    assert decode_table(rows[0][2]).equals(commits)


def test_a_bulk_table_is_written_as_files_partitioned_by_day_and_replaced_by_their_add_actions(tmp_path):
    commits = _commits([dt.date(2026, 1, 1), dt.date(2026, 1, 1), dt.date(2026, 1, 2)])
    bulk = BulkWrite(str(tmp_path), frozenset({"commits"}))
    rows = step_rows(2, {"commits": commits, "groups": _groups()}, bulk)
    assert [kind for _, kind, _ in rows] == [FILES_PREFIX + "commits", "groups"]
    actions = json.loads(rows[0][2])
    assert sorted(a["partition_values"]["record_date"] for a in actions) == ["2026-01-01", "2026-01-02"]
    read = 0
    for action in actions:
        path = tmp_path / "commits" / action["path"]
        assert path.is_file() and action["size"] == path.stat().st_size
        assert path.parent.name == "record_date=" + action["partition_values"]["record_date"]
        data = pq.read_table(path)
        assert "record_date" not in data.column_names, "Delta keeps the partition column in the add action"
        assert json.loads(action["stats"])["numRecords"] == data.num_rows
        read += data.num_rows
    assert read == 3


def test_a_bulk_table_the_driver_still_needs_is_written_and_passed_on(tmp_path):
    commits = _commits([dt.date(2026, 1, 1)])
    bulk = BulkWrite(str(tmp_path), frozenset({"commits"}), also_to_driver=frozenset({"commits"}))
    rows = step_rows(5, {"commits": commits}, bulk)
    assert [kind for _, kind, _ in rows] == [FILES_PREFIX + "commits", "commits"]
    result = collect_outputs(1, rows)
    assert result.tables["commits"].num_rows == 1
    assert len(result.files["commits"]) == 1 and Path(tmp_path / "commits" / result.files["commits"][0]["path"]).exists()


def test_an_empty_bulk_table_writes_no_file(tmp_path):
    rows = BulkWrite(str(tmp_path), frozenset({"commits"})).rows(0, {"commits": _commits([])})
    assert rows == [(0, FILES_PREFIX + "commits", b"[]")]
    assert not any(tmp_path.rglob("*.parquet"))
