"""``read_columns`` (record batches straight into columns) against the record-by-record decoder.

For any data a broker can serve, the columns must hold exactly the records a consumer is handed: the real Kafka
captures, the common case in every shape, compressed, legacy and header-carrying batches, control batches, a
fetch offset inside a batch, an end offset, a last batch cut short, damaged bytes, and a real broker's aborted
transactions under ``read_committed``.
"""

from __future__ import annotations

import json
import re
import struct

import pytest

from protocol._compression import CompressionType
from protocol.batch import (ControlType, CorruptBatch, LogRecord, TimestampType, encode_batch, encode_control_batch,
                            encode_legacy_message_set, iter_batches)
from protocol.columns import read_columns
from tests.protocol.conformance import encode_recorded_batch, rebuild_segments, scenarios, transaction_batches
from tests.protocol.test_kafka_dump import (BROKEN_RECORDS, GOOD, ODD_BUT_VALID, K, V, batch, commits, raw_batch,
                                            raw_record, segment_of, zz)


def reference(data: bytes, first: int = 0, end: int | None = None) -> tuple[list[tuple], int]:
    """What a read_uncommitted consumer sees, one LogRecord at a time: (offset, timestamp, key, value) rows, and
    how many batches did not decode."""
    rows, broken = [], 0
    for b in iter_batches(data, verify_crc=False):
        if isinstance(b, CorruptBatch):
            broken += not b.truncated
            continue
        if b.header.is_control:
            continue
        append_time = b.header.timestamp_type == TimestampType.LOG_APPEND_TIME
        for r in b.records:
            if r.offset >= first and (end is None or r.offset < end):
                rows.append((r.offset, b.header.max_timestamp if append_time else r.timestamp, r.key, r.value))
    return rows, broken


def rows_of(columns) -> list[tuple]:
    return list(zip(columns.offsets.tolist(), columns.timestamps.tolist(), columns.keys.to_pylist(),
                    columns.values.to_pylist()))


def assert_same(data: bytes, first: int = 0, end: int | None = None):
    want, broken = reference(data, first, end)
    got = read_columns(data, first_offset=first, end_offset=end)
    assert rows_of(got) == want
    assert len(got.problems) == broken, got.problems
    assert got.keys.type == got.values.type
    return got


def test_every_kafka_capture(captures, tmp_path):
    checked = 0
    for scenario in scenarios(captures):
        rebuild_segments(captures, scenario.name, tmp_path / scenario.name)
        for path in sorted((tmp_path / scenario.name).glob("__consumer_offsets-*/*.log")):
            got = assert_same(path.read_bytes())
            checked += len(got)
    assert checked > 100


def test_plain_commits_in_every_shape():
    data = segment_of(*([commits(1, start=i) for i in range(300)]
                        + [commits(n, start=1000 * k) for k, n in enumerate([2, 100, 64, 65, 7, 9000], 1)]))
    got = assert_same(data)
    assert got.next_offset == 300 + 2 + 100 + 64 + 65 + 7 + 9000 and not got.cut_short


@pytest.mark.parametrize("first", [0, 1, 150, 299, 300, 301, 363, 400])
@pytest.mark.parametrize("end", [None, 150, 302, 399])
def test_fetch_offset_inside_a_batch_and_an_end(first, end):
    data = segment_of(*([commits(1, start=i) for i in range(300)] + [commits(100, start=5000)]))
    assert_same(data, first, end)


def test_null_keys_tombstones_and_short_keys():
    records = [(None, V), (K, None), (b"", b""), (b"k", b"v" * 12), (b"x" * 13, None), (K, V)]
    got = assert_same(segment_of(records, records))
    assert got.keys.null_count == 2 and got.values.null_count == 4


def test_log_append_time_and_timestamp_deltas():
    recs = [LogRecord(10 + i, 1_700_000_000_000 + d, K, V) for i, d in enumerate([0, 5, -3, 2**40])]
    created = encode_batch(recs, base_offset=10)
    appended = encode_batch([LogRecord(20, 1, K, V)], base_offset=20, max_timestamp=1_800_000_000_000,
                            timestamp_type=TimestampType.LOG_APPEND_TIME)
    got = assert_same(created + appended)
    assert got.timestamps.tolist()[-1] == 1_800_000_000_000


