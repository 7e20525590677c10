"""Record batches (protocol/batch.py): spec vectors byte for byte, real Kafka 4.0 batches rebuilt to their exact CRC
and size, round trips for every codec and format, and the scanner's contract that no input makes it raise. The
checksums and codecs on their own are tested in test_crc.py and test_compression.py."""

from __future__ import annotations

import collections
import json
import struct
import zlib
from pathlib import Path

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import captures_dir

from protocol import batch as batch_module
from protocol._compression import compress, decompress
from protocol._crc import crc32c
from protocol.batch import (
    BatchHeader,
    CompressionType,
    ControlType,
    CorruptBatch,
    EndTxnMarker,
    LogRecord,
    RecordBatch,
    TimestampType,
    decode_batch,
    decode_control_record,
    encode_batch,
    encode_control_batch,
    encode_legacy_message_set,
    iter_batches,
)
from protocol.errors import CodecError

TS = 1700000000000  # docs/kafka-formats.md#test-vectors: common timestamp
GROUP_KEY = bytes.fromhex("000100086d792d67726f757000066f726465727300000003")  # docs/kafka-formats.md#test-vectors: key
COMMIT_VALUE = bytes.fromhex("0003000000000000002a0000000500000000018bcfe56800")  # docs/kafka-formats.md#test-vectors: value v3

# Spelled exactly as printed in the spec.
SPEC_8_3 = bytes.fromhex(
    """
    00 00 00 00 00 00 00 00 00 00 00 68 00 00 00 00
    02 65 04 a3 5b 00 00 00 00 00 00 00 00 01 8b cf
    e5 68 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff
    ff ff ff ff ff 00 00 00 00 00 00 00 01 6c 00 00
    00 30 00 01 00 08 6d 79 2d 67 72 6f 75 70 00 06
    6f 72 64 65 72 73 00 00 00 03 30 00 03 00 00 00
    00 00 00 00 2a 00 00 00 05 00 00 00 00 01 8b cf
    e5 68 00 00
    """.replace(" ", "").replace("\n", "")
)
SPEC_8_4 = bytes.fromhex(
    """
    00 00 00 00 00 00 00 0a 00 00 00 42 00 00 00 07
    02 ce c6 66 5d 00 30 00 00 00 00 00 00 01 8b cf
    e5 69 f4 00 00 01 8b cf e5 69 f4 00 00 00 00 00
    00 0f a0 00 00 ff ff ff ff 00 00 00 01 20 00 00
    00 08 00 00 00 01 0c 00 00 00 00 00 05 00
    """.replace(" ", "").replace("\n", "")
)

LEGACY_CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]
ALL_CODECS = [*LEGACY_CODECS, CompressionType.ZSTD]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- helpers ---------------------------------------------------------------------------------------------------


def reframe_v2(
    batch: bytes, *, attributes: int | None = None, payload: bytes | None = None, count: int | None = None
) -> bytes:
    """Rewrite a v2 batch's attributes/records/count and fix its length and CRC, to build batches whose damage lies
    beyond the checksum (what a buggy writer would produce)."""
    out = bytearray(batch[:61]) + (batch[61:] if payload is None else payload)
    if attributes is not None:
        struct.pack_into(">h", out, 21, attributes)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def sample_records(n: int = 5, base: int = 100) -> list[LogRecord]:
    """Records exercising null keys/values, headers, multi-byte lengths and out-of-order timestamps."""
    out = []
    for i in range(n):
        key = None if i == 1 else b"key-%d" % i
        value = None if i == 2 else bytes(range(256))[: 10 + 40 * i]
        headers = (("h", b"v"), ("n", None)) if i == 3 else ()
        out.append(LogRecord(base + i, TS + (i * 7919 if i != 4 else -5), key, value, headers))
    return out


def decoded(data: bytes, **kwargs) -> list[RecordBatch]:
    items = list(iter_batches(data, **kwargs))
    assert all(isinstance(item, RecordBatch) for item in items), items
    return items  # type: ignore[return-value]


