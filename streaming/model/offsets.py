"""Committed and pending transactional offsets of one coordinator shard.

Mirrors Kafka's ``OffsetMetadataManager`` (``replay``, ``replayEndTransactionMarker``; docs/kafka-formats.md#offset-replay):

* a plain commit applies at once;
* a transactional commit waits under its producer id, with an index of the open transactions of each group;
* on COMMIT a pending offset moves in only if its record offset is newer than the stored one's (safe under
  compaction: a later plain commit wins); on ABORT it is dropped;
* an offset tombstone removes the committed offset and the matching pending entries of the group's open
  transactions.

Layout, tuned for the hot path and for memory (target ≤ 200 B per tracked group-partition): per (group, topic) one
:class:`TopicOffsets` holding ``array`` columns indexed by partition number (partitions are dense 0..N-1), and a
per-partition ring of the last ``window`` commits for the status rules. The simple version — a dict keyed by
``(group, topic, partition)`` of small objects — cost ~700 B per partition and two allocations per commit.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Iterator, Mapping

__all__ = ["NO_OFFSET", "NO_STATUS", "TopicOffsets", "OffsetStore"]

NO_OFFSET = -(2**63)  # "no committed offset" in the offset column (Kafka never writes this value)
NO_STATUS = 255  # "never evaluated" in the status column
_intern = sys.intern


class TopicOffsets:
    """Offsets of one group on one topic, columns indexed by partition.

    Restored lazily: a topic read from a checkpoint keeps its columns as the one packed buffer they were saved in
    until something reads or changes them, and a topic nothing touched is saved as that same buffer. Why: every
    batch restores and saves its shard's whole state, yet a batch touches the groups that committed and, every
    ``snapshot_interval_ms``, the rest; at 10,000 groups committing every 5 s, turning every topic's columns into
    arrays and back was about two thirds of a shard's restore and save (``benchmarks/bench_state.py``)."""

    __slots__ = ("offset", "epoch", "commit_ts", "record_offset", "metadata", "hist_ts", "hist_off", "hist_head",
                 "hist_len", "count", "status", "_packed")

    def __init__(self, size: int, window: int) -> None:
        self._packed: bytes | None = None  # the saved columns, until first used (then None: the arrays are current)
        self.offset = array("q", [NO_OFFSET]) * size
        self.epoch = array("i", [-1]) * size
        self.commit_ts = array("q", [0]) * size
        self.record_offset = array("q", [-1]) * size
        self.metadata: list[str] | None = None  # None while every metadata is "" (the common case)
        self.hist_ts = array("q", [0]) * (size * window)
        self.hist_off = array("q", [0]) * (size * window)
        self.hist_head = bytearray(size)
        self.hist_len = bytearray(size)
        self.count = 0  # partitions with a committed offset
        self.status = bytearray(b"\xff") * size  # last evaluated status code; 255 = never evaluated

    def grow(self, size: int, window: int) -> None:
        extra = size - len(self.offset)
        if extra <= 0:
            return
        self.offset.extend(array("q", [NO_OFFSET]) * extra)
        self.epoch.extend(array("i", [-1]) * extra)
        self.commit_ts.extend(array("q", [0]) * extra)
        self.record_offset.extend(array("q", [-1]) * extra)
        if self.metadata is not None:
            self.metadata.extend([""] * extra)
        self.hist_ts.extend(array("q", [0]) * (extra * window))
        self.hist_off.extend(array("q", [0]) * (extra * window))
        self.hist_head.extend(bytes(extra))
        self.hist_len.extend(bytes(extra))
        self.status.extend(b"\xff" * extra)

    _ARRAYS = (("offset", "q"), ("epoch", "i"), ("commit_ts", "q"), ("record_offset", "q"), ("hist_ts", "q"),
               ("hist_off", "q"))
    _BYTES = ("hist_head", "hist_len", "status")
    # The packed buffer: partitions, window slots (partitions x window) and count, then the columns in the order of
    # _ARRAYS and _BYTES, machine order.
    _HEADER = struct.Struct("<III")

    def __getattr__(self, name: str):
        """Called only for a column slot not yet set: unpacks the saved columns on first use."""
        if name != "_packed" and self._packed is not None:
            self._unpack()
            return getattr(self, name)
        raise AttributeError(name)

    def to_state(self) -> tuple[bytes, tuple[str, ...] | None]:
        """The columns packed into one buffer (:mod:`.state_format`, version 3), and the metadata (None: all "")."""
        metadata = None if self.metadata is None else tuple(self.metadata)
        if self._packed is not None:
            return self._packed, metadata
        size, slots = len(self.offset), len(self.hist_ts)
        parts = [self._HEADER.pack(size, slots, self.count)]
        parts.extend(getattr(self, name).tobytes() for name, _ in self._ARRAYS)
        parts.extend(bytes(getattr(self, name)) for name in self._BYTES)
        return b"".join(parts), metadata

    @classmethod
    def from_state(cls, state: tuple | Mapping) -> "TopicOffsets":
        """Reads :meth:`to_state`'s packed pair (its columns unpacked on first use) or version 2's columns by
        name."""
        self = cls.__new__(cls)
        if not isinstance(state, tuple):  # version 2: one bytes value per column name (a tuple test is the cheap one)
            self._packed = None
            self.offset, self.epoch, self.commit_ts, self.record_offset, self.hist_ts, self.hist_off = (
                _column(code, state[name]) for name, code in cls._ARRAYS)
            self.hist_head, self.hist_len, self.status = (bytearray(state[name]) for name in cls._BYTES)
            metadata, self.count = state["metadata"], state["count"]
        else:
            packed, metadata = state
            self._packed = packed
            self.count = cls._HEADER.unpack_from(packed)[2]
        self.metadata = None if metadata is None else [_intern(m) for m in metadata]
        return self

    def _unpack(self) -> None:
        packed = memoryview(self._packed)
        size, slots, _ = self._HEADER.unpack_from(packed)
        at = self._HEADER.size
        for name, code in self._ARRAYS:
            column = array(code)
            end = at + column.itemsize * (slots if name.startswith("hist_") else size)
            column.frombytes(packed[at:end])
            setattr(self, name, column)
            at = end
        for name in self._BYTES:
            setattr(self, name, bytearray(packed[at:at + size]))
            at += size
        self._packed = None


