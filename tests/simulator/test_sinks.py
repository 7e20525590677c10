"""Where the simulator's records go: ``MemorySink`` keeps them in log order and replays them with Kafka's
transaction rules, ``SegmentSink`` writes broker-format segment files whose bytes follow Kafka's record batch v2
layout (checked here field by field, with a CRC-32C computed independently), ``NullSink`` only counts.
"""

from __future__ import annotations

import struct
from pathlib import Path

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.model.describe import describe
from streaming.model.shard import CoordinatorModel
from streaming.simulator.expected import project
from streaming.simulator.sinks import Append, Marker, MemorySink, NullSink, SegmentSink, replay_entries

T0 = 1_767_225_600_000


def _commit(offset: int, at: int = T0) -> tuple[bytes, bytes | None]:
    return encode_record(new_offset_commit("billing", "invoices", 0, offset, commit_timestamp=at))


def _crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: what Kafka's batch v2 CRC uses."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _batches(path: Path) -> list[dict]:
    """The v2 batch headers of a segment file, read by the layout in Kafka's DefaultRecordBatch."""
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        (leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, epoch, base_seq,
         count) = struct.unpack_from(">ibIhiqqqhii", data, pos + 12)
        out.append(dict(base_offset=base_offset, leader_epoch=leader_epoch, magic=magic, crc=crc,
                        crc_ok=crc == _crc32c(data[pos + 21:end]), transactional=bool(attributes & 0x10),
                        control=bool(attributes & 0x20), last_offset_delta=last_delta, base_timestamp=base_ts,
                        producer_id=pid, producer_epoch=epoch, base_sequence=base_seq, count=count,
                        records=data[pos + 61:end]))
        pos = end
    assert pos == len(data), "a batch ran past the end of the file"
    return out


def _offsets(model: CoordinatorModel) -> dict:
    return {g: d["offsets"] for g, d in project(describe(model)).items()}


def test_the_segment_file_holds_v2_batches_kafka_can_read(tmp_path):
    sink = SegmentSink(tmp_path, leader_epoch=4)
    sink.append(Append(7, 0, T0, [_commit(10), _commit(11)]))
    sink.append(Append(7, 2, T0 + 5, [_commit(12)], producer_id=3000, producer_epoch=2, transactional=True))
    sink.marker(Marker(7, 3, T0 + 9, 3000, 2, commit=True))
    sink.close()
    assert sink.records == 3
    segment = tmp_path / "__consumer_offsets-7" / "00000000000000000000.log"
    assert [p.name for p in tmp_path.iterdir()] == ["__consumer_offsets-7"]
    plain, txn, marker = _batches(segment)

    assert all(b["magic"] == 2 and b["leader_epoch"] == 4 and b["crc_ok"] for b in (plain, txn, marker))
    assert (plain["base_offset"], plain["count"], plain["last_offset_delta"], plain["base_timestamp"]) == (0, 2, 1, T0)
    # Not idempotent: producer id and epoch -1 (Kafka's NO_PRODUCER_ID / NO_PRODUCER_EPOCH).
    assert (plain["producer_id"], plain["producer_epoch"], plain["transactional"], plain["control"]) == \
        (-1, -1, False, False)
    assert (txn["base_offset"], txn["producer_id"], txn["producer_epoch"], txn["transactional"]) == (2, 3000, 2, True)
    assert (marker["base_offset"], marker["count"], marker["control"], marker["transactional"]) == (3, 1, True, True)
    # The control record's key: version 0 then type 1 (COMMIT), both int16 big-endian, after the record's
    # length, attributes, timestamp delta, offset delta (all varints) and key length (zigzag 4 -> 0x08).
    assert b"\x08\x00\x00\x00\x01" in marker["records"]


def test_an_abort_marker_writes_control_type_zero(tmp_path):
    sink = SegmentSink(tmp_path)
    sink.marker(Marker(0, 0, T0, 9, 0, commit=False))
    sink.close()
    (marker,) = _batches(tmp_path / "__consumer_offsets-0" / "00000000000000000000.log")
    assert marker["control"] and marker["crc_ok"] and b"\x08\x00\x00\x00\x00" in marker["records"]


def test_segments_decode_back_to_the_same_groups_as_memory(tmp_path):
    from streaming.offline.segment_replay import replay_segments

    entries = [Append(3, 0, T0, [_commit(5)]),
               Append(3, 1, T0 + 1, [_commit(9)], producer_id=77, producer_epoch=0, transactional=True),
               Marker(3, 2, T0 + 2, 77, 0, commit=False)]
    memory, segments = MemorySink(), SegmentSink(tmp_path)
    for e in entries:
        for sink in (memory, segments):
            (sink.append if isinstance(e, Append) else sink.marker)(e)
    segments.close()
    model, report = replay_segments(tmp_path)
    assert not report.problems
    assert _offsets(model) == _offsets(memory.replay_into(CoordinatorModel())) == \
        {"billing": {"invoices:0": [5, "", None]}}, "the aborted commit of 9 never counts"


def test_replay_applies_a_transactional_commit_only_at_its_commit_marker():
    entries = [Append(0, 0, T0, [_commit(5)]),
               Append(0, 1, T0 + 1, [_commit(9)], producer_id=77, producer_epoch=0, transactional=True),
               Marker(0, 2, T0 + 2, 77, 0, commit=True)]
    # Up to (not including) the marker, the transaction is open: the group still reads 5.
    assert _offsets(replay_entries(CoordinatorModel(), entries, until={0: 2})) == \
        {"billing": {"invoices:0": [5, "", None]}}
    assert _offsets(replay_entries(CoordinatorModel(), entries)) == {"billing": {"invoices:0": [9, "", None]}}
    # ``until`` is an exclusive end: offset 1 itself is left out, and other partitions are replayed fully.
    assert _offsets(replay_entries(CoordinatorModel(), entries, until={0: 1, 5: 0})) == \
        {"billing": {"invoices:0": [5, "", None]}}


def test_high_watermarks_are_the_next_offset_of_each_partition():
    sink = MemorySink()
    sink.append(Append(1, 10, T0, [_commit(1), _commit(2)]))  # offsets 10, 11
    sink.marker(Marker(1, 12, T0, 5, 0, commit=True))  # a marker takes one offset
    sink.append(Append(4, 0, T0, [_commit(3)]))
    assert sink.high_watermarks() == {1: 13, 4: 1}
    assert sink.records == 3 and len(sink.entries) == 3


def test_the_null_sink_counts_records_and_keeps_nothing():
    sink = NullSink()
    assert sink.open({"t": 1}, 50) == {}
    sink.append(Append(0, 0, T0, [_commit(1), _commit(2)]))
    sink.marker(Marker(0, 2, T0, 5, 0, commit=True))
    assert sink.records == 2 and not hasattr(sink, "entries")
