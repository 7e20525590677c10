"""Delta maintenance (compaction, checkpoint, vacuum, log cleanup) on real Delta tables written by the job's sink.

What must hold: over a long run of small batches every table's file count stays bounded (data files referenced,
data files on disk, and log entries), the tables read back exactly (row counts and contents), and the per-batch
app transactions that make the writes exactly once survive every maintenance step.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from streaming.config import DeltaMaintenanceSettings
from streaming.sinks.delta import DeltaSink
from streaming.sinks.delta_maintenance import DeltaMaintenance, maintain_table, on_disk_files
from streaming.schema.tables import TABLES
from tests.cli_helpers import run_cli

DAY0 = dt.date(2026, 1, 1)
T0 = 1_767_225_600_000


def _rows(name: str, batch: int, n: int) -> pa.Table:
    """n rows of one table for one batch; offsets are unique per (batch, i), dates span two days."""
    out = []
    for i in range(n):
        seq = batch * 100 + i
        day = DAY0 + dt.timedelta(days=batch % 2)
        row = dict.fromkeys(TABLES[name].names)
        if name == "commits":
            row.update(shard=seq % 3, offset=seq, record_time=T0 + seq, group_id=f"g{seq % 7}", topic="t",
                       partition=i, committed_offset=seq, is_tombstone=False, value_version=3, record_date=day)
        elif name == "group_events":
            row.update(shard=1, offset=seq, event_time=T0 + seq, group_id=f"g{seq % 7}", kind="Rebalance",
                       event_date=day)
        elif name == "lag":
            row.update(snapshot_time=T0 + seq, shard=1, group_id=f"g{seq % 7}", topic="t", partition=i,
                       committed_offset=seq, log_end_offset=seq + 5, lag=5, snapshot_date=day)
        elif name == "quarantine":
            row.update(topic="__consumer_offsets", partition=1, offset=seq, key=b"k", value=b"v", reason="bad",
                       quarantined_date=day)
        elif name == "groups":
            row.update(group_id=f"g{(batch + i) % 11}", shard=1, group_type="CLASSIC", state="STABLE",
                       generation=batch, member_count=i, members=[], topics=[], partition_count=0,
                       deleted=False, updated_time=T0 + seq)
        out.append(row)
    return pa.Table.from_pylist(out, schema=TABLES[name])


def _batch(batch: int) -> dict[str, pa.Table]:
    return {name: _rows(name, batch, 3) for name in TABLES}


def _referenced(path: str) -> int:
    return len(DeltaTable(path).file_uris())


def _log_entries(path: str) -> int:
    return sum(1 for _ in (Path(path) / "_delta_log").glob("*.json"))


def test_a_long_run_of_small_batches_keeps_every_table_small_and_exact(tmp_path):
    """150 batches, maintenance every 25 from the batch path (background thread, writes going on meanwhile)."""
    sink = DeltaSink(tmp_path, app_id="groupscope-test")
    settings = DeltaMaintenanceSettings(every_batches=25, every_seconds=3600, vacuum_retention_hours=0,
                                        log_retention_hours=0)
    maintenance = DeltaMaintenance(sink, settings)
    batches = 150
    peak = {name: [0, 0, 0] for name in TABLES}  # referenced files, files on disk, log entries
    for b in range(batches):
        assert sink.write_batch(b, _batch(b)) == {name: 3 for name in TABLES}
        maintenance.after_batch(b)
        if b % 10 == 9:
            for name in TABLES:
                path = sink.path(name)
                now = (_referenced(path), on_disk_files(path), _log_entries(path))
                peak[name] = [max(p, n) for p, n in zip(peak[name], now)]
    maintenance.stop()
    assert maintenance.runs >= batches // 25 - 2, maintenance.runs
    assert not [r for r in maintenance.last if r.error]
    # Without maintenance each append-only table would hold 150 files and 150 log entries. Bounded: files since
    # the last pass (25 batches, 2 day-partitions) plus the compacted ones, plus the pass in flight.
    for name, (referenced, on_disk, log_entries) in peak.items():
        assert referenced <= 60, (name, peak[name])
        assert on_disk <= 120, (name, peak[name])
        assert log_entries <= 60, (name, peak[name])

    final = maintenance.run_once()
    for report in final:
        assert report.error is None, report.line()
        assert report.files_after <= 2, report.line()  # one file per day partition (groups: one)
        assert on_disk_files(sink.path(report.table)) == report.files_after, report.line()

    # Exactly the rows written, once each.
    for name in ("commits", "group_events", "lag", "quarantine"):
        got = sink.read(name)
        key = "offset" if name != "lag" else "snapshot_time"
        expected = pa.concat_tables([_rows(name, b, 3) for b in range(batches)])
        assert got.num_rows == expected.num_rows == batches * 3
        assert got.sort_by(key).select(expected.column_names).to_pylist() == \
            expected.sort_by(key).to_pylist(), name
    # groups: one row per group, the latest write.
    latest: dict[str, dict] = {}
    for b in range(batches):
        for row in _rows("groups", b, 3).to_pylist():
            latest[row["group_id"]] = row
    got_groups = {r["group_id"]: r for r in sink.read("groups").to_pylist()}
    assert got_groups.keys() == latest.keys()
    assert {g: (r["generation"], r["member_count"]) for g, r in got_groups.items()} == \
        {g: (r["generation"], r["member_count"]) for g, r in latest.items()}
    print({name: peak[name] for name in TABLES})


def test_app_transactions_survive_compaction_checkpoint_vacuum_and_log_cleanup(tmp_path):
    sink = DeltaSink(tmp_path, app_id="groupscope-test")
    for b in range(40):
        sink.write_batch(b, _batch(b))
    settings = DeltaMaintenanceSettings(vacuum_retention_hours=0, log_retention_hours=0)
    for name in TABLES:
        before = _log_entries(sink.path(name))
        report = maintain_table(sink.path(name), settings, name=name)
        assert report is not None and report.error is None
        # groups is merged (each merge rewrites its one file): nothing to compact, the 39 replaced files to vacuum;
        # the appended tables' 40 batch files are compacted, and then vacuumed.
        assert (report.files_compacted, report.files_vacuumed) == ((0, 39) if name == "groups" else (40, 40)), \
            report.line()
        # The commits that carried the app transactions are gone from the log: only the checkpoint holds them.
        assert _log_entries(sink.path(name)) < before
        assert not (Path(sink.path(name)) / "_delta_log" / "00000000000000000000.json").exists()
        assert sink.written_version(name) == 39, name
    # A replay of the last batches after a crash is still recognised and skipped, table by table...
    assert sink.write_batch(39, _batch(39)) == {name: 0 for name in TABLES}
    assert sink.write_batch(12, _batch(12)) == {name: 0 for name in TABLES}
    # ...and the next batch is written.
    assert sink.write_batch(40, _batch(40)) == {name: 3 for name in TABLES}
    assert sink.read("commits").num_rows == 41 * 3
    # A fresh reader (a restarted job) sees the same: the version comes from the checkpoint.
    assert DeltaSink(tmp_path, app_id="groupscope-test").written_version("commits") == 40


def test_vacuum_keeps_replaced_files_for_the_configured_retention(tmp_path):
    sink = DeltaSink(tmp_path, app_id="t")
    for b in range(10):
        sink.write_batch(b, {"commits": _rows("commits", b, 2)})
    report = maintain_table(sink.path("commits"), DeltaMaintenanceSettings(vacuum_retention_hours=1), name="commits")
    assert report.files_before == 10 and report.files_after == 2 and report.files_vacuumed == 0
    assert on_disk_files(sink.path("commits")) == 12  # the 10 replaced files wait out the retention
    assert DeltaTable(sink.path("commits")).metadata().configuration["delta.logRetentionDuration"] == \
        "interval 720 hours"
    assert sink.read("commits").num_rows == 20


def test_each_pass_vacuums_only_what_was_replaced_since_the_last(tmp_path):
    """Tombstones expire with the vacuum retention, so the checkpoint drops those already vacuumed: a pass does not
    go over (or count) the files of every earlier pass again, which at one pass every 15 minutes grew by thousands
    of files per pass."""
    sink = DeltaSink(tmp_path, app_id="t")
    settings = DeltaMaintenanceSettings(vacuum_retention_hours=0)
    vacuumed = []
    for rnd in range(3):
        for b in range(rnd * 6, rnd * 6 + 6):
            sink.write_batch(b, {"commits": _rows("commits", b, 2)})
        report = maintain_table(sink.path("commits"), settings, name="commits")
        assert report.error is None, report.line()
        vacuumed.append(report.files_vacuumed)
        assert on_disk_files(sink.path("commits")) == report.files_after
    # 6 new files each round; from the second on, also the compacted files of the round before.
    assert vacuumed[0] == 6 and vacuumed[1] == vacuumed[2] == 6 + 2, vacuumed
    assert DeltaTable(sink.path("commits")).metadata().configuration["delta.deletedFileRetentionDuration"] == \
        "interval 0 hours"
    assert sink.read("commits").num_rows == 36


def test_maintain_command(tmp_path):
    sink = DeltaSink(tmp_path, app_id="groupscope-default")
    for b in range(12):
        sink.write_batch(b, _batch(b))
    result = run_cli("maintain", "--delta-path", str(tmp_path), "--vacuum-retention-hours", "0")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == list(TABLES)
    assert "commits: 12 -> 2 files (12 compacted), 12 vacuumed" in result.stdout
    assert on_disk_files(sink.path("commits")) == 2
    assert sink.written_version("commits") == 11
    assert "Traceback" not in result.stderr

    missing = run_cli("maintain", "--delta-path", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert missing.stderr.strip() == f"groupscope maintain: no Delta tables under {tmp_path / 'nowhere'} " \
                                     "(no such directory)"
    bad = run_cli("maintain", "--delta-path", str(tmp_path), "--table", "nope")
    assert bad.returncode == 2 and "unknown table 'nope'" in bad.stderr