@pytest.mark.parametrize("codec", [c for c in CompressionType if c not in (CompressionType.NONE,
                                                                             CompressionType.UNKNOWN)])
def test_compressed_batches_among_plain_ones(codec):
    data = segment_of(commits(5), start=0) + batch(commits(5), 5, compression=codec) + segment_of(commits(5),
                                                                                               start=10)
    got = assert_same(data)
    assert len(got) == 15 and got.offsets.tolist() == list(range(15))


def test_legacy_message_sets():
    legacy = encode_legacy_message_set([LogRecord(3, 1_600_000_000_000, K, V), LogRecord(4, 1_600_000_000_001, K, V)],
                                       magic=1)
    assert_same(segment_of(commits(3)) + legacy + segment_of(commits(2), start=5))


def test_records_with_headers_and_odd_numbers():
    with_header = raw_batch(GOOD + raw_record(K, V, headers=zz(1) + zz(1) + b"h" + zz(1) + b"v"), 2, 40)
    data = segment_of(commits(3)) + with_header
    for records, count in ODD_BUT_VALID.values():
        data += raw_batch(records, count, 100 + len(data))
    assert_same(data)


@pytest.mark.parametrize("case", sorted(BROKEN_RECORDS))
def test_damaged_batches_are_reported_and_skipped(case):
    records, count = BROKEN_RECORDS[case]
    data = segment_of(commits(2)) + raw_batch(records, count, 10) + segment_of(commits(2), start=20)
    got = assert_same(data)
    assert got.offsets.tolist() == [0, 1, 20, 21]
    if case != "records count far above what fits":  # a header that claims 2**31 records also claims their offsets
        assert got.next_offset == 22


def test_crc_checked_on_request():
    data = bytearray(segment_of(commits(3), commits(3), start=0))
    data[-3] ^= 0xFF  # a byte of the second batch's last commit timestamp: its CRC no longer matches
    assert len(read_columns(bytes(data), first_offset=0)) == 6
    got = read_columns(bytes(data), first_offset=0, verify_crc=True)
    assert got.offsets.tolist() == [0, 1, 2] and "CRC" in got.problems[0] and got.next_offset == 6


def test_a_last_batch_cut_short():
    data = segment_of(commits(3), commits(4))
    got = assert_same(data[:-5])
    assert got.offsets.tolist() == [0, 1, 2] and got.next_offset == 3 and not got.cut_short
    only_part = read_columns(data[:20], first_offset=0)
    assert len(only_part) == 0 and only_part.next_offset == 0 and only_part.cut_short


def test_control_batches_are_left_out_and_counted_in_the_next_offset():
    commit = encode_control_batch(ControlType.COMMIT, base_offset=3, producer_id=7, producer_epoch=0,
                                  coordinator_epoch=1, timestamp=1)
    txn = batch(commits(3), 0, producer_id=7, producer_epoch=0, transactional=True)
    got = assert_same(txn + commit)
    assert got.offsets.tolist() == [0, 1, 2] and got.next_offset == 4


# ---- read_committed: a real broker's aborted transactions -------------------------------------------------------


def _aborted_list(batches: list[tuple[dict, list]], fetch_offset: int) -> list[tuple[int, int]]:
    """What a broker answers a read_committed fetch from ``fetch_offset`` with: (producer id, first offset) of every
    aborted transaction whose ABORT marker lies at or after the fetch offset."""
    open_first: dict[int, int] = {}
    out = []
    for b, records in batches:
        pid = b["producer_id"]
        if b["is_control"]:
            first = open_first.pop(pid, None)
            key = records[0][0].key
            if first is not None and struct.unpack(">hh", key)[1] == ControlType.ABORT \
                    and records[0][0].offset >= fetch_offset:
                out.append((pid, first))
        elif b["is_transactional"]:
            open_first.setdefault(pid, b["base_offset"])
    return out


def test_a_real_brokers_aborted_transactions(captures):
    by_partition = transaction_batches(captures)
    checked_aborted = 0
    for partition, batches in by_partition.items():
        data = b"".join(encode_recorded_batch(b, records) for b, records in batches)
        offsets = [rec.offset for _, records in batches for rec, _ in records]
        for fetch_offset in offsets:  # a fetch may start anywhere: the broker's list then covers what is left
            visible = [rec.offset for b, records in batches for rec, seen in records
                       if seen and not b["is_control"] and rec.offset >= fetch_offset]
            got = read_columns(data, first_offset=fetch_offset, aborted=_aborted_list(batches, fetch_offset))
            assert got.offsets.tolist() == visible, (partition, fetch_offset)
            checked_aborted += got.aborted
            everything = read_columns(data, first_offset=fetch_offset, aborted=_aborted_list(batches, fetch_offset),
                                      read_committed=False)
            assert len(everything) == len(reference(data, fetch_offset)[0])
    assert checked_aborted > 0, "the recording has aborted transactional commits"


