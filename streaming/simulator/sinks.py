"""Where the simulator's ``__consumer_offsets`` records (and its topics' messages) go.

The coordinator emulation hands every write to a sink as the broker would append it: an :class:`Append` is one
record batch (one OffsetCommit request, one group-metadata write, one KIP-848 operation: docs/kafka-formats.md#member-removal) with its
``__consumer_offsets`` partition, base offset, timestamp and producer fields; a :class:`Marker` is one COMMIT/ABORT
control batch. Sinks:

* :class:`MemorySink`: keeps the encoded batches in memory; :meth:`MemorySink.replay_into` feeds them to the group
  model the way the segment-file path does (transactional batches held per producer id, markers applied).
* :class:`SegmentSink`: writes broker-format segment files ``DIR/__consumer_offsets-N/00000000000000000000.log``
  (the bytes come from ``protocol.batch``), readable by ``groupscope decode`` and Kafka's ``kafka-dump-log``.
* ``KafkaSink`` (``kafka_sink.py``, the only module here that imports confluent-kafka): produces the records to a real Kafka-protocol
  broker (librdkafka's mock cluster) and real messages to the consumed topics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Protocol, Sequence

from protocol.batch import ControlType, encode_batch, encode_control_batch
from protocol.codec import decode_record

__all__ = ["Append", "Marker", "Sink", "NullSink", "MemorySink", "SegmentSink", "replay_entries"]

KeyValue = tuple[bytes, "bytes | None"]


@dataclass(slots=True)
class Append:
    """One batch of coordinator records, as appended to ``__consumer_offsets`` partition ``partition``."""

    partition: int
    base_offset: int
    timestamp: int
    records: Sequence[KeyValue]
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False


@dataclass(slots=True)
class Marker:
    """A COMMIT (``commit=True``) or ABORT control batch ending ``producer_id``'s transaction on ``partition``."""

    partition: int
    offset: int
    timestamp: int
    producer_id: int
    producer_epoch: int
    commit: bool


Entry = Append | Marker


class Sink(Protocol):
    """What the simulation writes to. ``open`` returns the consumed topics' existing end offsets (base offsets)."""

    def open(self, topics: Mapping[str, int], offsets_partitions: int) -> dict[tuple[str, int], int]: ...
    def append(self, batch: Append) -> None: ...
    def marker(self, marker: Marker) -> None: ...
    def advance_topics(self, ends: Mapping[tuple[str, int], int], now_ms: int) -> None: ...
    def add_partitions(self, topic: str, total: int) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class NullSink:
    """Discards everything (benchmarks of the generator alone)."""

    records = 0

    def open(self, topics, offsets_partitions):
        return {}

    def append(self, batch: Append) -> None:
        self.records += len(batch.records)

    def marker(self, marker: Marker) -> None:
        pass

    def advance_topics(self, ends, now_ms) -> None:
        pass

    def add_partitions(self, topic, total) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class MemorySink(NullSink):
    """Keeps every batch and marker in write order; ``ends`` holds the topics' latest end offsets."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.ends: dict[tuple[str, int], int] = {}
        self.records = 0

    def append(self, batch: Append) -> None:
        self.entries.append(batch)
        self.records += len(batch.records)

    def marker(self, marker: Marker) -> None:
        self.entries.append(marker)

    def advance_topics(self, ends, now_ms) -> None:
        self.ends.update(ends)

    def high_watermarks(self) -> dict[int, int]:
        """Per ``__consumer_offsets`` partition: the next offset (the log end)."""
        out: dict[int, int] = {}
        for e in self.entries:
            end = e.base_offset + len(e.records) if isinstance(e, Append) else e.offset + 1
            out[e.partition] = max(out.get(e.partition, 0), end)
        return out

    def replay_into(self, model, until: Mapping[int, int] | None = None):
        """Replays into a ``CoordinatorModel`` (raw mode: batch headers and markers); see :func:`replay_entries`."""
        return replay_entries(model, self.entries, until)


def replay_entries(model, entries: Iterable[Entry], until: Mapping[int, int] | None = None):
    """Decodes each record's bytes and replays it into ``model`` (a ``CoordinatorModel``) in log order.

    ``until`` maps a partition to an exclusive end offset (partitions not in it are replayed fully). Returns the model.

    Raises:
        CodecError: a record that does not decode (a simulator bug).
    """
    for e in entries:
        stop = None if until is None else until.get(e.partition)
        shard = model.shard(e.partition)
        if isinstance(e, Marker):
            if stop is None or e.offset < stop:
                shard.replay_end_txn_marker(e.producer_id, 1 if e.commit else 0, e.offset, e.timestamp)
            continue
        for i, (key, value) in enumerate(e.records):
            offset = e.base_offset + i
            if stop is not None and offset >= stop:
                break
            shard.replay(offset, e.timestamp, decode_record(key, value), e.producer_id, e.producer_epoch,
                         e.transactional)
    return model


class SegmentSink(NullSink):
    """Streams batches into one segment file per ``__consumer_offsets`` partition under ``directory``.

    Files are opened lazily and written as batches arrive (a 10M-record backlog never sits in memory).
    ``leader_epoch`` is the batches' partitionLeaderEpoch (a single-broker cluster that never failed over: 0).
    """

    def __init__(self, directory: str | os.PathLike, *, leader_epoch: int = 0) -> None:
        self.directory = Path(directory)
        self.leader_epoch = leader_epoch
        self._files: dict[int, object] = {}
        self.records = 0
        self.ends: dict[tuple[str, int], int] = {}

    def _file(self, partition: int):
        fh = self._files.get(partition)
        if fh is None:
            folder = self.directory / f"__consumer_offsets-{partition}"
            folder.mkdir(parents=True, exist_ok=True)
            fh = self._files[partition] = open(folder / "00000000000000000000.log", "wb", buffering=1 << 20)
        return fh

    def append(self, batch: Append) -> None:
        data = encode_batch(batch.records, base_offset=batch.base_offset, base_timestamp=batch.timestamp,
                            partition_leader_epoch=self.leader_epoch, producer_id=batch.producer_id,
                            producer_epoch=batch.producer_epoch, base_sequence=0,
                            transactional=batch.transactional)
        self._file(batch.partition).write(data)
        self.records += len(batch.records)

    def marker(self, marker: Marker) -> None:
        data = encode_control_batch(ControlType.COMMIT if marker.commit else ControlType.ABORT, coordinator_epoch=0,
                                    base_offset=marker.offset, producer_id=marker.producer_id,
                                    producer_epoch=marker.producer_epoch, timestamp=marker.timestamp,
                                    partition_leader_epoch=self.leader_epoch)
        self._file(marker.partition).write(data)

    def advance_topics(self, ends, now_ms) -> None:
        self.ends.update(ends)

    def flush(self) -> None:
        for fh in self._files.values():
            fh.flush()

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files.clear()
