"""Delta writers: delta-rs and delta-spark (with Delta's jars) exactly once per batch id."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from streaming.sinks.delta import DeltaSink
from streaming.schema.tables import COMMITS, GROUPS, PARTITION_COLUMNS


def commits(n: int, start: int = 0) -> pa.Table:
    rows = [{"shard": 1, "offset": start + i, "record_time": 1_767_225_600_000 + i, "group_id": "g", "topic": "t",
             "partition": i % 3, "committed_offset": i, "leader_epoch": 0, "metadata": "", "commit_time": 0,
             "expire_time": None, "is_tombstone": False, "value_version": 3, "record_date": None} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=COMMITS)


def group(gid: str, state: str, deleted: bool = False) -> dict:
    row = dict.fromkeys(GROUPS.names)
    row.update(group_id=gid, shard=1, group_type="CLASSIC", state=state, member_count=0, members=[], topics=[],
               partition_count=0, deleted=deleted, updated_time=1)
    return row


def test_a_replayed_batch_writes_nothing_twice(tmp_path):
    sink = DeltaSink(tmp_path, app_id="t")
    assert sink.write_batch(0, {"commits": commits(5)}) == {"commits": 5}
    assert sink.write_batch(0, {"commits": commits(5)}) == {"commits": 0}  # replay after a crash
    assert sink.write_batch(1, {"commits": commits(3, 5)}) == {"commits": 3}
    assert sink.read("commits").num_rows == 8
    assert sink.written_version("commits") == 1


def test_groups_are_merged_and_deleted_groups_removed(tmp_path):
    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, {"groups": pa.Table.from_pylist([group("a", "STABLE"), group("b", "STABLE")], schema=GROUPS)})
    sink.write_batch(1, {"groups": pa.Table.from_pylist([group("a", "EMPTY"), group("a", "STABLE"),
                                                         group("b", "DEAD", deleted=True), group("c", "EMPTY")],
                                                        schema=GROUPS)})
    rows = {r["group_id"]: r["state"] for r in sink.read("groups").to_pylist()}
    assert rows == {"a": "STABLE", "c": "EMPTY"}


def test_delta_spark_writer_with_deltas_jars(delta_spark_session, tmp_path):
    # Delta's jars are fetched with Maven (tests/sinks/conftest.py); the writers compared on every table:
    # tests/sinks/test_delta_spark.py.
    from streaming.sinks.delta_spark import DeltaSparkSink

    sink = DeltaSparkSink(delta_spark_session, str(tmp_path), app_id="t")
    assert sink.write_batch(0, {"commits": commits(4)}) == {"commits": 4}
    assert sink.write_batch(0, {"commits": commits(4)}) == {"commits": 0}  # replay after a crash
    assert DeltaSink(tmp_path, app_id="t").read("commits").num_rows == 4
    assert DeltaSink(tmp_path, app_id="t").written_version("commits") == 0
    older_groups_table(tmp_path)  # the merge gains the columns an older table lacks, as delta-rs's does
    sink.write_batch(1, newer_groups_batch())
    rows = {r["group_id"]: (r["catch_up_seconds"], r["catching_up"])
            for r in DeltaSink(tmp_path, app_id="t").read("groups").to_pylist()}
    assert rows == {"a": (42.5, True), "b": (None, False)}


NEW_COLUMNS = ("catch_up_seconds", "catching_up", "max_lag_seconds_method")  # added later: older tables lack them


def older_groups_table(path) -> None:
    """A ``groups`` table as a version before the catch-up columns wrote it."""
    from deltalake import write_deltalake

    old = pa.schema([f for f in GROUPS if f.name not in NEW_COLUMNS])
    write_deltalake(str(path / "groups"), pa.Table.from_pylist([group("a", "STABLE")], schema=old))


def newer_groups_batch() -> dict[str, pa.Table]:
    row = {**group("a", "STABLE"), "catch_up_seconds": 42.5, "catching_up": True, "max_lag_seconds_method": "measured"}
    return {"groups": pa.Table.from_pylist([row, {**group("b", "STABLE"), "catching_up": False}], schema=GROUPS)}


def test_an_older_groups_table_gains_the_catch_up_columns(tmp_path):
    older_groups_table(tmp_path)
    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, newer_groups_batch())
    rows = {r["group_id"]: (r["catch_up_seconds"], r["catching_up"]) for r in sink.read("groups").to_pylist()}
    assert rows == {"a": (42.5, True), "b": (None, False)}
    assert {r["group_id"]: r["max_lag_seconds_method"] for r in sink.read("groups").to_pylist()} == \
        {"a": "measured", "b": None}


# The lag table's lag_seconds_method came later too: both writers, and the data files executors write, add it to a
# table written before it (null in its older rows).

def lag_rows(methods: dict[int, str | None]) -> pa.Table:
    from streaming.schema.tables import LAG

    rows = [{**dict.fromkeys(LAG.names), "snapshot_time": 1_767_225_600_000, "shard": 1, "group_id": "g", "topic": "t",
             "partition": p, "committed_offset": 1, "lag": 5, "lag_seconds": 60.0, "lag_seconds_method": m,
             "status": "OK", "snapshot_date": dt.date(2026, 1, 1)} for p, m in methods.items()]
    return pa.Table.from_pylist(rows, schema=LAG)


def older_lag_table(path) -> None:
    """A ``lag`` table as a version before ``lag_seconds_method`` wrote it (partition 0's row)."""
    from deltalake import write_deltalake

    old = lag_rows({0: None})
    old = old.drop_columns(["lag_seconds_method"])
    write_deltalake(str(path / "lag"), old, partition_by=PARTITION_COLUMNS["lag"])


def methods_in(path) -> dict[int, str | None]:
    return {r["partition"]: r["lag_seconds_method"] for r in DeltaSink(path, app_id="t").read("lag").to_pylist()}


def test_an_older_lag_table_gains_the_method_column_from_the_driver_and_from_executors_files(tmp_path):
    from streaming.sinks.delta_files import write_data_files

    older_lag_table(tmp_path)
    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, {"lag": lag_rows({1: "measured"})})
    sink.prepare_append_tables(["lag"])
    sink.commit_files(1, "lag", write_data_files(str(tmp_path / "lag"), lag_rows({2: "interpolated"}),
                                                 PARTITION_COLUMNS["lag"]))
    assert methods_in(tmp_path) == {0: None, 1: "measured", 2: "interpolated"}


@pytest.mark.spark
def test_an_older_lag_table_gains_the_method_column_from_delta_spark(delta_spark_session, tmp_path):
    from streaming.sinks.delta_spark import DeltaSparkSink

    older_lag_table(tmp_path)
    DeltaSparkSink(delta_spark_session, str(tmp_path), app_id="t").write_batch(0, {"lag": lag_rows({1: "measured"})})
    assert methods_in(tmp_path) == {0: None, 1: "measured"}