def test_an_abort_marker_ends_only_its_own_transaction():
    # producer 7: txn at 0-1 aborted at 2, then a new txn at 3-4 committed at 5; producer 8 interleaved, committed.
    def txn(records, base, pid):
        return batch(records, base, producer_id=pid, producer_epoch=0, transactional=True)

    def marker(kind, base, pid):
        return encode_control_batch(kind, base_offset=base, producer_id=pid, producer_epoch=0, coordinator_epoch=1,
                                    timestamp=1)

    data = (txn(commits(2), 0, 7) + marker(ControlType.ABORT, 2, 7) + txn(commits(2, start=3), 3, 7)
            + txn(commits(1, start=5), 5, 8) + marker(ControlType.COMMIT, 6, 7) + marker(ControlType.COMMIT, 7, 8))
    got = read_columns(data, first_offset=0, aborted=[(7, 0)])
    assert got.offsets.tolist() == [3, 4, 5] and got.aborted == 2 and got.next_offset == 8


def test_regions_of_one_buffer_read_at_once_equal_each_read_alone():
    compressed = batch(commits(4), 7, compression=CompressionType.GZIP)
    pieces = [segment_of(commits(5), commits(3)), b"", segment_of(*[commits(1)] * 6) + compressed,
              segment_of(commits(2), commits(9))[:-4], raw_batch(BROKEN_RECORDS["key length -2"][0], 2, 0)]
    data, regions, at = b"", [], 0
    firsts, ends = [2, 0, 3, 0, 0], [None, None, 9, 5, None]
    from protocol.columns import Region, read_regions

    for piece, first, end in zip(pieces, firsts, ends):
        data += b"\x99" * 3 + piece  # bytes between regions belong to none
        regions.append(Region(at + 3, at + 3 + len(piece), first, end))
        at += 3 + len(piece)
    together = read_regions(data, regions)
    for piece, first, end, got in zip(pieces, firsts, ends, together):
        alone = read_columns(piece, first_offset=first, end_offset=end)
        assert rows_of(got) == rows_of(alone)
        assert (got.next_offset, got.cut_short) == (alone.next_offset, alone.cut_short)
        where = re.compile(r"at byte \d+")  # positions count from the start of the buffer read
        assert [where.sub("", p) for p in got.problems] == [where.sub("", p) for p in alone.problems]
    assert [len(c) for c in together] == [6, 0, 5, 2, 0]

    # Framing alone already says where each region's next read starts; filling adds the records, nothing else.
    from protocol.columns import fill_regions, frame_regions

    framed = frame_regions(data, regions)
    before = [(c.next_offset, c.cut_short, len(c)) for c in framed.columns]
    assert before == [(c.next_offset, c.cut_short, 0) for c in together]
    filled = fill_regions(framed)
    assert [rows_of(c) for c in filled] == [rows_of(c) for c in together]


@pytest.mark.parametrize("name", ["rewind", "kip848_storm_and_rolling", "rolling_restart_classic"])
def test_a_real_brokers_segment_files(captures, name):
    """A Kafka 4.0 broker's own segment files (the bytes its Fetch responses carry): exactly the records the
    recording marks as visible to read_committed consumers, in offset order, with their keys and values."""
    recording = captures / "conformance" / "verdicts" / name
    expected: dict[int, list[tuple[int, bytes]]] = {}
    for line in (recording / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["visible_read_committed"]:
            expected.setdefault(r["partition"], []).append((r["offset"], bytes.fromhex(r["key_hex"])))
    assert expected
    for partition, want in expected.items():
        got = []
        for path in sorted((recording / "segments" / f"__consumer_offsets-{partition}").glob("*.log")):
            columns = read_columns(path.read_bytes(), first_offset=0)
            assert columns.problems == []
            got += list(zip(columns.offsets.tolist(), columns.keys.to_pylist()))
        assert got == want, partition
