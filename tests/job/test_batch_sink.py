"""The driver side of a micro-batch (``streaming.job.batch_sink``): the shard steps' output rows collected per table,
written to Delta once per batch id and handed to the metrics."""

from __future__ import annotations

import datetime as dt
import json
import logging

import pyarrow as pa
import pytest

from streaming.job.batch_sink import (COMPRESS_FROM_BYTES, FILES_PREFIX, BatchResult, BatchSink, collect_outputs, decode_health, decode_table,
                                      encode_health, encode_table, partition_rows_for_metrics, table_rows)
from streaming.job.lagging import LAGGING, LAGGING_SCHEMA
from streaming.job.step import METRICS_PARTITIONS, StepHealth
from streaming.schema.tables import LAG, TABLES


def _health(shard: int, **kw) -> StepHealth:
    fields = dict(records=10, decode_errors=0, unknown_records=0, heartbeats=1, last_offset=9,
                  offsets_high_watermark=10, offsets_last_stable=10, heartbeat_ms=1, caught_up=True, groups=1,
                  step_seconds=0.01)
    return StepHealth(shard=shard, **{**fields, **kw})


def _lag_rows(shard: int, partitions: list[int]) -> pa.Table:
    rows = [{f.name: None for f in LAG} | {"shard": shard, "group_id": "g", "topic": "t", "partition": p,
                                            "committed_offset": 5, "snapshot_date": dt.date(2026, 1, 1)}
            for p in partitions]
    return pa.Table.from_pylist(rows, schema=LAG)


def _plain_size(table: pa.Table) -> int:
    plain = pa.BufferOutputStream()
    with pa.ipc.new_stream(plain, table.schema) as writer:
        writer.write_table(table)
    return plain.getvalue().size


def test_a_large_table_survives_its_trip_as_a_compressed_payload():
    rows = 100_000
    table = pa.table({"group_id": ["payments-consumer"] * rows, "n": pa.array(range(rows), pa.int64())})
    assert table.nbytes >= COMPRESS_FROM_BYTES
    payload = encode_table(table)
    assert decode_table(payload).equals(table)
    assert len(payload) < _plain_size(table) / 2, "repeated names compress: fewer bytes cross Spark"


def test_a_small_table_travels_uncompressed():
    table = pa.table({"group_id": ["payments-consumer"] * 70, "n": pa.array(range(70), pa.int64())})
    payload = encode_table(table)
    assert decode_table(payload).equals(table)
    assert len(payload) == _plain_size(table), "a shard's few rows: not worth LZ4's cost per buffer"


def test_health_survives_its_trip():
    health = _health(3, caught_up=False, kafka_outages=2, full_snapshot=False)
    assert decode_health(encode_health(health)) == health


def test_each_tables_chunks_from_every_shard_become_one_table_of_its_schema():
    rows = [(1, "lag", encode_table(_lag_rows(1, [0, 1]))), (0, "health", encode_health(_health(1))),
            (0, "lag", encode_table(_lag_rows(0, [2]))), (0, "health", encode_health(_health(0)))]
    result = collect_outputs(7, rows)
    assert result.batch_id == 7
    assert result.tables["lag"].schema == TABLES["lag"]
    assert sorted(result.tables["lag"].column("partition").to_pylist()) == [0, 1, 2]
    assert [h.shard for h in result.health] == [0, 1], "health in shard order"


def test_driver_only_outputs_are_collected_with_their_own_schema():
    lagging = pa.table({"shard": pa.array([2], pa.int32()), "topic": ["t"], "partition": pa.array([0], pa.int32()),
                        "committed_offset": pa.array([4], pa.int64()), "lag": pa.array([6], pa.int64()),
                        "lag_seconds": [1.5]})
    result = collect_outputs(1, [(2, LAGGING, encode_table(lagging)),
                                 (2, METRICS_PARTITIONS, encode_table(_lag_rows(2, [3])))])
    assert result.tables[LAGGING].schema == LAGGING_SCHEMA and result.tables[LAGGING].num_rows == 1
    assert result.tables[METRICS_PARTITIONS].schema == LAG


def test_files_written_by_executors_are_gathered_per_table():
    one, two = {"path": "a.parquet", "size": 1}, {"path": "b.parquet", "size": 2}
    result = collect_outputs(1, [(0, FILES_PREFIX + "commits", json.dumps([one]).encode()),
                                 (1, FILES_PREFIX + "commits", json.dumps([two]).encode())])
    assert result.files == {"commits": [one, two]} and result.tables == {}


