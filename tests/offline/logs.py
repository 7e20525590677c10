"""Hand-built ``__consumer_offsets`` logs for the offline readers' tests: plain and transactional batches, COMMIT
and ABORT markers (Kafka's control record: key version 0 and type, value version 0 and coordinator epoch), written as
segment files in a ``__consumer_offsets-N`` folder as a broker lays them out."""

from __future__ import annotations

import struct

from protocol.batch import encode_batch
from streaming.offline.segments import find_segments

ABORT, COMMIT = 0, 1  # Kafka's control record types


T = 1_795_000_000_000


def plain(offset: int, n: int = 1) -> bytes:
    return encode_batch([(f"k{offset + i}".encode(), b"v") for i in range(n)], base_offset=offset,
                        base_timestamp=T + offset)


def txn(offset: int, pid: int, n: int = 1) -> bytes:
    return encode_batch([(f"k{offset + i}".encode(), b"v") for i in range(n)], base_offset=offset,
                        base_timestamp=T + offset, producer_id=pid, producer_epoch=0, base_sequence=0,
                        transactional=True)


def marker(offset: int, pid: int, kind: int) -> bytes:
    return encode_batch([(struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 3))], base_offset=offset,
                        base_timestamp=T + offset, producer_id=pid, producer_epoch=0, transactional=True,
                        is_control=True)


def write_log(tmp_path, segments: list[list[bytes]], partition: int = 3):
    """Each list of batches as one segment file named after its first offset, in ``__consumer_offsets-<partition>``."""
    folder = tmp_path / f"__consumer_offsets-{partition}"
    folder.mkdir(parents=True)
    for batches in segments:
        first = struct.unpack(">q", batches[0][:8])[0]
        (folder / f"{first:020d}.log").write_bytes(b"".join(batches))
    return find_segments(folder)
