"""The column-wise record walk over many v2 batches, checked against a plain per-record reading of the same bytes
(docs/kafka-formats.md#records: length, attributes, timestampDelta, offsetDelta, key, value, headers, all zig-zag
varints) and against the exact batch decoder. Both the numpy lockstep and the per-batch loop are exercised."""

from __future__ import annotations

import numpy as np
import pytest

from protocol._vector import LOCKSTEP_MIN, binary_views, int_at, record_fields, record_starts, varints
from protocol.batch import LogRecord, RecordBatch, encode_batch, iter_batches

TS = 1_700_000_000_000
V2_HEADER = 61  # bytes of a v2 batch before its first record


def zigzag(value: int) -> bytes:
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _records(batch: int, n: int) -> list[LogRecord]:
    out = []
    for i in range(n):
        key = None if i % 3 == 1 else b"k%d-%d" % (batch, i)
        value = None if i % 4 == 2 else bytes([i % 256]) * (i * 17 % 90)  # some values past 63 bytes
        out.append(LogRecord(offset=batch * 100 + i, timestamp=TS + i * 1000, key=key, value=value))
    return out


def _log(n_batches: int) -> tuple[bytes, list[RecordBatch]]:
    data = b"".join(encode_batch(_records(b, 1 + b % 5)) for b in range(n_batches))
    batches = list(iter_batches(data))
    assert all(isinstance(x, RecordBatch) for x in batches)
    return data, batches  # type: ignore[return-value]


def _walk(data: bytes, batches: list[RecordBatch]):
    view = memoryview(data)
    arr = np.frombuffer(view, dtype=np.uint8)
    starts = np.array([x.header.position + V2_HEADER for x in batches], dtype=np.int64)
    stops = np.array([x.header.position + x.header.size_bytes for x in batches], dtype=np.int64)
    counts = np.array([x.header.records_count for x in batches], dtype=np.int64)
    return view, arr, starts, stops, counts


def _starts_by_hand(data: bytes, start: int, count: int) -> list[int]:
    """Record starts of one batch, by reading each record's length varint one byte at a time."""
    out, p = [], start
    for _ in range(count):
        out.append(p)
        z, shift = 0, 0
        while True:
            byte = data[p]
            p += 1
            z |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        p += (z >> 1) ^ -(z & 1)
    return out


@pytest.mark.parametrize("n_batches", [3, LOCKSTEP_MIN + 12], ids=["loop", "lockstep"])
def test_record_starts_and_fields_match_a_plain_reading(n_batches):
    data, batches = _log(n_batches)
    view, arr, starts, stops, counts = _walk(data, batches)
    rec_pos, ok = record_starts(view, arr, starts, stops, counts)
    assert ok.all()
    expected = [p for b, s, c in zip(batches, starts, counts) for p in _starts_by_hand(data, int(s), int(c))]
    assert rec_pos.tolist() == expected
    row_batch = np.repeat(np.arange(len(batches)), counts)
    f = record_fields(arr, rec_pos, stops[row_batch], timestamps=True)
    assert f.ok.all()
    records = [r for b in batches for r in b.records]
    bases = np.array([b.header.base_offset for b in batches])[row_batch]
    base_ts = np.array([b.header.base_timestamp for b in batches])[row_batch]
    assert (bases + f.offset_delta).tolist() == [r.offset for r in records]
    assert (base_ts + f.timestamp_delta).tolist() == [r.timestamp for r in records]
    for r, ks, kl, vs, vl in zip(records, f.key_start, f.key_length, f.value_start, f.value_length):
        assert (None if kl < 0 else data[ks : ks + kl]) == r.key
        assert (None if vl < 0 else data[vs : vs + vl]) == r.value


def test_record_fields_without_timestamps():
    data, batches = _log(2)
    view, arr, starts, stops, counts = _walk(data, batches)
    rec_pos, _ = record_starts(view, arr, starts, stops, counts)
    f = record_fields(arr, rec_pos, np.repeat(stops, counts), timestamps=False)
    assert f.timestamp_delta is None and f.ok.all()


