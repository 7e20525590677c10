"""The segment-file source of ``groupscope backfill`` (``streaming.spark.segment_source``) as Spark drives it,
without Spark: offsets are Kafka's own record offsets per ``__consumer_offsets-N`` folder, and a read task hands
Spark packed chunks of what a ``read_committed`` consumer would have read."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from streaming.job.packed import PACKED_DDL, PACKED_SCHEMA, unpack
from streaming.kafka.reader import OffsetRange
from streaming.spark.ranges import RangeTask
from streaming.spark.segment_source import SegmentSource
from tests.offline.logs import ABORT, marker, plain, txn, write_log


def _reader(path, **options):
    return SegmentSource({"path": str(path), **options}).streamReader(None)


@pytest.fixture
def log_dir(tmp_path):
    """Partition 0: offsets 5-9 (the log starts at 5), an aborted transaction at 7 settled at 8. Partition 3: 0-3."""
    write_log(tmp_path, [[plain(5, 2), txn(7, 100)], [marker(8, 100, ABORT), plain(9)]], partition=0)
    write_log(tmp_path, [[plain(0, 4)]], partition=3)
    return tmp_path


def test_the_source_is_named_and_packed():
    assert SegmentSource.name() == "groupscope_segments"
    assert SegmentSource({"path": "x"}).schema() == PACKED_DDL


def test_a_path_is_required():
    with pytest.raises(ValueError, match="groupscope_segments source needs the option path"):
        SegmentSource({}).streamReader(None)


def test_each_partition_starts_at_its_first_segment_and_ends_one_past_its_last_record(log_dir):
    reader = _reader(log_dir, maxOffsetsPerTrigger="3", readTasks="4")
    assert reader.initialOffset() == {"__consumer_offsets": {"0": 5, "3": 0}}
    assert reader.ends() == {("__consumer_offsets", 0): 10, ("__consumer_offsets", 3): 4}
    assert (reader.max_rows, reader.read_tasks) == (3, 4)


def test_a_task_reads_what_a_read_committed_consumer_reads(log_dir):
    reader = _reader(log_dir, topic="offsets-copy")
    rows = pa.Table.from_batches(list(reader.read(RangeTask((OffsetRange("offsets-copy", 0, 5, 10),
                                                              OffsetRange("offsets-copy", 3, 1, 3))))))
    assert rows.schema == PACKED_SCHEMA
    records = unpack(rows.column("payload").to_pylist())
    assert sorted(zip(records.column("partition").to_pylist(), records.column("offset").to_pylist())) == [
        (0, 5), (0, 6), (0, 9), (3, 1), (3, 2)], "the aborted record and the marker are not read"
    assert set(records.column("topic").to_pylist()) == {"offsets-copy"}


def test_a_range_of_a_partition_without_segments_reads_nothing(log_dir):
    assert list(_reader(log_dir).read(RangeTask((OffsetRange("__consumer_offsets", 7, 0, 5),)))) == []


def test_damage_is_logged_and_the_rest_is_read(tmp_path, caplog):
    damaged = bytearray(plain(1))
    damaged[damaged.rindex(b"v")] = ord("w")  # the CRC-32C no longer matches
    write_log(tmp_path, [[plain(0), bytes(damaged), plain(2)]], partition=0)
    caplog.set_level(logging.WARNING, logger="groupscope.backfill")
    rows = pa.Table.from_batches(list(_reader(tmp_path).read(RangeTask((OffsetRange("__consumer_offsets", 0, 0, 3),)))))
    assert unpack(rows.column("payload").to_pylist()).column("offset").to_pylist() == [0, 2]
    assert len(caplog.records) == 1 and "CRC" in caplog.records[0].getMessage()


def test_a_segment_outside_a_partition_folder_is_refused(tmp_path):
    (tmp_path / f"{0:020d}.log").write_bytes(plain(0))
    with pytest.raises(ValueError, match=r"a segment outside a __consumer_offsets-N folder has no partition"):
        _reader(tmp_path).ends()