# --- varints (docs/kafka-formats.md#varints; the checksums are in test_crc.py) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(24, "30"), (-1, "01"), (0, "00"), (54, "6c"), (63, "7e"), (64, "8001"), (-65, "8101"), (300, "d804")],
)
def test_zigzag_varint_examples(value, encoded):
    # docs/kafka-formats.md#varints: zig-zag, so -1 is 01 and lengths are doubled; these are not the unsigned varints of flexible fields
    assert batch_module._zigzag_varint(value).hex() == encoded
    raw, end = batch_module._read_uvarint(bytes.fromhex(encoded), 0, 5)
    assert ((raw >> 1) ^ -(raw & 1), end) == (value, len(encoded) // 2)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
@settings(max_examples=200, deadline=None)
def test_zigzag_round_trip(int32, int64):
    for value, encode, limit in ((int32, batch_module._zigzag_varint, 5), (int64, batch_module._zigzag_varlong, 10)):
        data = encode(value)
        assert len(data) <= limit
        raw, end = batch_module._read_uvarint(data, 0, limit)
        assert ((raw >> 1) ^ -(raw & 1), end) == (value, len(data))


def test_overlong_varint_is_rejected():
    with pytest.raises(CodecError, match="longer than 5 bytes"):
        batch_module._read_uvarint(b"\x80" * 5 + b"\x01", 0, 5)
    with pytest.raises(ValueError):
        batch_module._zigzag_varint(2**31)


# --- spec vectors ------------------------------------------------------------------------------------------------


def test_spec_8_3_offset_commit_batch_is_byte_exact():
    assert encode_batch([(GROUP_KEY, COMMIT_VALUE)], base_timestamp=TS, base_sequence=0) == SPEC_8_3
    # The same batch from a LogRecord (absolute offset/timestamp) gives the same bytes.
    assert encode_batch([LogRecord(0, TS, GROUP_KEY, COMMIT_VALUE)], base_sequence=0) == SPEC_8_3
    (batch,) = decoded(SPEC_8_3)
    h = batch.header
    assert (h.base_offset, h.batch_length, h.magic, h.crc, h.attributes, h.records_count) == (
        0,
        104,
        2,
        0x6504A35B,
        0,
        1,
    )
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.size_bytes, h.last_offset) == (-1, -1, 0, 116, 0)
    assert h.compression is CompressionType.NONE and h.timestamp_type is TimestampType.CREATE_TIME
    assert not (h.is_transactional or h.is_control or h.has_delete_horizon) and h.delete_horizon_ms is None
    assert batch.records == (LogRecord(0, TS, GROUP_KEY, COMMIT_VALUE, (), 0),)
    assert batch.control is None


def test_spec_8_1_tombstone_record_bytes():
    # "3c 00 00 00 30 <24 key bytes> 01 00": length 30, null value (-1 = 01), no headers.
    data = encode_batch([(GROUP_KEY, None)], base_timestamp=TS)
    assert data[61:] == bytes.fromhex("3c00000030") + GROUP_KEY + bytes.fromhex("0100")
    assert decoded(data)[0].records[0].value is None


def test_spec_8_4_commit_marker_is_byte_exact():
    data = encode_control_batch(
        ControlType.COMMIT,
        coordinator_epoch=5,
        base_offset=10,
        producer_id=4000,
        producer_epoch=0,
        timestamp=1700000000500,
        partition_leader_epoch=7,
    )
    assert data == SPEC_8_4
    (batch,) = decoded(data)
    h = batch.header
    assert (h.attributes, h.is_transactional, h.is_control, h.base_sequence, h.partition_leader_epoch) == (
        0x30,
        True,
        True,
        -1,
        7,
    )
    assert batch.control == EndTxnMarker(ControlType.COMMIT, 0, 5)
    assert batch.records[0].key == b"\x00\x00\x00\x01" and batch.records[0].sequence == -1


def test_abort_marker_key_and_value():
    data = encode_control_batch(
        ControlType.ABORT, coordinator_epoch=9, base_offset=3, producer_id=1, producer_epoch=2, timestamp=TS
    )
    (batch,) = decoded(data)
    assert batch.records[0].key == b"\x00\x00\x00\x00"  # docs/kafka-formats.md#test-vectors: ABORT would be 00 00 00 00
    assert batch.control == EndTxnMarker(ControlType.ABORT, 0, 9)
    with pytest.raises(ValueError):
        encode_control_batch(
            ControlType.LEADER_CHANGE, coordinator_epoch=0, base_offset=0, producer_id=1, producer_epoch=0, timestamp=TS
        )


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        # why: the type is bytes 2-3 whatever the version; readers parse version > 0 as version 0 (docs/kafka-formats.md#control-records)
        ("00010001", "000000000005", (ControlType.COMMIT, EndTxnMarker(ControlType.COMMIT, 0, 5))),
        ("00000000", "0001ffffffff", (ControlType.ABORT, EndTxnMarker(ControlType.ABORT, 1, -1))),
        # why: KRaft types carry KRaft messages as values, which are not ours to parse
        ("00000002", None, (ControlType.LEADER_CHANGE, None)),
        ("00000006", "00", (ControlType.KRAFT_VOTERS, None)),
        # why: a type from a newer Kafka must not break the scan
        ("00000063", None, (ControlType.UNKNOWN, None)),
        # why: extra bytes after the known fields belong to a newer version and are ignored
        ("0000000100ff", "00000000000700aa", (ControlType.COMMIT, EndTxnMarker(ControlType.COMMIT, 0, 7))),
    ],
)
def test_decode_control_record(key, value, expected):
    assert decode_control_record(bytes.fromhex(key), None if value is None else bytes.fromhex(value)) == expected


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("000001", "000000000000", "needs 4 bytes"),
        ("ffff0001", "000000000000", "negative control record key version"),
        ("00000001", None, "needs 6 bytes"),
        ("00000000", "0000000000", "needs 6 bytes"),
        ("00000001", "ffff00000000", "negative marker version"),
    ],
)
def test_decode_control_record_rejects(key, value, match):
    with pytest.raises(CodecError, match=match):
        decode_control_record(bytes.fromhex(key), None if value is None else bytes.fromhex(value))


# --- real Kafka 4.0 batches --------------------------------------------------------------------------------------


