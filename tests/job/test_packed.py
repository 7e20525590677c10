"""Packed source chunks: what the Spark query moves instead of one row per record must give each shard step exactly
the records it would have had, per partition and in offset order."""

from __future__ import annotations

import random

import pyarrow as pa

from streaming.job.packed import PACKED_SCHEMA, pack, unpack
from streaming.schema.tables import SOURCE


def _batch(rows: list[tuple[str, int, int]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"key": b"k%d" % o, "value": None if o % 7 == 0 else b"v%d" % o, "topic": t, "partition": p, "offset": o,
          "timestamp": 1_767_225_600_000_000 + o} for t, p, o in rows], schema=SOURCE)


def test_one_chunk_per_topic_partition_in_offset_order():
    rng = random.Random(5)
    rows = [(t, p, o) for t in ("__consumer_offsets", "groupscope-heartbeat") for p in range(3) for o in range(40)]
    rng.shuffle(rows)  # the reader interleaves partitions
    (packed,) = list(pack(_batch(rows)))
    assert packed.schema == PACKED_SCHEMA
    keys = list(zip(packed.column("topic").to_pylist(), packed.column("partition").to_pylist()))
    assert sorted(keys) == sorted({(t, p) for t, p, _ in rows}) and len(keys) == 6
    assert packed.column("records").to_pylist() == [40] * 6
    for i, (topic, partition) in enumerate(keys):
        chunk = unpack([packed.column("payload")[i].as_py()])
        assert chunk.schema == SOURCE
        assert set(chunk.column("topic").to_pylist()) == {topic}
        assert set(chunk.column("partition").to_pylist()) == {partition}
        assert chunk.column("offset").to_pylist() == list(range(40))
        assert chunk.column("value").to_pylist()[7] is None, "tombstones stay null"


def test_unpacking_every_chunk_gives_back_every_record():
    rows = [("__consumer_offsets", p, o) for p in (4, 1) for o in range(100, 130)]
    batch = _batch(rows)
    packed = [b for part in (batch.slice(0, 25), batch.slice(25)) for b in pack(part)]
    table = unpack(p for b in packed for p in b.column("payload").to_pylist())
    original = pa.Table.from_batches([batch])
    key = [("partition", "ascending"), ("offset", "ascending")]
    assert table.sort_by(key).equals(original.sort_by(key))


def test_nothing_in_nothing_out():
    assert list(pack(pa.RecordBatch.from_pylist([], schema=SOURCE))) == []
    assert unpack([]).num_rows == 0 and unpack([]).schema == SOURCE


def test_range_markers_name_their_ranges_and_pass_record_chunks_through():
    from streaming.job.packed import pack_ranges, split_ranges
    from streaming.kafka.reader import OffsetRange

    ranges = [OffsetRange("__consumer_offsets", 7, 100, 2_000_100), OffsetRange("t-é", 0, 0, 1)]
    markers = pack_ranges(ranges)
    assert markers.schema == PACKED_SCHEMA
    assert markers.column("records").to_pylist() == [2_000_000, 1]
    data = pack(_batch([("groupscope-heartbeat", 0, o) for o in range(3)]))
    payloads = [*markers.column("payload").to_pylist()[:1], *(p for b in data for p in b.column("payload").to_pylist()),
                markers.column("payload")[1].as_py()]
    kept, named = split_ranges(payloads)
    assert named == ranges
    assert unpack(kept).column("offset").to_pylist() == [0, 1, 2]
