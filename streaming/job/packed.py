"""Source records packed per Kafka partition: the streaming query moves one row per chunk, not one per record.

Why: the records only pass through Spark on their way to one shard step each, and Spark's per-row costs dominated
the job (Arrow batches from the Python source turned into JVM rows, shuffled, turned back into pandas rows for
``applyInPandasWithState``): an identity stateful query alone took about 4 s per million records here. Packed, a
chunk of up to ``read_ranges``' batch size travels as one Arrow IPC ``payload`` row keyed by its partition, and the
step unpacks it into exactly the table it would otherwise have rebuilt from pandas.

The source's rows (``PACKED_SCHEMA``) say which topic and partition a chunk holds, so the query still routes
heartbeat chunks to every shard and a ``__consumer_offsets`` chunk to the shard of its partition.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.job.batch_sink import decode_table, encode_table
from streaming.kafka.reader import OffsetRange
from streaming.schema.tables import SOURCE

__all__ = ["PACKED_DDL", "PACKED_SCHEMA", "pack", "pack_partitions", "pack_ranges", "split_ranges", "unpack"]

# A payload that names a range instead of holding its records (see ``pack_ranges``). No Arrow IPC stream starts so.
_RANGE_MAGIC = b"GSRANGE1"
_RANGE_HEAD = struct.Struct(">iqq")  # partition, first offset, end offset (exclusive); the topic's UTF-8 follows

PACKED_DDL = "topic string, partition int, records int, payload binary"
PACKED_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int32()),
                           ("payload", pa.binary())])


def pack(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """One ``PACKED_SCHEMA`` batch holding ``batch`` (``SOURCE`` rows) as one row per topic-partition, records in
    offset order within each."""
    if batch.num_rows == 0:
        return
    table = pa.Table.from_batches([batch]).sort_by([("topic", "ascending"), ("partition", "ascending"),
                                                    ("offset", "ascending")])
    partitions = table.column("partition").to_numpy()
    topic_codes = pc.dictionary_encode(table.column("topic")).combine_chunks().indices.to_numpy()
    starts = np.flatnonzero((np.diff(partitions) != 0) | (np.diff(topic_codes) != 0)) + 1
    bounds = [0, *starts.tolist(), table.num_rows]
    yield pack_partitions((table.column("topic")[lo].as_py(), int(partitions[lo]), table.slice(lo, hi - lo))
                          for lo, hi in zip(bounds, bounds[1:]))


def pack_partitions(chunks: Iterable[tuple[str, int, pa.RecordBatch | pa.Table]]) -> pa.RecordBatch:
    """One ``PACKED_SCHEMA`` batch of chunks that each hold one topic-partition's ``SOURCE`` rows in offset order
    already: one row per chunk."""
    topics, parts, counts, payloads = [], [], [], []
    for topic, partition, rows in chunks:
        topics.append(topic)
        parts.append(partition)
        counts.append(rows.num_rows)
        payloads.append(encode_table(rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])))
    return pa.RecordBatch.from_arrays([pa.array(topics, pa.string()), pa.array(parts, pa.int32()),
                                       pa.array(counts, pa.int32()), pa.array(payloads, pa.binary())],
                                      schema=PACKED_SCHEMA)


def unpack(payloads: Iterable[bytes]) -> pa.Table:
    """The ``SOURCE`` rows of the given chunks, in the order given (empty table for none)."""
    tables = [decode_table(p) for p in payloads]
    if not tables:
        return SOURCE.empty_table()
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def pack_ranges(ranges: Iterable[OffsetRange]) -> pa.RecordBatch:
    """One ``PACKED_SCHEMA`` row per range, its payload naming the range rather than holding its records.

    Why: the records of ``__consumer_offsets`` only pass through Spark on their way to the one shard step that
    applies them; in local mode and on a cluster alike that step can read them from Kafka itself. Each byte then
    crosses from Python to the JVM, through the shuffle and back no more: on the catch-up this was most of the
    JVM's work. The range is planned by the source and kept in the checkpoint as before, so a batch run again
    reads exactly the same records."""
    ranges = list(ranges)
    payloads = [_RANGE_MAGIC + _RANGE_HEAD.pack(r.partition, r.start, r.end) + r.topic.encode() for r in ranges]
    return pa.RecordBatch.from_arrays([pa.array([r.topic for r in ranges], pa.string()),
                                       pa.array([r.partition for r in ranges], pa.int32()),
                                       pa.array([r.size for r in ranges], pa.int32()),
                                       pa.array(payloads, pa.binary())], schema=PACKED_SCHEMA)


def split_ranges(payloads: Iterable[bytes]) -> tuple[list[bytes], list[OffsetRange]]:
    """The payloads that hold records, and the ranges the others name (in the order given)."""
    data, ranges = [], []
    for p in payloads:
        if p[:len(_RANGE_MAGIC)] == _RANGE_MAGIC:
            head = len(_RANGE_MAGIC) + _RANGE_HEAD.size
            partition, start, end = _RANGE_HEAD.unpack(p[len(_RANGE_MAGIC):head])
            ranges.append(OffsetRange(bytes(p[head:]).decode(), partition, start, end))
        else:
            data.append(p)
    return data, ranges