def _captured_batches() -> dict[tuple[str, int, str], list[tuple[dict, list[dict]]]]:
    """``(scenario, partition, segment) -> [(batch header, records)]`` in file order, from records.jsonl."""
    files = sorted((captures_dir() / "conformance" / "kafka-4.0").glob("*/records.jsonl"))
    assert files, "no records.jsonl under conformance/kafka-4.0"
    grouped: dict[tuple[str, int, str, int], list[dict]] = collections.defaultdict(list)
    for path in files:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                b = row["batch"]
                grouped[(path.parent.name, row["partition"], b["segment"], b["base_offset"])].append(row)
    logs: dict[tuple[str, int, str], list[tuple[dict, list[dict]]]] = collections.defaultdict(list)
    for (scenario, partition, segment, _), rows in grouped.items():
        rows.sort(key=lambda r: r["offset"])
        logs[(scenario, partition, segment)].append((rows[0]["batch"], rows))
    for batches in logs.values():
        batches.sort(key=lambda item: item[0]["file_position"])
    return logs


def test_captures_unpack_once_and_again_when_changed(tmp_path):
    import io
    import tarfile

    import cramjam

    from tests.conftest import unpack

    def archive(text: str) -> Path:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("conformance/kafka-4.0/x.txt")
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
        path = tmp_path / "a.tar.zst"
        path.write_bytes(bytes(cramjam.zstd.compress(buf.getvalue())))
        return path

    into = tmp_path / "unpacked"
    unpack(archive("one"), into)
    assert (into / "conformance" / "kafka-4.0" / "x.txt").read_text() == "one"
    (into / "conformance" / "kafka-4.0" / "x.txt").write_text("edited")
    unpack(archive("one"), into)  # same archive: left alone
    assert (into / "conformance" / "kafka-4.0" / "x.txt").read_text() == "edited"
    unpack(archive("two"), into)  # a new archive replaces the folder
    assert (into / "conformance" / "kafka-4.0" / "x.txt").read_text() == "two"


def test_unreadable_captures_fail_not_skip(monkeypatch, tmp_path):
    import tests.conftest as conftest

    bad = tmp_path / "broken.tar.zst"
    bad.write_bytes(b"not zstd")
    monkeypatch.setattr(conftest, "ARCHIVE", bad)
    monkeypatch.setattr(conftest, "UNPACKED", tmp_path / "out")
    with pytest.raises(pytest.fail.Exception, match="cannot unpack"):
        conftest.captures_dir()


def _hex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def test_real_kafka_batches_rebuild_to_exact_crc_size_and_position():
    """Every batch a real 4.0 broker wrote is re-encoded from its records and header fields; the CRC and size must
    be Kafka's, and scanning the rebuilt segment must find each batch at its real file position."""
    logs = _captured_batches()
    kinds = collections.Counter()
    for (scenario, partition, segment), batches in logs.items():
        segment_bytes = []
        for b, rows in batches:
            assert len(rows) == b["records_count"], (scenario, partition, b["base_offset"])
            assert all(r["headers"] == [] for r in rows)  # coordinator records carry none
            records = [LogRecord(r["offset"], r["timestamp"], _hex(r["key_hex"]), _hex(r["value_hex"])) for r in rows]
            data = encode_batch(
                records,
                base_offset=b["base_offset"],
                partition_leader_epoch=b["partition_leader_epoch"],
                producer_id=b["producer_id"],
                producer_epoch=b["producer_epoch"],
                base_sequence=b["base_sequence"],
                transactional=b["is_transactional"],
                is_control=b["is_control"],
            )
            where = (scenario, partition, segment, b["base_offset"])
            assert decode_batch(data).header.crc == b["crc"], where
            assert len(data) == b["size_bytes"], where
            if b["is_control"]:
                rows0 = rows[0]
                marker = encode_control_batch(
                    ControlType[rows0["control"]["type"]],
                    coordinator_epoch=rows0["control"]["coordinator_epoch"],
                    base_offset=b["base_offset"],
                    producer_id=b["producer_id"],
                    producer_epoch=b["producer_epoch"],
                    timestamp=b["base_timestamp"],
                    partition_leader_epoch=b["partition_leader_epoch"],
                )
                assert marker == data, where
            kinds[(b["is_transactional"], b["is_control"], b["records_count"] > 1)] += 1
            segment_bytes.append(data)

        scanned = decoded(b"".join(segment_bytes))
        assert len(scanned) == len(batches)
        for batch, (b, rows) in zip(scanned, batches):
            h = batch.header
            assert h.position == b["file_position"]
            assert (h.base_offset, h.last_offset, h.crc, h.attributes, h.size_bytes) == (
                b["base_offset"],
                b["last_offset"],
                b["crc"],
                b["attributes"],
                b["size_bytes"],
            )
            assert (h.base_timestamp, h.max_timestamp, h.records_count) == (
                b["base_timestamp"],
                b["max_timestamp"],
                b["records_count"],
            )
            assert (h.is_transactional, h.is_control, h.has_delete_horizon, h.compression.name.lower()) == (
                b["is_transactional"],
                b["is_control"],
                b["has_delete_horizon"],
                b["compression"],
            )
            assert h.timestamp_type is TimestampType.CREATE_TIME and b["timestamp_type"] == "CreateTime"
            for record, row in zip(batch.records, rows):
                assert (record.offset, record.timestamp) == (row["offset"], row["timestamp"])
                assert (record.key, record.value) == (_hex(row["key_hex"]), _hex(row["value_hex"]))
            if b["is_control"]:
                control = rows[0]["control"]
                assert batch.control == EndTxnMarker(
                    ControlType[control["type"]], control["value_version"], control["coordinator_epoch"]
                )
    # The capture must have covered the kinds of batch this test is about.
    assert kinds[(False, False, True)] and kinds[(False, False, False)]  # multi- and single-record batches
    assert kinds[(True, False, True)] and kinds[(True, True, False)]  # transactional commits and markers
    assert sum(kinds.values()) > 1000


