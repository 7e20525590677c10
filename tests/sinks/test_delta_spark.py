"""The delta-spark writer with Delta's real jars (fetched with Maven, ``tests.spark.spark_jars``), against the
delta-rs writer on the same input: equal tables row for row, same schemas and partitioning, each continuing the
other's tables, replays skipped by both, and delta-spark's own OPTIMIZE and VACUUM.

The input is real: the Kafka 4.0 captures replayed through the model (``replay_rows``), every table of the job in
three micro-batches (a group deleted in the last one, so the merge removes it). One JVM for the package (``conftest.py``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from streaming.config import DeltaMaintenanceSettings
from streaming.schema.tables import PARTITION_COLUMNS, TABLES, to_table
from streaming.sinks.delta import DeltaSink
from streaming.sinks.delta_maintenance import DeltaMaintenance
from tests.sinks.replay_rows import ScenarioReplay
from tests.sinks.test_delta import commits

pytestmark = pytest.mark.spark


def _quarantine(batch_id: int) -> pa.Table:
    row = {"topic": "__consumer_offsets", "partition": 3, "offset": 100 + batch_id, "record_time": 1_767_225_600_000,
           "key": b"\x00\x09", "value": b"\xff", "reason": "unknown record type 9", "record_type": 9,
           "value_version": None, "quarantined_time": 1_767_225_600_000, "quarantined_date": None}
    return to_table("quarantine", [row])


def _batches() -> list[dict[str, pa.Table]]:
    """Three micro-batches of every table, from the consumer-protocol capture."""
    replay = ScenarioReplay("c_consumer_protocol")
    labels = replay.labels()
    out = []
    for i, label in enumerate([labels[0], labels[len(labels) // 2], labels[-1]]):
        replay.advance(label)
        rows = replay.batch()
        groups = rows.groups
        if i == 2:  # the last batch deletes the first group: the merge must remove its row
            groups = groups + [{**groups[0], "deleted": True, "state": "DEAD"}]
        out.append({"groups": to_table("groups", groups), "lag": to_table("lag", rows.partitions),
                    "group_events": to_table("group_events", rows.events),
                    "commits": commits(5, start=10 * i), "quarantine": _quarantine(i)})
    return out


@pytest.fixture(scope="module")
def spark(delta_spark_session):
    return delta_spark_session


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory) -> dict[str, Path]:
    """The same three batches written three ways: delta-rs only (the reference), and alternating writers starting
    with either (so each writer creates tables, appends to and merges into the other's)."""
    from streaming.sinks.delta_spark import DeltaSparkSink

    batches = _batches()
    root = tmp_path_factory.mktemp("writers")
    plans = {"rs": "rrr", "rs-then-spark": "rsr", "spark-then-rs": "srs"}
    for name, plan in plans.items():
        sinks = {"r": DeltaSink(root / name, app_id="t"), "s": DeltaSparkSink(spark, str(root / name), app_id="t")}
        for batch_id, (writer, tables) in enumerate(zip(plan, batches)):
            written = sinks[writer].write_batch(batch_id, tables)
            assert written == {n: t.num_rows for n, t in tables.items() if t.num_rows}, (name, batch_id)
    return {name: root / name for name in plans}


def _rows(path: Path, table: str) -> list[tuple]:
    rows = DeltaTable(str(path / table)).to_pyarrow_table().to_pylist()
    return sorted((tuple(sorted((k, repr(v)) for k, v in r.items())) for r in rows))


def test_either_writer_gives_the_same_tables_and_continues_the_others(written):
    reference = written["rs"]
    for name, path in written.items():
        for table in TABLES:
            assert _rows(path, table) == _rows(reference, table), (name, table)
    groups = {r["group_id"]: r for r in DeltaTable(str(reference / "groups")).to_pyarrow_table().to_pylist()}
    assert groups and not any(r["deleted"] for r in groups.values())
    assert len(_rows(reference, "commits")) == 15 and len(_rows(reference, "lag")) > 0


def test_schemas_and_partitioning_are_the_same(written):
    for table in TABLES:
        schemas = {name: DeltaTable(str(path / table)).schema().to_arrow() for name, path in written.items()}
        assert all(s.equals(schemas["rs"]) for s in schemas.values()), table
        for name, path in written.items():
            assert DeltaTable(str(path / table)).metadata().partition_columns == PARTITION_COLUMNS[table], (
                name, table)


def test_a_replayed_batch_is_skipped_by_either_writer(spark, written):
    from streaming.sinks.delta_spark import DeltaSparkSink

    again = _batches()[2]
    for name in ("rs-then-spark", "spark-then-rs"):
        before = {t: DeltaTable(str(written[name] / t)).version() for t in TABLES}
        assert set(DeltaSparkSink(spark, str(written[name]), app_id="t").write_batch(2, again).values()) == {0}
        assert set(DeltaSink(written[name], app_id="t").write_batch(2, again).values()) == {0}
        assert DeltaSparkSink(spark, str(written[name]), app_id="t").batches_written() == dict.fromkeys(TABLES, 2)
        assert {t: DeltaTable(str(written[name] / t)).version() for t in TABLES} == before, name


def test_optimize_and_vacuum_with_delta_spark(spark, written):
    from streaming.sinks.delta_spark import DeltaSparkSink

    path = written["spark-then-rs"]
    sink = DeltaSparkSink(spark, str(path), app_id="t")
    before = {t: len(DeltaTable(str(path / t)).file_uris()) for t in TABLES}
    maintained = ["commits", "groups"]  # an append-only table and the merged one (about 10 s each on two cores)
    reports = {r.table: r for r in DeltaMaintenance(sink, DeltaMaintenanceSettings(vacuum_retention_hours=0))
               .run_once(maintained)}
    assert set(reports) == set(maintained) and not any(r.error for r in reports.values()), reports
    # Three appends of one day's rows: three files become one; the merged groups table's replaced files go.
    assert reports["commits"].files_before == before["commits"] == 3 and reports["commits"].files_after == 1
    assert reports["commits"].files_compacted == 3
    assert reports["groups"].files_vacuumed > 0
    for table in maintained:
        assert len(DeltaTable(str(path / table)).file_uris()) == reports[table].files_after
        parquet = [f for f in (path / table).rglob("*.parquet") if "_delta_log" not in f.parts]
        assert len(parquet) == reports[table].files_after, table  # vacuumed from disk, not only from the log
        assert _rows(path, table) == _rows(written["rs"], table), table
    configuration = DeltaTable(str(path / "commits")).metadata().configuration
    assert configuration["delta.deletedFileRetentionDuration"] == "interval 0 hours"
    # The app transactions survive maintenance: the last batch is still recognised.
    assert set(sink.write_batch(2, _batches()[2]).values()) == {0}


def test_a_missing_jar_is_one_line_naming_the_package(spark):
    from streaming.spark.packages import JarsMissing, SparkPackages, check_session, kafka_coordinate

    with pytest.raises(JarsMissing) as missing:  # this session has Delta's jars, not the Kafka connector
        check_session(spark, SparkPackages(kafka=kafka_coordinate()))
    assert "\n" not in str(missing.value)
    assert f"spark.jars.packages (spark-submit --packages {kafka_coordinate()})" in str(missing.value)


def test_deltas_jar_for_another_spark_is_one_line(spark):
    from streaming.spark.packages import JarsMissing, SparkPackages, check_session, delta_coordinate

    check_session(spark, SparkPackages(delta=delta_coordinate()))  # the jar on the classpath matches
    with pytest.raises(JarsMissing) as mismatch:
        check_session(spark, SparkPackages(delta="io.delta:delta-spark_4.1_2.13:4.1.0"))
    assert "\n" not in str(mismatch.value)
    assert "delta-spark 4.4.0 for Spark 4.2" in str(mismatch.value)
    assert "put io.delta:delta-spark_4.1_2.13:4.1.0 on the classpath" in str(mismatch.value)


@pytest.mark.parametrize("installed, expected", [
    (None, "needs the delta-spark Python package for pyspark 4.2.0: pip install 'delta-spark==4.4.0'"),
    ("4.4.1", "delta-spark 4.4.1 does not match pyspark 4.2.0"),
])
def test_a_missing_or_mismatched_delta_spark_package_is_one_line(monkeypatch, installed, expected):
    from importlib import metadata

    from streaming.spark import packages

    real = metadata.version

    def version(name: str) -> str:
        if name != "delta-spark":
            return real(name)
        if installed is None:
            raise metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(packages.metadata, "version", version)
    with pytest.raises(packages.JarsMissing) as failed:
        packages.delta_coordinate()
    assert "\n" not in str(failed.value) and expected in str(failed.value)
    assert "pip install 'delta-spark==4.4.0'" in str(failed.value)
