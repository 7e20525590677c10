"""Reading offset ranges the fastest way the cluster allows.

Fetch requests of groupscope's own (:mod:`.fetcher`) where the connection is plaintext and the broker speaks a
Fetch version it knows; librdkafka's consumer (:mod:`.reader`) otherwise (TLS, SASL, an old broker). Both the
source's read tasks and the shard steps that read their own records (:mod:`streaming.job.packed`'s range markers)
read through here, so the two cannot differ in what they read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from .reader import OffsetRange

__all__ = ["RangeRead", "read_range_chunks"]

log = logging.getLogger(__name__)


def read_range_chunks(kafka: Mapping[str, str], ranges: Sequence[OffsetRange], *, timeout_s: float,
                      isolation: str = "read_committed", reader: str = "fetch", keep_connections: bool = False,
                      ) -> Iterator[tuple[tuple[str, int] | None, pa.RecordBatch]]:
    """Every record of ``ranges`` as ``SOURCE`` batches: ``((topic, partition), rows)`` for a chunk of one
    partition in offset order (Fetch requests), ``(None, rows)`` for a batch that may mix partitions (the
    consumer). ``keep_connections``: the process's Fetch connections stay open for the next call."""
    if reader == "fetch":
        from .fetcher import UnsupportedBroker, direct_fetch_refusal, fetch_ranges, shared_leaders

        if direct_fetch_refusal(kafka) is None:
            leaders = shared_leaders(kafka, timeout_s) if keep_connections else None
            chunks = fetch_ranges(kafka, ranges, timeout_s=timeout_s, isolation=isolation, leaders=leaders)
            try:
                first = next(chunks, None)
            except UnsupportedBroker as exc:
                log.warning("%s; reading with the consumer instead", exc)
            else:
                if first is None:
                    return
                yield (first[0], first[1]), first[2]
                for topic, partition, rows in chunks:
                    yield (topic, partition), rows
                return
    from .reader import read_ranges

    for rows in read_ranges(kafka, ranges, timeout_s=timeout_s, isolation=isolation):
        yield None, rows


@dataclass(frozen=True)
class RangeRead:
    """How a shard step reads the ranges it was handed (pickled with the step's function to the executors)."""

    kafka: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 300.0
    isolation: str = "read_committed"
    reader: str = "fetch"

    def rows(self, ranges: Sequence[OffsetRange]) -> list[pa.RecordBatch]:
        return [rows for _, rows in read_range_chunks(self.kafka, ranges, timeout_s=self.timeout_s,
                                                      isolation=self.isolation, reader=self.reader,
                                                      keep_connections=True)]