# --- v2 round trips ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_v2_round_trip_every_codec(codec):
    records = sample_records(6)
    data = encode_batch(records, compression=codec, base_sequence=7, producer_id=12, producer_epoch=3)
    (batch,) = decoded(data)
    assert batch.header.compression is codec
    assert batch.header.base_offset == 100 and batch.header.last_offset == 105
    assert batch.header.max_timestamp == max(r.timestamp for r in records)
    assert batch.records == tuple(
        LogRecord(r.offset, r.timestamp, r.key, r.value, r.headers, 7 + i) for i, r in enumerate(records)
    )


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_v2_large_compressed_batch(codec):
    # > 64 KiB of records: several LZ4 blocks, several xerial snappy blocks, multi-byte offset deltas.
    records = [(b"k%d" % i, b"value-%08d" % i * 4) for i in range(3000)]
    (batch,) = decoded(encode_batch(records, base_offset=5, base_timestamp=TS, compression=codec))
    assert len(batch.records) == 3000 and batch.records[-1].offset == 3004
    assert [(r.key, r.value) for r in batch.records] == records


def test_transactional_batch_then_markers():
    data = b"".join(
        [
            encode_batch(
                [(GROUP_KEY, COMMIT_VALUE)] * 3,
                base_offset=0,
                base_timestamp=TS,
                producer_id=4000,
                producer_epoch=0,
                base_sequence=0,
                transactional=True,
            ),
            encode_control_batch(
                ControlType.COMMIT,
                coordinator_epoch=5,
                base_offset=3,
                producer_id=4000,
                producer_epoch=0,
                timestamp=TS + 1,
            ),
            encode_batch(
                [(GROUP_KEY, COMMIT_VALUE)],
                base_offset=4,
                base_timestamp=TS + 2,
                producer_id=4000,
                producer_epoch=0,
                base_sequence=3,
                transactional=True,
                compression=CompressionType.ZSTD,
            ),
            encode_control_batch(
                ControlType.ABORT,
                coordinator_epoch=5,
                base_offset=5,
                producer_id=4000,
                producer_epoch=0,
                timestamp=TS + 3,
            ),
        ]
    )
    batches = decoded(data)
    assert [b.header.is_transactional for b in batches] == [True] * 4
    assert [b.header.is_control for b in batches] == [False, True, False, True]
    assert [b.control for b in batches] == [
        None,
        EndTxnMarker(ControlType.COMMIT, 0, 5),
        None,
        EndTxnMarker(ControlType.ABORT, 0, 5),
    ]
    assert [r.sequence for r in batches[0].records] == [0, 1, 2]
    first = batches[0].header.size_bytes
    assert [b.header.position for b in batches] == [0, first, first + 78, len(data) - 78]


def test_log_append_time_takes_max_timestamp():
    data = encode_batch(sample_records(3), timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=TS + 999)
    (batch,) = decoded(data)
    assert batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in batch.records} == {TS + 999}


def test_delete_horizon_batch():
    records = [LogRecord(10, TS, b"k", None), LogRecord(12, TS + 5, b"k2", b"v")]  # offset gap: compacted
    data = encode_batch(records, delete_horizon=TS + 86_400_000)
    (batch,) = decoded(data)
    h = batch.header
    assert h.has_delete_horizon and h.delete_horizon_ms == TS + 86_400_000 == h.base_timestamp
    assert [(r.offset, r.timestamp) for r in batch.records] == [(10, TS), (12, TS + 5)]
    assert h.last_offset_delta == 2


def test_empty_batch_kept_for_producer_state():
    # recordsCount 0: what the cleaner leaves to retain a producer's state (docs/kafka-formats.md#batch-v2)
    data = encode_batch(
        [], base_offset=40, last_offset_delta=4, producer_id=7, producer_epoch=1, base_sequence=0, transactional=True
    )
    (batch,) = decoded(data)
    assert batch.records == () and batch.header.records_count == 0
    assert (batch.header.base_timestamp, batch.header.last_offset) == (-1, 44)
    assert batch.control is None
    empty_control = encode_batch([], base_offset=3, producer_id=7, is_control=True, transactional=True)
    assert decoded(empty_control)[0].control is None


def test_sequence_wraps_like_kafka():
    data = encode_batch([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], base_timestamp=TS, base_sequence=2**31 - 2)
    assert [r.sequence for r in decoded(data)[0].records] == [2**31 - 2, 2**31 - 1, 0]