def _column(code: str, data: bytes) -> array:
    column = array(code)
    column.frombytes(data)
    return column


class OffsetStore:
    """All committed offsets and open transactional offsets of one shard."""

    __slots__ = ("groups", "pending", "open_by_group", "window", "min_distance_ms")

    def __init__(self, window: int = 8, min_distance_ms: int = 1000) -> None:
        if not 1 <= window <= 255:
            raise ValueError(f"window must be 1..255, got {window}")
        self.groups: dict[str, dict[str, TopicOffsets]] = {}
        # producer id -> {(group, topic, partition): (offset, leader_epoch, metadata, commit_ts, record_offset)}
        self.pending: dict[int, dict[tuple[str, str, int], tuple[int, int, str, int, int]]] = {}
        self.open_by_group: dict[str, set[int]] = {}
        self.window = window
        self.min_distance_ms = min_distance_ms

    # ---- hot path ------------------------------------------------------------------------------------------

    def commit(self, group: str, topic: str, partition: int, offset: int, leader_epoch: int, metadata: str,
               commit_ts: int, record_offset: int) -> bool:
        """Stores a committed offset; returns True if the group-partition is new."""
        topics = self.groups.get(group)
        if topics is None:
            topics = self.groups[group] = {}
        t = topics.get(topic)
        w = self.window
        if t is None:
            t = topics[_intern(topic)] = TopicOffsets(partition + 1, w)
        elif partition >= len(t.offset):
            t.grow(partition + 1, w)
        new = t.offset[partition] == NO_OFFSET
        if new:
            t.count += 1
        t.offset[partition] = offset
        t.epoch[partition] = leader_epoch
        t.commit_ts[partition] = commit_ts
        t.record_offset[partition] = record_offset
        if metadata:
            md = t.metadata
            if md is None:
                md = t.metadata = [""] * len(t.offset)
            md[partition] = _intern(metadata)
        elif t.metadata is not None:
            t.metadata[partition] = ""
        # Commit window: a commit closer than min_distance to the newest slot overwrites that slot's offset and
        # keeps its (older) time, so a fast committer cannot shrink the window's time span (Burrow min-distance).
        base = partition * w
        n = t.hist_len[partition]
        head = t.hist_head[partition]
        if n:
            last = base + (head - 1) % w
            if commit_ts - t.hist_ts[last] < self.min_distance_ms and not new:
                t.hist_off[last] = offset
                return new
        i = base + head
        t.hist_ts[i] = commit_ts
        t.hist_off[i] = offset
        t.hist_head[partition] = (head + 1) % w
        if n < w:
            t.hist_len[partition] = n + 1
        return new

    # ---- transactions --------------------------------------------------------------------------------------

    def commit_pending(self, producer_id: int, group: str, topic: str, partition: int, offset: int,
                       leader_epoch: int, metadata: str, commit_ts: int, record_offset: int) -> None:
        """Holds a transactional commit until its producer's COMMIT/ABORT marker."""
        entries = self.pending.get(producer_id)
        if entries is None:
            entries = self.pending[producer_id] = {}
        entries[(group, topic, partition)] = (offset, leader_epoch, metadata, commit_ts, record_offset)
        self.open_by_group.setdefault(group, set()).add(producer_id)

    def end_transaction(self, producer_id: int, commit: bool) -> tuple[int, int, set[str]]:
        """Applies (COMMIT) or drops (ABORT) a producer's pending offsets: ``(applied, skipped, groups)``.

        A pending offset is applied only if its record offset is newer than the stored offset's record offset.
        """
        entries = self.pending.pop(producer_id, None)
        if entries is None:
            return 0, 0, set()
        groups = {g for g, _, _ in entries}
        for g in groups:
            open_txns = self.open_by_group.get(g)
            if open_txns is not None:
                open_txns.discard(producer_id)
                if not open_txns:
                    del self.open_by_group[g]
        applied = skipped = 0
        if commit:
            for (g, topic, partition), (off, epoch, md, ts, rec) in entries.items():
                existing = self.record_offset_of(g, topic, partition)
                if existing is None or rec > existing:
                    self.commit(g, topic, partition, off, epoch, md, ts, rec)
                    applied += 1
                else:
                    skipped += 1
        return applied, skipped, groups

    # ---- deletes -------------------------------------------------------------------------------------------

    def delete(self, group: str, topic: str, partition: int) -> bool:
        """Offset tombstone: removes the committed offset and the matching pending offsets; True if one existed."""
        for pid in self.open_by_group.get(group, ()):
            entries = self.pending.get(pid)
            if entries is not None:
                entries.pop((group, topic, partition), None)
        topics = self.groups.get(group)
        if topics is None:
            return False
        t = topics.get(topic)
        if t is None or partition >= len(t.offset) or t.offset[partition] == NO_OFFSET:
            return False
        t.offset[partition] = NO_OFFSET
        t.record_offset[partition] = -1
        t.hist_len[partition] = 0
        t.hist_head[partition] = 0
        t.status[partition] = NO_STATUS
        if t.metadata is not None:
            t.metadata[partition] = ""
        t.count -= 1
        if t.count == 0:
            del topics[topic]
            if not topics:
                del self.groups[group]
        return True

    def drop_group(self, group: str) -> None:
        """Forgets every committed offset of a group (used only for eviction, never by replay)."""
        self.groups.pop(group, None)

    # ---- reads ---------------------------------------------------------------------------------------------

    def record_offset_of(self, group: str, topic: str, partition: int) -> int | None:
        t = self.groups.get(group, {}).get(topic)
        if t is None or partition >= len(t.offset) or t.offset[partition] == NO_OFFSET:
            return None
        return t.record_offset[partition]

    def get(self, group: str, topic: str, partition: int) -> tuple[int, int, str, int] | None:
        """``(offset, leader_epoch, metadata, commit_ts)`` or None."""
        t = self.groups.get(group, {}).get(topic)
        if t is None or partition >= len(t.offset) or t.offset[partition] == NO_OFFSET:
            return None
        md = "" if t.metadata is None else t.metadata[partition]
        return t.offset[partition], t.epoch[partition], md, t.commit_ts[partition]

    def has_group(self, group: str) -> bool:
        return group in self.groups

    def has_pending(self, group: str) -> bool:
        return bool(self.open_by_group.get(group))

    def iter_group(self, group: str) -> Iterator[tuple[str, int, int, int, str, int]]:
        """``(topic, partition, offset, leader_epoch, metadata, commit_ts)`` sorted by topic and partition."""
        topics = self.groups.get(group)
        if not topics:
            return
        for topic in sorted(topics):
            t = topics[topic]
            md = t.metadata
            for p, off in enumerate(t.offset):
                if off != NO_OFFSET:
                    yield topic, p, off, t.epoch[p], ("" if md is None else md[p]), t.commit_ts[p]

    def window_of(self, group: str, topic: str, partition: int) -> list[tuple[int, int]]:
        """The commit window, oldest first; the newest sample carries the latest commit time."""
        t = self.groups.get(group, {}).get(topic)
        if t is None or partition >= len(t.offset) or t.offset[partition] == NO_OFFSET:
            return []
        w = self.window
        n, head, base = t.hist_len[partition], t.hist_head[partition], partition * w
        out = [(t.hist_ts[base + (head - n + k) % w], t.hist_off[base + (head - n + k) % w]) for k in range(n)]
        if out:
            out[-1] = (max(out[-1][0], t.commit_ts[partition]), t.offset[partition])
        return out

    def status_of(self, group: str, topic: str, partition: int) -> int:
        """The last status code stored for a partition (``NO_STATUS`` if never evaluated)."""
        t = self.groups.get(group, {}).get(topic)
        if t is None or partition >= len(t.status):
            return NO_STATUS
        return t.status[partition]

    def set_status(self, group: str, topic: str, partition: int, code: int) -> None:
        t = self.groups.get(group, {}).get(topic)
        if t is not None and partition < len(t.status):
            t.status[partition] = code

    def partition_count(self) -> int:
        return sum(t.count for topics in self.groups.values() for t in topics.values())

    # ---- state ---------------------------------------------------------------------------------------------

    def to_state(self) -> dict:
        """Offsets and open transactions by name (:mod:`.state_format`)."""
        return {"window": self.window, "min_distance_ms": self.min_distance_ms,
                "groups": {g: {tp: t.to_state() for tp, t in topics.items()} for g, topics in self.groups.items()},
                "pending": self.pending}

    @classmethod
    def from_state(cls, state: Mapping) -> "OffsetStore":
        self = cls(state["window"], state["min_distance_ms"])
        for g, topics in state["groups"].items():
            self.groups[g] = {_intern(tp): TopicOffsets.from_state(v) for tp, v in topics.items()}
        self.restore_pending(state["pending"])
        return self

    def restore_pending(self, pending: Mapping[int, Mapping[tuple[str, str, int], tuple]]) -> None:
        """Open transactions as saved, with the index of each group's open ones rebuilt."""
        for pid, entries in pending.items():
            self.pending[pid] = dict(entries)
            for (g, _, _) in self.pending[pid]:
                self.open_by_group.setdefault(g, set()).add(pid)
