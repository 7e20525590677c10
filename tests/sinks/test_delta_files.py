"""Data files written away from the driver and committed by it: the rows read back are the rows written, once.

The executor side (``job.bulk_files.BulkWrite``) is driven here with the step's real output tables, without Spark;
the job's end-to-end test runs the same path on local Spark and on a standalone cluster.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
from deltalake import DeltaTable

from streaming.job.batch_sink import BatchSink, encode_table
from streaming.job.bulk_files import BulkWrite, step_rows
from streaming.schema.tables import COMMITS, TABLES
from streaming.sinks.delta import DeltaSink


def _commits(shard: int, n: int, day: dt.date) -> pa.Table:
    base = 1_795_000_000_000 + (day - dt.date(2026, 11, 20)).days * 86_400_000
    return pa.table({
        "shard": pa.array([shard] * n, pa.int32()), "offset": pa.array(range(n), pa.int64()),
        "record_time": pa.array([base + i for i in range(n)], pa.timestamp("ms", tz="UTC")),
        "group_id": [f"g{shard}"] * n, "topic": ["t"] * n, "partition": pa.array([i % 3 for i in range(n)], pa.int32()),
        "committed_offset": pa.array([10 * i for i in range(n)], pa.int64()),
        "leader_epoch": pa.array([None] * n, pa.int32()), "metadata": [""] * n,
        "commit_time": pa.array([base + i for i in range(n)], pa.timestamp("ms", tz="UTC")),
        "expire_time": pa.array([None] * n, pa.timestamp("ms", tz="UTC")),
        "is_tombstone": [False] * n, "value_version": pa.array([3] * n, pa.int16()),
        "record_date": pa.array([day] * n, pa.date32()),
    }, schema=COMMITS)


def _run_batch(sink: DeltaSink, batch_id: int, outputs: dict[int, dict[str, pa.Table]]):
    """Each shard's step output through the executor side, then the driver's commit."""
    bulk = BulkWrite(sink.root, frozenset({"commits"}))
    rows = [row for shard, tables in outputs.items() for row in step_rows(shard, tables, bulk)]
    return rows, BatchSink(delta=sink).handle(batch_id, rows)


def test_executor_written_commits_are_committed_once_and_read_back_exactly(tmp_path):
    sink = DeltaSink(tmp_path / "delta", app_id="t")
    sink.prepare_append_tables(["commits"])
    a = _commits(3, 40, dt.date(2026, 11, 23))
    b = pa.concat_tables([_commits(7, 25, dt.date(2026, 11, 23)), _commits(7, 5, dt.date(2026, 11, 24))])
    outputs = {3: {"commits": a}, 7: {"commits": b}}
    rows, result = _run_batch(sink, 0, outputs)

    # Only add actions travel on: no commits payload reaches the driver.
    assert {k for _s, k, _p in rows} == {"files:commits"}
    assert sum(len(json.loads(p)) for _s, _k, p in rows) == 3  # one file per shard and day
    assert "commits" not in result.tables
    assert result.written == {"commits": 70}

    got = sink.read("commits").sort_by([("shard", "ascending"), ("record_date", "ascending"), ("offset", "ascending")])
    want = pa.concat_tables([a, b]).sort_by([("shard", "ascending"), ("record_date", "ascending"),
                                             ("offset", "ascending")])
    assert got.cast(TABLES["commits"]).to_pylist() == want.to_pylist()

    # The same batch again (a replay after a crash): new files are written but never committed.
    _rows, again = _run_batch(sink, 0, outputs)
    assert again.written == {"commits": 0}
    assert sink.read("commits").num_rows == 70
    # The next batch is committed.
    _rows, nxt = _run_batch(sink, 1, {3: {"commits": _commits(3, 4, dt.date(2026, 11, 24))}})
    assert nxt.written == {"commits": 4}
    assert sink.read("commits").num_rows == 74


def test_rows_the_driver_needs_are_passed_on_as_well(tmp_path):
    sink = DeltaSink(tmp_path / "delta", app_id="t")
    sink.prepare_append_tables(["commits"])
    commits = _commits(1, 3, dt.date(2026, 11, 24))
    groups = pa.table({"group_id": ["g1"]})
    out = step_rows(1, {"commits": commits, "groups": groups},
                    BulkWrite(sink.root, frozenset({"commits"}), also_to_driver=frozenset({"commits"})))
    assert [kind for _shard, kind, _payload in out] == ["files:commits", "commits", "groups"]
    assert out[1][2] == encode_table(commits) and out[2][2] == encode_table(groups)
    # Without a bulk write every table travels as a payload.
    assert step_rows(1, {"commits": commits}) == [(1, "commits", encode_table(commits))]


def test_data_files_are_split_by_partition_value_without_the_partition_columns(tmp_path):
    """One Parquet file per partition value, under Hive-style folders (a null value in Delta's default folder);
    the partition column lives in the add action, not in the file; the stats count each file's rows."""
    import pyarrow.parquet as pq

    from streaming.sinks.delta_files import add_action_fields, row_count, write_data_files

    table = pa.table({"day": ["2026-11-28", "2026-11-28", None, "a b"], "n": [1, 2, 3, 4]})
    actions = write_data_files(str(tmp_path), table, ["day"])
    by_value = {a["partition_values"]["day"]: a for a in actions}
    assert set(by_value) == {"2026-11-28", None, "a b"}
    assert by_value[None]["path"].startswith("day=__HIVE_DEFAULT_PARTITION__/")
    assert by_value["a b"]["path"].startswith("day=a%20b/")
    assert row_count(actions) == 4 and json.loads(by_value["2026-11-28"]["stats"]) == {"numRecords": 2}
    stored = pq.read_table(tmp_path / by_value["2026-11-28"]["path"])
    assert stored.column_names == ["n"] and sorted(stored.column("n").to_pylist()) == [1, 2]
    assert all((tmp_path / a["path"]).stat().st_size == a["size"] for a in actions)
    assert add_action_fields(actions[0])["data_change"] is True


def test_an_empty_table_writes_no_file(tmp_path):
    from streaming.sinks.delta_files import write_data_files

    assert write_data_files(str(tmp_path), pa.table({"n": pa.array([], pa.int64())}), []) == []
    assert not any(tmp_path.iterdir())


def test_rows_passed_on_to_the_driver_are_not_written_again(tmp_path):
    """With per-partition metrics the ``lag`` rows reach the driver as well as their files: the table gets the
    executor's file once, and the driver writes no second copy."""
    sink = DeltaSink(tmp_path / "delta", app_id="t")
    sink.prepare_append_tables(["commits"])
    commits = _commits(3, 40, dt.date(2026, 11, 23))
    rows = step_rows(3, {"commits": commits},
                     BulkWrite(sink.root, frozenset({"commits"}), also_to_driver=frozenset({"commits"})))
    result = BatchSink(delta=sink).handle(0, rows)
    assert result.tables["commits"].num_rows == 40  # the driver has its copy
    assert result.written == {"commits": 40}
    assert sink.read("commits").num_rows == 40
    on_disk = sorted(p.relative_to(tmp_path / "delta" / "commits").as_posix()
                     for p in (tmp_path / "delta" / "commits").rglob("*.parquet"))
    assert on_disk == sorted(a["path"] for a in result.files["commits"])  # no file but the executor's


def test_a_shards_few_rows_are_written_by_the_driver_with_the_executors_files_in_one_commit(tmp_path):
    """Live, a shard has a few hundred commits a batch: those reach the driver, which writes them all as one file
    and commits it with the files of the shards that had many, once; a replay commits nothing again."""
    sink = DeltaSink(tmp_path / "delta", app_id="t")
    sink.prepare_append_tables(["commits"])
    bulk = BulkWrite(sink.root, frozenset({"commits"}), inline_below=30)
    few_a, few_b = _commits(3, 10, dt.date(2026, 11, 23)), _commits(5, 29, dt.date(2026, 11, 24))
    many = _commits(7, 30, dt.date(2026, 11, 23))
    rows = [row for shard, t in ((3, few_a), (5, few_b), (7, many)) for row in step_rows(shard, {"commits": t}, bulk)]
    assert [(s, k) for s, k, _ in rows] == [(3, "unwritten:commits"), (5, "unwritten:commits"), (7, "files:commits")]
    result = BatchSink(delta=sink).handle(0, rows)
    assert "commits" not in result.tables and result.unwritten["commits"].num_rows == 39
    assert result.written == {"commits": 69}
    key = [("shard", "ascending"), ("offset", "ascending")]
    assert sink.read("commits").cast(COMMITS).sort_by(key).to_pylist() == \
        pa.concat_tables([few_a, few_b, many]).sort_by(key).to_pylist()
    assert DeltaTable(sink.path("commits")).version() == 1  # the table's creation, then one commit for the batch
    assert BatchSink(delta=sink).handle(0, rows).written == {"commits": 0}
    assert sink.read("commits").num_rows == 69