def test_headers_and_multi_byte_lengths():
    big = bytes(5000)
    records = [LogRecord(0, TS - 10**12, b"x" * 200, big, (("trace-id", b"\x01" * 70), ("empty", b""), ("nul", None)))]
    (batch,) = decoded(encode_batch(records, base_timestamp=TS))  # negative, multi-byte timestamp delta
    assert batch.records[0] == LogRecord(0, TS - 10**12, b"x" * 200, big, records[0].headers)


def test_tuple_input_with_timestamps_and_errors():
    (batch,) = decoded(
        encode_batch([(b"a", b"1"), (b"b", b"2", (("h", b"x"),))], base_offset=9, timestamps=[TS + 3, TS + 1])
    )
    assert [(r.offset, r.timestamp, r.headers) for r in batch.records] == [
        (9, TS + 3, ()),
        (10, TS + 1, (("h", b"x"),)),
    ]
    assert batch.header.base_timestamp == TS + 3 and batch.header.max_timestamp == TS + 3
    with pytest.raises(ValueError, match="need base_timestamp"):
        encode_batch([(b"a", b"1")])
    with pytest.raises(ValueError, match="timestamps for"):
        encode_batch([(b"a", b"1")], timestamps=[1, 2])
    with pytest.raises(ValueError):
        encode_batch([(b"a", b"1")], base_timestamp=TS, producer_epoch=1 << 20)
    with pytest.raises(ValueError, match="codec"):
        encode_batch([(b"a", b"1")], base_timestamp=TS, compression=CompressionType.UNKNOWN)


def test_memoryview_and_bytearray_inputs_decode_the_same():
    data = encode_batch(sample_records(4), base_sequence=0) + encode_legacy_message_set(
        [(b"k", b"v")], magic=1, base_offset=200, timestamp=TS, compression=CompressionType.GZIP
    )
    expected = list(iter_batches(data))
    assert list(iter_batches(bytearray(data))) == expected
    assert list(iter_batches(memoryview(data))) == expected
    assert list(iter_batches(memoryview(bytearray(b"\0" * 7 + data))[7:])) == expected
    assert decode_batch(bytearray(data), expected[1].header.position) == expected[1]


# --- legacy magic 0 / 1 ------------------------------------------------------------------------------------------


def test_legacy_v0_message_layout_by_hand():
    # offset 5, size, crc, magic 0, attributes 0, key -1, value "abc": docs/kafka-formats.md#legacy-message-sets, built without the encoder
    body = bytes([0, 0]) + struct.pack(">i", -1) + struct.pack(">i", 3) + b"abc"
    entry = struct.pack(">qiI", 5, len(body) + 4, zlib.crc32(body)) + body
    assert encode_legacy_message_set([(None, b"abc")], magic=0, base_offset=5) == entry
    (batch,) = decoded(entry)
    h = batch.header
    assert (h.magic, h.base_offset, h.batch_length, h.size_bytes, h.crc) == (0, 5, 17, 29, zlib.crc32(body))
    assert h.timestamp_type is TimestampType.NO_TIMESTAMP
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.partition_leader_epoch) == (-1, -1, -1, -1)
    assert not (h.is_transactional or h.is_control)
    assert batch.records == (LogRecord(5, -1, None, b"abc", (), -1),)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_legacy_round_trip(magic, codec):
    records = [
        LogRecord(1000 + i, TS + i, None if i == 2 else b"k%d" % i, None if i == 3 else b"v" * i) for i in range(5)
    ]
    data = encode_legacy_message_set(records, magic=magic, compression=codec)
    batches = decoded(data)
    got = [r for b in batches for r in b.records]
    expected_ts = [r.timestamp if magic == 1 else -1 for r in records]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (r.offset, ts, r.key, r.value) for r, ts in zip(records, expected_ts)
    ]
    assert all(r.sequence == -1 and r.headers == () for r in got)
    if codec is CompressionType.NONE:
        assert len(batches) == 5  # one entry per message
    else:
        (wrapper,) = batches
        assert wrapper.header.compression is codec and wrapper.header.records_count == 5
        assert (wrapper.header.base_offset, wrapper.header.last_offset) == (1000, 1004)
        # the wrapper's own offset field is the last absolute offset (docs/kafka-formats.md#legacy-message-sets)
        assert struct.unpack_from(">q", data, 0)[0] == 1004
        inner = decompress(codec, _legacy_value(data), magic=magic)
        inner_offsets = _offsets_of(inner)
        assert inner_offsets == ([0, 1, 2, 3, 4] if magic == 1 else [1000, 1001, 1002, 1003, 1004])
        assert wrapper.header.max_timestamp == (TS + 4 if magic == 1 else -1)


def _legacy_value(entry: bytes) -> bytes:
    """Value bytes of a single legacy wrapper entry (key null)."""
    magic = entry[16]
    p = 12 + 4 + 2 + (8 if magic == 1 else 0)
    (key_len,) = struct.unpack_from(">i", entry, p)
    assert key_len == -1
    (n,) = struct.unpack_from(">i", entry, p + 4)
    return entry[p + 8 : p + 8 + n]


def _offsets_of(message_set: bytes) -> list[int]:
    out, p = [], 0
    while p < len(message_set):
        offset, size = struct.unpack_from(">qi", message_set, p)
        out.append(offset)
        p += 12 + size
    return out