def test_an_unknown_output_is_warned_about_and_left_out(caplog):
    caplog.set_level(logging.WARNING, logger="groupscope.batch")
    result = collect_outputs(1, [(0, "mystery", b"\x00")])
    assert result.tables == {} and result.health == []
    assert [r.getMessage() for r in caplog.records] == ["unknown step output 'mystery' ignored"]


class _Delta:
    """Records what a Delta sink was asked to write."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def write_batch(self, batch_id, tables, files=None, unwritten=None):
        self.calls.append((batch_id, sorted(tables), files))
        return {name: t.num_rows for name, t in tables.items()}


def test_a_batch_goes_to_the_metrics_then_to_delta_then_to_the_listener():
    order: list[str] = []

    class _Ordered(_Delta):
        def write_batch(self, batch_id, tables, files=None, unwritten=None):
            order.append("delta")
            return super().write_batch(batch_id, tables)

    delta = _Ordered()
    sink = BatchSink(delta=delta, metrics=lambda r: order.append(f"metrics {r.written}"),
                     on_batch=lambda r: order.append(f"listener {r.written}"))
    result = sink.handle(4, [(0, "lag", encode_table(_lag_rows(0, [0, 1])))])
    assert delta.calls == [(4, ["lag"], None)], "no files: the two-argument write"
    assert order == ["metrics {}", "delta", "listener {'lag': 2}"], "the listener gets what Delta wrote"
    assert sink.last is result and result.seconds >= 0


def test_a_failed_delta_commit_fails_the_batch_after_the_metrics_took_it():
    class _Failing(_Delta):
        def write_batch(self, batch_id, tables, files=None, unwritten=None):
            raise OSError("disk full")

    seen: list[int] = []
    sink = BatchSink(delta=_Failing(), metrics=lambda r: seen.append(r.batch_id),
                     on_batch=lambda r: seen.append(-1))
    with pytest.raises(OSError, match="disk full"):
        sink.handle(7, [(0, "lag", encode_table(_lag_rows(0, [0])))])
    assert seen == [7] and sink.last is None, "no listener and no last batch for a batch Spark will run again"


def test_a_failing_metrics_update_still_waits_for_the_delta_commits():
    delta = _Delta()

    def metrics(result):
        raise ValueError("bad row")

    with pytest.raises(ValueError, match="bad row"):
        BatchSink(delta=delta, metrics=metrics).handle(3, [(0, "lag", encode_table(_lag_rows(0, [0])))])
    assert delta.calls == [(3, ["lag"], None)]


def test_executor_written_files_are_committed_with_the_batch():
    delta = _Delta()
    action = {"path": "x.parquet"}
    BatchSink(delta=delta).handle(5, [(0, FILES_PREFIX + "commits", json.dumps([action]).encode())])
    assert delta.calls == [(5, [], {"commits": [action]})]


def test_without_delta_or_metrics_a_batch_is_only_collected():
    result = BatchSink().handle(1, [(0, "health", encode_health(_health(0)))])
    assert result.written == {} and [h.shard for h in result.health] == [0]


@pytest.mark.parametrize("kinds, want", [
    (["lag"], [0, 1]),  # a full snapshot: the lag table's rows
    ([METRICS_PARTITIONS], [2]),  # between snapshots: the touched groups' rows
    ([], []),
])
def test_the_metrics_get_the_partition_rows_the_batch_has(kinds, want):
    tables = {"lag": _lag_rows(0, [0, 1]), METRICS_PARTITIONS: _lag_rows(0, [2])}
    result = collect_outputs(1, [(0, kind, encode_table(tables[kind])) for kind in kinds])
    assert partition_rows_for_metrics(result).column("partition").to_pylist() == want
    assert table_rows(result, "groups") == []


def test_rows_for_the_read_model_carry_times_as_epoch_milliseconds():
    """A datetime per time column cost more than the rest of a 10,000-group batch's rows: the read model gets epoch
    ms, the same instant whatever unit the column has, and a null stays None."""
    commit = dt.datetime(2026, 11, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    schema = pa.schema([("group_id", pa.string()), ("ms", pa.timestamp("ms", tz="UTC")),
                        ("us", pa.timestamp("us", tz="UTC")), ("plain", pa.timestamp("us"))])
    table = pa.Table.from_pylist([{"group_id": "g", "ms": commit, "us": commit, "plain": commit.replace(tzinfo=None)},
                                  {"group_id": "h", "ms": None, "us": None, "plain": None}], schema=schema)
    rows = table_rows(BatchResult(1, {"groups": table}), "groups")
    want = 1_793_534_400_123  # 2026-11-01T12:00:00.123Z, the microseconds truncated
    assert rows == [{"group_id": "g", "ms": want, "us": want, "plain": want},
                    {"group_id": "h", "ms": None, "us": None, "plain": None}]
