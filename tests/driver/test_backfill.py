"""The plain-Python parts of a backfill (``streaming/driver/backfill.py``): which offsets of the segment files are
still to be read (from each partition's first segment, or from where an earlier run's checkpoint ended, up to the
log end) and what is refused before Spark is started. The backfill itself, with Spark and Delta, runs in
``tests/spark/test_backfill.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from protocol.batch import encode_batch
from streaming.config import Settings, load_settings
from streaming.driver.backfill import BackfillReport, offsets_to_read, run_backfill
from streaming.offline.segments import SegmentPathError
from tests.commands.demo_tables import demo_tables

TS = 1_700_000_000_000


def _segment(folder: Path, base_offset: int, *batch_sizes: int) -> None:
    """A segment file named after its base offset (20 digits, as a broker names it), holding consecutive batches
    of ``batch_sizes`` records each."""
    folder.mkdir(parents=True, exist_ok=True)
    chunks, offset = [], base_offset
    for size in batch_sizes:
        chunks.append(encode_batch([(b"k%d" % i, b"v") for i in range(size)], base_offset=offset, base_timestamp=TS))
        offset += size
    (folder / f"{base_offset:020d}.log").write_bytes(b"".join(chunks))


@pytest.fixture
def settings(monkeypatch, tmp_path) -> Settings:
    """Default settings with no GROUPSCOPE_* variables, the checkpoint and tables in ``tmp_path``."""
    for name in [n for n in os.environ if n.startswith("GROUPSCOPE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return _with(load_settings(None, None), spark={"checkpoint": str(tmp_path / "cp")},
                 delta={"path": str(tmp_path / "delta")})


def _with(settings: Settings, **sections) -> Settings:
    merged = settings.model_dump()
    for name, values in sections.items():
        merged[name] = {**merged[name], **values} if isinstance(values, dict) else values
    return type(settings).model_validate(merged)


@pytest.fixture
def no_spark(monkeypatch):
    """A refusal must come before the session: building one fails the test."""
    import streaming.spark.session as session

    def build_session(**_):
        raise AssertionError("Spark was started before the refusal")

    monkeypatch.setattr(session, "build_session", build_session)


def test_a_first_backfill_reads_every_partition_from_its_first_segment_to_its_log_end(settings, tmp_path):
    logs = tmp_path / "logs"
    _segment(logs / "__consumer_offsets-0", 0, 3, 2)  # offsets 0-4
    _segment(logs / "__consumer_offsets-0", 5, 4)  # 5-8: the log end is one past the last, 9
    _segment(logs / "__consumer_offsets-12", 100, 10)  # older segments deleted by retention: starts at 100
    assert offsets_to_read(settings, str(logs)) == {0: (0, 9), 12: (100, 110)}


def test_a_second_backfill_reads_from_where_the_checkpoint_ended(settings, tmp_path):
    logs = tmp_path / "logs"
    _segment(logs / "__consumer_offsets-0", 0, 5)
    _segment(logs / "__consumer_offsets-1", 200, 5)
    cp = Path(settings.spark.checkpoint)
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0}\n' + json.dumps(
        {"__consumer_offsets": {"0": 3, "1": 150}}))
    (cp / "commits" / "0").write_text("v1\n{}")
    # Partition 1's checkpoint is older than its first segment: reading starts where the files start.
    assert offsets_to_read(settings, str(logs)) == {0: (3, 5), 1: (200, 205)}


def test_segments_outside_a_partition_folder_are_not_planned(settings, tmp_path):
    _segment(tmp_path / "loose", 0, 3)
    assert offsets_to_read(settings, str(tmp_path / "loose")) == {}


def test_a_path_without_segments_is_refused_before_spark(settings, tmp_path, no_spark):
    with pytest.raises(SegmentPathError, match="no such file or directory"):
        run_backfill(settings, str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SegmentPathError, match="no .log segment files found"):
        run_backfill(settings, str(tmp_path / "empty"))


def test_segments_without_their_partition_are_refused_before_spark(settings, tmp_path, no_spark):
    _segment(tmp_path / "loose", 0, 3)
    with pytest.raises(ValueError, match=r"no __consumer_offsets-N folders .* find each group's shard"):
        run_backfill(settings, str(tmp_path / "loose"))


def test_tables_of_another_checkpoint_are_refused_before_spark(settings, tmp_path, no_spark):
    """A new checkpoint numbers its batches from 0, which tables written under another one would skip."""
    delta, _ = demo_tables(tmp_path)  # written as batch 0 under the app id of the cluster "demo"
    _segment(tmp_path / "logs" / "__consumer_offsets-0", 0, 3)
    demo = _with(settings, cluster="demo", delta={"path": str(delta)})
    with pytest.raises(RuntimeError, match="were written under another checkpoint"):
        run_backfill(demo, str(tmp_path / "logs"))


def test_a_report_starts_at_nothing_read():
    report = BackfillReport()
    assert (report.partitions, report.batches, report.records, report.commits, report.groups) == (0, 0, 0, 0, 0)
    assert (report.seconds, report.spark_start_seconds) == (0.0, 0.0)