def test_legacy_v1_log_append_time():
    records = [(b"a", b"1"), (b"b", b"2")]
    compressed = encode_legacy_message_set(
        records,
        magic=1,
        base_offset=50,
        timestamp=TS,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=TS + 77,
        compression=CompressionType.GZIP,
    )
    (batch,) = decoded(compressed)
    assert batch.header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records] == [TS + 77, TS + 77]  # inner timestamps come from the wrapper
    plain = encode_legacy_message_set(
        records, magic=1, timestamp=TS, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=TS + 77
    )
    assert [b.records[0].timestamp for b in decoded(plain)] == [TS + 77, TS + 77]
    with pytest.raises(ValueError):
        encode_legacy_message_set(records, magic=0, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=1)


def test_legacy_v1_wrapper_offset_zero_keeps_inner_offsets():
    # A wrapper written by an old client before the broker assigned offsets: base = 0 - 2 < 0, Kafka keeps inner ones.
    data = bytearray(
        encode_legacy_message_set(
            [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
            magic=1,
            timestamp=TS,
            compression=CompressionType.GZIP,
            base_offset=0,
        )
    )
    struct.pack_into(">q", data, 0, 0)  # not covered by the CRC
    assert [r.offset for r in decoded(bytes(data))[0].records] == [0, 1, 2]


def test_legacy_v0_lz4_broken_header_checksum():
    """Kafka 0.8/0.9 hashed the LZ4 magic into the frame-header checksum; magic 0 readers must cope (docs/kafka-formats.md#legacy-message-sets)."""
    data = encode_legacy_message_set([(b"k", b"v" * 100)] * 3, magic=0, base_offset=0, compression=CompressionType.LZ4)
    frame = _legacy_value(data)
    with pytest.raises(CodecError, match="lz4"):
        decompress(CompressionType.LZ4, frame, magic=2)  # a standard reader rejects it
    assert len(decoded(data)[0].records) == 3
    # the magic 1 writer produces a standard frame
    assert decompress(
        CompressionType.LZ4,
        _legacy_value(
            encode_legacy_message_set([(b"k", b"v")], magic=1, timestamp=TS, compression=CompressionType.LZ4)
        ),
        magic=2,
    )


def test_legacy_encoder_rejects_what_the_format_cannot_hold():
    with pytest.raises(ValueError):
        encode_legacy_message_set([(b"k", b"v")], magic=1, compression=CompressionType.ZSTD)
    with pytest.raises(ValueError):
        encode_legacy_message_set([LogRecord(0, TS, b"k", b"v", (("h", b"x"),))], magic=1)
    with pytest.raises(ValueError):
        encode_legacy_message_set([(b"k", b"v")], magic=2)


def test_legacy_nested_compression_and_bad_inner_crc_are_corrupt():
    inner_compressed = encode_legacy_message_set(
        [(b"k", b"v")], magic=1, timestamp=TS, compression=CompressionType.GZIP
    )
    wrapper = batch_module._legacy_entry(
        0, 1, int(CompressionType.GZIP), TS, None, compress(CompressionType.GZIP, inner_compressed)
    )
    (item,) = iter_batches(wrapper)
    assert isinstance(item, CorruptBatch) and "nested" in item.reason
    inner = bytearray(encode_legacy_message_set([(b"k", b"v")], magic=1, timestamp=TS))
    inner[-1] ^= 0xFF
    wrapper = batch_module._legacy_entry(
        0, 1, int(CompressionType.GZIP), TS, None, compress(CompressionType.GZIP, bytes(inner))
    )
    (item,) = iter_batches(wrapper)
    assert isinstance(item, CorruptBatch) and "CRC-32 mismatch" in item.reason
    assert isinstance(decoded(wrapper, verify_crc=False)[0], RecordBatch)


# --- compression details -----------------------------------------------------------------------------------------


def test_snappy_is_xerial_framed_and_raw_snappy_is_accepted():
    payload = bytes(range(256)) * 300  # 76.8 KB: three xerial blocks of at most 32 KiB input
    framed = compress(CompressionType.SNAPPY, payload)
    assert framed[:16] == bytes.fromhex("82534e41505059000000000100000001")
    assert decompress(CompressionType.SNAPPY, framed) == payload
    raw = bytes(cramjam.snappy.compress_raw(payload))
    assert decompress(CompressionType.SNAPPY, raw) == payload
    # a v2 batch whose records were compressed with unframed raw snappy (old non-Java clients)
    plain = encode_batch(sample_records(4), base_sequence=0)
    records_bytes = plain[61:]
    batch = reframe_v2(
        plain, attributes=int(CompressionType.SNAPPY), payload=bytes(cramjam.snappy.compress_raw(records_bytes))
    )
    assert decoded(batch)[0].records == decoded(plain)[0].records


def test_zstd_frame_without_content_size():
    compressor = cramjam.zstd.Compressor()  # streaming: the frame header carries no content size
    plain = encode_batch(sample_records(4), base_sequence=0)
    compressor.compress(plain[61:])
    frame = bytes(compressor.finish())
    assert frame[4] & 0xC0 == 0 and not frame[4] & 0x20  # FHD: no Frame_Content_Size field
    batch = reframe_v2(plain, attributes=int(CompressionType.ZSTD), payload=frame)
    assert decoded(batch)[0].records == decoded(plain)[0].records


# --- corruption, truncation, the never-raise contract --------------------------------------------------------------


def _three_batches() -> tuple[bytes, list[int]]:
    parts = [
        encode_batch(sample_records(3, base=0), base_sequence=0),
        encode_batch(sample_records(3, base=3), compression=CompressionType.GZIP),
        encode_batch(sample_records(3, base=6), base_sequence=0),
    ]
    starts = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), starts


