"""Finding and reading segment files (``streaming.offline.segments``): what a person may point at (a segment, a
``__consumer_offsets-N`` folder, a broker's log directory), the partition and base offset Kafka's layout gives each
file, and the one-line error for a path that holds none."""

from __future__ import annotations

import os
import struct

import pytest

from protocol.batch import CorruptBatch, RecordBatch
from streaming.offline.segments import SegmentPathError, find_segments, read_segment, segment_size, segments_size
from tests.offline.logs import plain, write_log


def _log_dir(tmp_path):
    """A broker log directory: partitions 10 and 2 of __consumer_offsets (two segments in 2), and another topic."""
    write_log(tmp_path, [[plain(0, 3)], [plain(3, 2)]], partition=2)
    write_log(tmp_path, [[plain(0)]], partition=10)
    (tmp_path / "orders-0").mkdir()
    (tmp_path / "orders-0" / f"{0:020d}.log").write_bytes(plain(0))
    return tmp_path


def test_a_log_directory_gives_every_partitions_segments_in_partition_then_offset_order(tmp_path):
    found = find_segments(_log_dir(tmp_path))
    assert [(s.partition, s.base_offset) for s in found] == [(2, 0), (2, 3), (10, 0)], \
        "partition 2 before 10 (numbers, not names); other topics' folders left alone"


def test_a_partition_folder_gives_its_own_segments(tmp_path):
    _log_dir(tmp_path)
    found = find_segments(tmp_path / "__consumer_offsets-2")
    assert [s.path.name for s in found] == [f"{0:020d}.log", f"{3:020d}.log"]
    assert {s.partition for s in found} == {2}


def test_a_segment_file_named_relative_to_its_own_folder_still_knows_its_partition(tmp_path, monkeypatch):
    _log_dir(tmp_path)
    monkeypatch.chdir(tmp_path / "__consumer_offsets-10")
    (segment,) = find_segments(f"{0:020d}.log")
    assert (segment.partition, segment.base_offset) == (10, 0)


def test_a_segment_outside_a_partition_folder_has_no_partition_and_a_name_without_offset_none(tmp_path):
    path = tmp_path / "copy.log"
    path.write_bytes(plain(7))
    (segment,) = find_segments(path)
    assert (segment.partition, segment.base_offset) == (None, None)


def test_a_file_that_starts_with_a_batch_is_a_segment_whatever_its_name(tmp_path):
    path = tmp_path / "segment.bin"
    path.write_bytes(plain(0, 2))
    assert [s.path for s in find_segments(path)] == [path]


@pytest.mark.parametrize("content", [b'{"records": []}\n', b"", struct.pack(">qi", 0, 10_000) + bytes(5)])
def test_a_file_that_is_no_segment_is_refused_in_one_line(tmp_path, content):
    """A JSON export, an empty file, a header whose batch length runs past the end of the file."""
    path = tmp_path / "export.json"
    path.write_bytes(content)
    with pytest.raises(SegmentPathError) as err:
        find_segments(path)
    assert str(err.value) == (f"{path}: not a Kafka log segment (no record batch at its start); segments are the "
                              "*.log files in __consumer_offsets-N folders")


def test_a_path_that_is_not_there_or_holds_no_segment_is_one_line(tmp_path):
    with pytest.raises(SegmentPathError, match=r": no such file or directory$"):
        find_segments(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SegmentPathError, match=r"empty: no \.log segment files found \(expected a segment"):
        find_segments(tmp_path / "empty")


def test_a_folder_of_loose_segments_is_read_as_they_are(tmp_path):
    (tmp_path / f"{5:020d}.log").write_bytes(plain(5))
    (tmp_path / "named.log").write_bytes(plain(0))
    assert [(s.partition, s.base_offset) for s in find_segments(tmp_path)] == [(None, 5), (None, None)], \
        "numbered ones first, by offset"


def test_sizes_are_the_files_bytes_and_a_path_without_segments_counts_nothing(tmp_path):
    _log_dir(tmp_path)
    files = [*(tmp_path / "__consumer_offsets-2").glob("*.log"), *(tmp_path / "__consumer_offsets-10").glob("*.log")]
    total = sum(os.path.getsize(f) for f in files)
    assert sum(segment_size(s) for s in find_segments(tmp_path)) == total
    assert segments_size([tmp_path, tmp_path / "nowhere"]) == total
    gone = find_segments(tmp_path / "__consumer_offsets-10")[0]
    gone.path.unlink()
    assert segment_size(gone) == 0


def test_a_segment_is_read_batch_by_batch_and_damage_is_reported_as_a_corrupt_batch(tmp_path):
    good, damaged = plain(0, 2), bytearray(plain(2))
    damaged[damaged.rindex(b"v")] = ord("w")  # the record's value: the batch's CRC-32C no longer matches
    (segment,) = write_log(tmp_path, [[good, bytes(damaged)]])
    batches = list(read_segment(segment))
    assert isinstance(batches[0], RecordBatch) and [r.offset for r in batches[0].records] == [0, 1]
    assert isinstance(batches[1], CorruptBatch) and batches[1].position == len(good)
    unchecked = list(read_segment(segment, verify_crc=False))
    assert isinstance(unchecked[1], RecordBatch), "without the CRC check the damaged byte is not noticed"
    assert unchecked[1].records[0].value == b"w"


def test_an_empty_segment_has_no_batches(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    (folder / f"{0:020d}.log").write_bytes(b"")
    (segment,) = find_segments(folder)
    assert list(read_segment(segment)) == []
