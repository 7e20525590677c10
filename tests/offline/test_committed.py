"""The read_committed view of segment files (``streaming.offline.committed``), on hand-built logs: transactions
committed, aborted and still open, interleaved with plain batches and split over segments; and on real segment
files of a Kafka 4.0 broker, against the broker's own batch headers."""

from __future__ import annotations

import json
import struct

import pytest

from protocol.batch import TimestampType, encode_batch
from streaming.offline.committed import CommittedReader, log_end_offset
from streaming.offline.segments import find_segments
from tests.offline.logs import ABORT, COMMIT, T, marker, plain, txn, write_log
from tests.protocol.conformance import encode_recorded_batch, transaction_batches

def offsets(reader: CommittedReader, start: int, end: int) -> list[int]:
    return [o for b in reader.read(start, end) for o in b.column("offset").to_pylist()]


def test_only_what_a_read_committed_consumer_reads(tmp_path):
    # 0 plain | 1-2 txn A (committed at 5) | 3 txn B (aborted at 6) | 4 plain | 5 COMMIT A | 6 ABORT B | 7 plain
    # | 8 txn C, never settled | 9 plain: the last stable offset is 8, so 8 and 9 are not read yet.
    log = [[plain(0), txn(1, 100, 2), txn(3, 200)], [plain(4), marker(5, 100, COMMIT), marker(6, 200, ABORT),
                                                     plain(7), txn(8, 300), plain(9)]]
    segments = write_log(tmp_path, log)
    assert log_end_offset(segments) == 10
    reader = CommittedReader(segments, topic="__consumer_offsets", partition=3, batch_rows=2)
    assert offsets(reader, 0, 10) == [0, 1, 2, 4, 7]
    assert reader.report.pending_at_end == 2 and reader.report.aborted == 1 and reader.report.markers == 2
    # Ranges: records are cut to the range, and a transaction open at the range's end is settled by reading on.
    assert offsets(CommittedReader(segments, topic="t", partition=3), 2, 5) == [2, 4]
    assert offsets(CommittedReader(segments, topic="t", partition=3), 0, 2) == [0, 1]
    assert offsets(CommittedReader(segments, topic="t", partition=3), 5, 8) == [7]
    batch = next(CommittedReader(segments, topic="t", partition=3).read(0, 1))
    row = batch.to_pylist()[0]
    assert (row["key"], row["value"], row["topic"], row["partition"]) == (b"k0", b"v", "t", 3)
    assert int(row["timestamp"].timestamp() * 1000) == T


def test_log_append_time_batches_give_the_brokers_time(tmp_path):
    batch = encode_batch([(b"k", b"v")], base_offset=0, base_timestamp=T, max_timestamp=T + 999,
                         timestamp_type=TimestampType.LOG_APPEND_TIME)
    segments = write_log(tmp_path, [[batch]])
    row = next(CommittedReader(segments, topic="t", partition=3).read(0, 1)).to_pylist()[0]
    assert int(row["timestamp"].timestamp() * 1000) == T + 999


def test_damaged_batches_are_reported_and_reading_goes_on(tmp_path):
    good = plain(1)
    bad = bytearray(plain(0))
    bad[-1] ^= 0xFF  # breaks the checksum
    segments = write_log(tmp_path, [[bytes(bad), good]])
    reader = CommittedReader(segments, topic="t", partition=3)
    assert offsets(reader, 0, 2) == [1]
    assert len(reader.report.problems) == 1 and "partition 3" in reader.report.problems[0]


@pytest.mark.parametrize("name", ["rewind", "kip848_storm_and_rolling", "rolling_restart_classic"])
def test_real_segments_match_the_brokers_own_batch_headers(captures, name):
    """Exactly the records the recording marks as visible to a read_committed consumer of that broker, in offset
    order (records.jsonl lists every record the broker wrote, with that flag)."""
    recording = captures / "conformance" / "verdicts" / name
    expected: dict[int, list[int]] = {}
    for line in (recording / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["visible_read_committed"]:
            expected.setdefault(r["partition"], []).append(r["offset"])
    for partition, want in expected.items():
        segments = find_segments(recording / "segments" / f"__consumer_offsets-{partition}")
        reader = CommittedReader(segments, topic="__consumer_offsets", partition=partition)
        assert offsets(reader, 0, log_end_offset(segments)) == sorted(want), (name, partition)
        assert reader.report.problems == [] and reader.report.pending_at_end == 0


def test_a_real_brokers_transactions(captures, tmp_path):
    """A Kafka 4.0 broker's transactional commits, committed and aborted: its batches are rebuilt byte for byte
    from the recording (each checked against the broker's own CRC), and exactly the records the broker marked
    visible to read_committed come out."""
    visible: dict[int, list[int]] = {}
    by_partition = transaction_batches(captures)
    for partition, batches in by_partition.items():
        for b, records in batches:
            data = encode_recorded_batch(b, records)
            assert struct.unpack_from(">I", data, 17)[0] == b["crc"], "not the broker's batch"
            folder = tmp_path / f"__consumer_offsets-{partition}"
            folder.mkdir(exist_ok=True)
            with open(folder / "00000000000000000000.log", "ab") as fh:
                fh.write(data)
            visible.setdefault(partition, []).extend(rec.offset for rec, seen in records if seen)
    assert any(not seen and not b["is_control"] for batches in by_partition.values() for b, records in batches
               for _, seen in records), \
        "the recording has aborted transactional commits"
    for partition, want in visible.items():
        segments = find_segments(tmp_path / f"__consumer_offsets-{partition}")
        reader = CommittedReader(segments, topic="__consumer_offsets", partition=partition)
        assert offsets(reader, 0, log_end_offset(segments)) == want, partition
        assert reader.report.problems == []