@pytest.mark.parametrize("flip_at", [21, 30, 61, 80], ids=["attributes", "timestamp", "first-record", "record-body"])
def test_crc_mismatch_is_reported_and_scanning_continues(flip_at):
    data, starts = _three_batches()
    damaged = bytearray(data)
    damaged[starts[1] + flip_at] ^= 0x01
    items = list(iter_batches(bytes(damaged)))
    assert [type(i) for i in items] == [RecordBatch, CorruptBatch, RecordBatch]
    bad = items[1]
    assert bad.position == starts[1] and bad.base_offset == 3 and not bad.truncated
    assert "CRC-32C mismatch" in bad.reason and f"at byte {starts[1] + 17}" in bad.reason
    assert [r.offset for r in items[2].records] == [6, 7, 8]
    with pytest.raises(CodecError, match="CRC-32C mismatch"):
        decode_batch(bytes(damaged), starts[1])


def test_partition_leader_epoch_is_outside_the_crc():
    data, starts = _three_batches()
    damaged = bytearray(data)
    struct.pack_into(">i", damaged, starts[1] + 12, 99)
    assert decoded(bytes(damaged))[1].header.partition_leader_epoch == 99


def test_legacy_crc_mismatch():
    data = encode_legacy_message_set([(b"a", b"1"), (b"b", b"2")], magic=1, timestamp=TS)
    damaged = bytearray(data)
    damaged[-1] ^= 0x40
    items = list(iter_batches(bytes(damaged)))
    assert isinstance(items[0], RecordBatch) and isinstance(items[1], CorruptBatch)
    assert "CRC-32 mismatch" in items[1].reason and items[1].base_offset == 1


def test_truncated_final_batch_stops_the_scan():
    data, starts = _three_batches()
    items = list(iter_batches(data[:-5]))
    assert [type(i) for i in items] == [RecordBatch, RecordBatch, CorruptBatch]
    assert items[2].truncated and items[2].reason.startswith("truncated") and items[2].position == starts[2]
    assert items[2].base_offset == 6
    tail = list(iter_batches(data[: starts[1] + 9]))  # cut inside the next batch's offset/length prefix
    assert isinstance(tail[-1], CorruptBatch) and tail[-1].truncated and tail[-1].base_offset == 3
    tail = list(iter_batches(data[: starts[1] + 5]))  # not even the offset
    assert tail[-1].truncated and tail[-1].base_offset is None
    assert list(iter_batches(b"")) == []
    with pytest.raises(CodecError, match="truncated"):
        decode_batch(data[:-5], starts[2])
    with pytest.raises(CodecError, match="truncated"):
        decode_batch(data, len(data))


def test_implausible_length_stops_the_scan():
    data, _ = _three_batches()
    items = list(iter_batches(data + bytes(40)))  # zero padding after the last batch
    assert [type(i) for i in items] == [RecordBatch, RecordBatch, RecordBatch, CorruptBatch]
    assert "below the smallest entry" in items[3].reason and not items[3].truncated
    with pytest.raises(CodecError, match="below the smallest entry"):
        decode_batch(bytes(40))


