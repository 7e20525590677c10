"""The two executor-side range readers behind one call, so their tests can read the same ranges with either and
compare: the consumer (``streaming.kafka.reader.read_ranges``) and the direct Fetch reader
(``streaming.kafka.fetcher.fetch_ranges``)."""

from __future__ import annotations

import pyarrow as pa

from streaming.kafka.fetcher import fetch_ranges
from streaming.kafka.reader import OffsetRange, read_ranges

READERS = ["consumer", "fetch"]


def read_batches(reader: str, bootstrap: str, ranges: list[OffsetRange], **kw) -> list[pa.RecordBatch]:
    """The batches ``reader`` hands on; a Fetch chunk is checked to hold one partition's rows in offset order."""
    kafka = {"bootstrap.servers": bootstrap}
    if reader == "consumer":
        return list(read_ranges(kafka, ranges, **kw))
    chunks = list(fetch_ranges(kafka, ranges, **kw))
    for topic, partition, batch in chunks:  # each chunk: one partition's rows, in offset order
        assert set(batch.column("topic").to_pylist()) == {topic}
        assert set(batch.column("partition").to_pylist()) == {partition}
        offsets = batch.column("offset").to_pylist()
        assert offsets == sorted(offsets)
    return [batch for _, _, batch in chunks]


def read_table(bootstrap: str, ranges: list[OffsetRange], reader: str = "consumer", **kw) -> pa.Table:
    """Everything ``reader`` reads of ``ranges`` as one table (an empty one when nothing is read)."""
    batches = read_batches(reader, bootstrap, ranges, **kw)
    return pa.Table.from_batches(batches) if batches else pa.table({})