@pytest.mark.parametrize("n_batches", [3, LOCKSTEP_MIN + 2], ids=["loop", "lockstep"])
def test_a_batch_whose_records_overrun_is_flagged_alone(n_batches):
    data, batches = _log(n_batches)
    view, arr, starts, stops, counts = _walk(data, batches)
    stops = stops.copy()
    stops[1] -= 1  # the second batch now ends one byte inside its last record
    _, ok = record_starts(view, arr, starts, stops, counts)
    assert ok.tolist() == [i != 1 for i in range(n_batches)]


def test_a_count_larger_than_the_records_is_flagged():
    data, batches = _log(3)
    view, arr, starts, stops, counts = _walk(data, batches)
    counts = counts.copy()
    counts[0] += 1
    _, ok = record_starts(view, arr, starts, stops, counts)
    assert ok.tolist() == [False, True, True]


def test_records_with_headers_are_not_ok():
    data = encode_batch([LogRecord(0, TS, b"k", b"v", headers=(("h", b"x"),)), LogRecord(1, TS, b"k", b"v")])
    (batch,) = list(iter_batches(data))
    view, arr, starts, stops, counts = _walk(data, [batch])
    rec_pos, ok = record_starts(view, arr, starts, stops, counts)
    assert ok.all()  # the lengths still walk
    assert record_fields(arr, rec_pos, np.repeat(stops, counts), timestamps=True).ok.tolist() == [False, True]


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31)])
def test_varints_decode_zigzag_int32(value):
    raw = b"\x00" + zigzag(value) + b"\x00"
    arr = np.frombuffer(raw, dtype=np.uint8)
    decoded, end, ok = varints(arr, np.array([1]), np.array([len(raw)]), 5)
    assert (decoded.tolist(), end.tolist(), ok.tolist()) == ([value], [1 + len(zigzag(value))], [True])


@pytest.mark.parametrize("value", [2**40, -(2**62), 2**63 - 1])
def test_varints_decode_zigzag_int64(value):
    raw = zigzag(value)
    arr = np.frombuffer(raw, dtype=np.uint8)
    decoded, end, ok = varints(arr, np.array([0]), np.array([len(raw)]), 10)
    assert (decoded.tolist(), end.tolist(), ok.tolist()) == ([value], [len(raw)], [True])


def test_varints_out_of_bounds_or_too_long_are_not_ok():
    arr = np.frombuffer(b"\x80\x80\x80\x80\x80\x01" + b"\x80", dtype=np.uint8)
    _, _, ok = varints(arr, np.array([0, 6]), np.array([6, 7]), 5)
    assert ok.tolist() == [False, False]  # six bytes for an int32; a continuation byte at the end


def test_int_at_reads_big_endian_signed_ints_at_any_position():
    raw = bytes.fromhex("00 ff ff ff fe 00 00 01 00 7f".replace(" ", ""))
    arr = np.frombuffer(raw, dtype=np.uint8)
    assert int_at(arr, np.array([1, 5]), 4).tolist() == [-2, 256]
    assert int_at(arr, np.array([0, 8]), 2).tolist() == [255, 0x007F]


def test_binary_views_hold_inline_long_and_null_values():
    raw = b"__" + b"short" + b"a value longer than twelve bytes" + b"__"
    view = memoryview(raw)
    start = np.array([2, 7, 0, 2], dtype=np.int64)
    length = np.array([5, 32, -1, 0], dtype=np.int64)
    arr = binary_views(view, start, length)
    assert arr.to_pylist() == [b"short", b"a value longer than twelve bytes", None, b""]
    assert arr.null_count == 1
    assert binary_views(view, start[:2], length[:2]).to_pylist() == [b"short", b"a value longer than twelve bytes"]