def test_unknown_magic_is_skipped_by_length():
    data, starts = _three_batches()
    damaged = bytearray(data)
    damaged[starts[1] + 16] = 3
    items = list(iter_batches(bytes(damaged)))
    assert [type(i) for i in items] == [RecordBatch, CorruptBatch, RecordBatch]
    assert "unknown magic 3" in items[1].reason


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        # why: the CRC is right but the records do not agree with the header: a writer bug, reported per batch
        (lambda b: reframe_v2(b, count=5), "records"),
        (lambda b: reframe_v2(b, count=-1), "negative records count"),
        (lambda b: reframe_v2(b, count=10**6), "cannot fit"),
        (lambda b: reframe_v2(b, payload=b[61:] + b"\x00"), "remain after the declared"),
        (lambda b: reframe_v2(b, attributes=5), "unknown compression codec 5"),
        (lambda b: reframe_v2(b, attributes=1), "gzip stream does not decompress"),
        (lambda b: reframe_v2(b, payload=b"\x06\x00\x00\x00\x05\x01\x00"), "invalid key length -3"),
        (lambda b: reframe_v2(b, payload=b"\x0a\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "fields take"),
        (lambda b: reframe_v2(b, payload=b"\x7e\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "runs past"),
        (lambda b: reframe_v2(b, payload=b"\x12\x00\x00\x00\x00\x00\x02\x02\xff\x01"), "UTF-8"),
        (lambda b: b[:8] + struct.pack(">i", 40) + b[12:52], "smaller than its 61-byte header"),
    ],
)
def test_malformed_batches_with_valid_framing(mutate, match):
    good = encode_batch([(b"k", b"v")], base_timestamp=TS, base_sequence=0)
    bad = mutate(good)
    items = list(iter_batches(bad + good))
    assert isinstance(items[0], CorruptBatch) and match in items[0].reason, items[0]
    assert isinstance(items[1], RecordBatch)
    with pytest.raises(CodecError, match=match):
        decode_batch(bad)


def test_malformed_control_record_makes_the_batch_corrupt():
    good = encode_control_batch(
        ControlType.COMMIT, coordinator_epoch=1, base_offset=0, producer_id=1, producer_epoch=0, timestamp=TS
    )
    short_value = reframe_v2(good, payload=b"\x18\x00\x00\x00\x08\x00\x00\x00\x01\x04\x00\x00\x00")
    (item,) = iter_batches(short_value)
    assert isinstance(item, CorruptBatch) and "needs 6 bytes" in item.reason


def test_hand_built_header_properties():
    h = BatchHeader(10, 49, 0, 2, 0, 0x7D, 5, TS, TS, -1, -1, -1, 0, 0)
    assert h.compression is CompressionType.UNKNOWN  # codes 5-7 are unassigned
    assert (h.timestamp_type, h.is_transactional, h.is_control, h.has_delete_horizon) == (
        TimestampType.LOG_APPEND_TIME,
        True,
        True,
        True,
    )
    assert (h.last_offset, h.size_bytes) == (15, 61)
    legacy = BatchHeader(0, 14, -1, 1, 0, 0x38, 0, -1, -1, -1, -1, -1, 1, 0)
    assert not (legacy.is_transactional or legacy.is_control or legacy.has_delete_horizon)
    assert BatchHeader(0, 14, -1, 0, 0, 0x08, 0, -1, -1, -1, -1, -1, 1, 0).timestamp_type is TimestampType.NO_TIMESTAMP


def _valid_mix() -> bytes:
    return b"".join(
        [
            encode_batch(sample_records(4, base=0), base_sequence=0),
            encode_control_batch(
                ControlType.COMMIT, coordinator_epoch=1, base_offset=4, producer_id=1, producer_epoch=0, timestamp=TS
            ),
            encode_batch(sample_records(3, base=5), compression=CompressionType.LZ4),
            encode_legacy_message_set([(b"a", b"1"), (None, b"2")], magic=0, base_offset=8),
            encode_legacy_message_set(
                [(b"a", b"1"), (b"b", None)], magic=1, base_offset=10, timestamp=TS, compression=CompressionType.SNAPPY
            ),
            encode_legacy_message_set([(b"c", b"3")] * 2, magic=0, base_offset=12, compression=CompressionType.LZ4),
            encode_batch(sample_records(2, base=14), compression=CompressionType.ZSTD),
        ]
    )


def _scan_all(data: bytes, verify_crc: bool = True) -> list[RecordBatch | CorruptBatch]:
    items = list(iter_batches(data, verify_crc=verify_crc))
    assert all(isinstance(i, (RecordBatch, CorruptBatch)) for i in items)
    return items


def test_every_truncation_of_valid_data():
    data = _valid_mix()
    full = _scan_all(data)
    assert all(isinstance(i, RecordBatch) for i in full) and len(full) == 8
    for cut in range(len(data)):
        items = _scan_all(data[:cut])
        good = [i for i in items if isinstance(i, RecordBatch)]
        assert good == full[: len(good)]
        if items and isinstance(items[-1], CorruptBatch):
            assert items[-1].truncated


@given(st.binary(max_size=400))
@FUZZ
def test_arbitrary_bytes_never_raise(data):
    _scan_all(data)
    _scan_all(data, verify_crc=False)
    try:
        decode_batch(data, verify_crc=False)
    except CodecError:
        pass


@given(st.data())
@FUZZ
def test_mutated_valid_data_never_raises(draw):
    """Random byte edits of valid data with the CRC check off reach the record and message parsers."""
    data = bytearray(_valid_mix())
    for _ in range(draw.draw(st.integers(1, 4))):
        data[draw.draw(st.integers(0, len(data) - 1))] = draw.draw(st.integers(0, 255))
    _scan_all(bytes(data), verify_crc=False)
    _scan_all(bytes(data))


@given(st.binary(max_size=60), st.binary(max_size=60), st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]))
@FUZZ
def test_valid_framing_around_arbitrary_records(records, prefix, codec):
    """A correct header and CRC around arbitrary (possibly 'compressed') record bytes."""
    good = encode_batch([(b"k", b"v")], base_timestamp=TS)
    for payload in (records, prefix + records):
        for count in (0, 1, 3):
            bad = reframe_v2(good, attributes=codec, payload=payload, count=count)
            items = _scan_all(bad + good)
            assert isinstance(items[-1], RecordBatch)


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.binary(max_size=80)), st.one_of(st.none(), st.binary(max_size=300))),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(ALL_CODECS),
    st.integers(0, 2**40),
    st.integers(-(2**40), 2**40),
)
@settings(max_examples=100, deadline=None)
def test_v2_round_trip_property(records, codec, base_offset, base_timestamp):
    (batch,) = decoded(encode_batch(records, base_offset=base_offset, base_timestamp=base_timestamp, compression=codec))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records] == [
        (base_offset + i, base_timestamp, k, v) for i, (k, v) in enumerate(records)
    ]
