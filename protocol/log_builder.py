"""Builds the bytes of a ``__consumer_offsets`` partition log, batch by batch, the way a broker appends them.

Tests, examples and offline tools need realistic segment files: offsets that advance across batches, the new
coordinator's batch shape (CREATE_TIME, baseSequence 0, producer id -1), transactional batches and their COMMIT /
ABORT markers. This keeps that bookkeeping in one place; the bytes themselves come from ``batch`` and ``codec``.
"""

from __future__ import annotations

from typing import Iterable

from .batch import CompressionType, ControlType, LogRecord, encode_batch, encode_control_batch
from .codec import encode_record
from .records import CoordinatorRecord, UnknownRecord

__all__ = ["PartitionLogBuilder"]


class PartitionLogBuilder:
    """Appends batches to one partition's log; :meth:`getvalue` returns the segment file's bytes."""

    def __init__(self, *, base_offset: int = 0, leader_epoch: int = 0) -> None:
        self.next_offset = base_offset
        self.leader_epoch = leader_epoch
        self._chunks: list[bytes] = []

    def append(
        self,
        records: Iterable[CoordinatorRecord | UnknownRecord | tuple[bytes | None, bytes | None]],
        *,
        timestamp: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool = False,
        compression: CompressionType = CompressionType.NONE,
    ) -> range:
        """Appends one batch; returns the offsets it took."""
        encoded = [r if isinstance(r, tuple) else encode_record(r) for r in records]
        if not encoded:
            raise ValueError("a batch needs at least one record")
        first = self.next_offset
        log_records = [
            LogRecord(offset=first + i, timestamp=timestamp, key=key, value=value)
            for i, (key, value) in enumerate(encoded)
        ]
        self._chunks.append(
            encode_batch(
                log_records,
                compression=compression,
                partition_leader_epoch=self.leader_epoch,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=0,
                transactional=transactional,
            )
        )
        self.next_offset += len(encoded)
        return range(first, self.next_offset)

    def append_marker(
        self, control_type: ControlType, *, producer_id: int, producer_epoch: int, timestamp: int,
        coordinator_epoch: int = 0,
    ) -> int:
        """Appends a COMMIT or ABORT control batch; returns its offset."""
        offset = self.next_offset
        self._chunks.append(
            encode_control_batch(
                control_type,
                coordinator_epoch=coordinator_epoch,
                base_offset=offset,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                timestamp=timestamp,
                partition_leader_epoch=self.leader_epoch,
            )
        )
        self.next_offset += 1
        return offset

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)
