"""PartitionLogBuilder: a partition log built batch by batch, read back with the batch scanner. Offsets advance
across batches, each batch has the shape the new group coordinator writes, and markers close transactions."""

from __future__ import annotations

import pytest

from protocol import builders as b
from protocol import decode_record
from protocol.batch import CompressionType, ControlType, RecordBatch, TimestampType, iter_batches
from protocol.codec import encode_record
from protocol.log_builder import PartitionLogBuilder

TS = 1_700_000_000_000


def _batches(data: bytes) -> list[RecordBatch]:
    items = list(iter_batches(data))
    assert all(isinstance(item, RecordBatch) for item in items), items
    return items  # type: ignore[return-value]


def _commit(partition: int, offset: int):
    return b.new_offset_commit("g", "t", partition, offset, commit_timestamp=TS)


def test_offsets_advance_across_batches_from_the_base_offset():
    log = PartitionLogBuilder(base_offset=100, leader_epoch=3)
    first = log.append([_commit(0, 1), _commit(1, 2)], timestamp=TS)
    second = log.append([_commit(0, 5)], timestamp=TS + 1)
    assert (first, second, log.next_offset) == (range(100, 102), range(102, 103), 103)
    one, two = _batches(log.getvalue())
    assert (one.header.base_offset, one.header.last_offset, two.header.base_offset) == (100, 101, 102)
    assert [r.offset for r in one.records + two.records] == [100, 101, 102]
    assert one.header.partition_leader_epoch == 3 and two.header.max_timestamp == TS + 1


def test_batches_have_the_new_coordinators_shape():
    """CREATE_TIME, base sequence 0, no producer (id and epoch -1), not transactional, uncompressed."""
    log = PartitionLogBuilder()
    log.append([_commit(0, 1)], timestamp=TS)
    (batch,) = _batches(log.getvalue())
    h = batch.header
    assert (h.magic, h.timestamp_type, h.base_sequence, h.producer_id, h.producer_epoch) == (
        2, TimestampType.CREATE_TIME, 0, -1, -1)
    assert not h.is_transactional and not h.is_control and h.compression is CompressionType.NONE


def test_records_decode_back_to_what_was_appended():
    records = [_commit(0, 7), b.new_group_metadata_tombstone("g"), b.new_consumer_group_epoch("g", 2)]
    log = PartitionLogBuilder()
    log.append(records, timestamp=TS, compression=CompressionType.ZSTD)
    (batch,) = _batches(log.getvalue())
    assert batch.header.compression is CompressionType.ZSTD
    assert [decode_record(r.key, r.value) for r in batch.records] == records
    assert all(r.timestamp == TS for r in batch.records)


def test_raw_key_value_pairs_are_taken_as_they_are():
    key, value = encode_record(_commit(0, 1))
    log = PartitionLogBuilder()
    log.append([(key, value), (key, None)], timestamp=TS)
    (batch,) = _batches(log.getvalue())
    assert [(r.key, r.value) for r in batch.records] == [(key, value), (key, None)]


def test_transaction_then_commit_marker():
    log = PartitionLogBuilder(base_offset=10)
    offsets = log.append([_commit(0, 1)], timestamp=TS, producer_id=77, producer_epoch=2, transactional=True)
    marker = log.append_marker(ControlType.COMMIT, producer_id=77, producer_epoch=2, timestamp=TS + 5,
                               coordinator_epoch=4)
    assert (offsets, marker, log.next_offset) == (range(10, 11), 11, 12)
    data_batch, control_batch = _batches(log.getvalue())
    assert data_batch.header.is_transactional and data_batch.header.producer_id == 77
    assert control_batch.header.is_control and control_batch.header.base_offset == 11
    assert (control_batch.header.producer_id, control_batch.header.producer_epoch) == (77, 2)
    assert control_batch.control.control_type is ControlType.COMMIT
    assert control_batch.control.coordinator_epoch == 4


def test_abort_marker():
    log = PartitionLogBuilder()
    log.append_marker(ControlType.ABORT, producer_id=1, producer_epoch=0, timestamp=TS)
    (batch,) = _batches(log.getvalue())
    assert batch.control.control_type is ControlType.ABORT


def test_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one record"):
        PartitionLogBuilder().append([], timestamp=TS)


def test_an_empty_log_is_empty_bytes():
    assert PartitionLogBuilder().getvalue() == b""
