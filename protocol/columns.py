"""Record batches as a consumer sees them, straight into columns: offsets, timestamps, keys and values as numpy and
Arrow arrays, without one Python object per record.

Input is the record data of one partition as a broker stores and serves it: a concatenation of record batches (a
Fetch response's ``records`` field, a segment file). Output is what a ``read_committed`` (or
``read_uncommitted``) consumer would hand over for offsets ``[first_offset, end_offset)``:

* control batches (transaction markers) are left out;
* with ``read_committed``, batches of aborted transactions are left out. The broker says which transactions were
  aborted in the fetched range (producer id and first offset of each); a transactional batch is aborted when its
  producer has an aborted transaction that started at or before the batch's last offset and whose ABORT marker
  has not been passed yet: the rule Kafka's consumers apply (docs/kafka-formats.md#fetch);
* records before ``first_offset`` (a fetch returns the whole batch holding the fetch offset) and from
  ``end_offset`` on are left out;
* the last batch may be cut short (a broker fills a response up to its size limit): reading stops before it, and
  ``next_offset`` says where the next fetch starts.

Uncompressed magic 2 batches, the common case in ``__consumer_offsets``, are walked column-wise with numpy
(:mod:`protocol._vector`); compressed, legacy (magic 0/1) batches and records with headers are decoded one record
at a time by :func:`protocol.batch.decode_batch`, at their place in offset order. A batch that does not decode is
reported in ``problems`` and skipped.

Sans-IO: bytes in, arrays out. Needs numpy and pyarrow.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ._crc import crc32c
from ._vector import binary_views, record_fields, record_starts
from .batch import (_COMPRESSION_MASK, _CONTROL_BIT, _ENTRY_PREFIX, _MIN_ENTRY_LENGTH, _MIN_RECORD_SIZE,
                    _TIMESTAMP_TYPE_BIT, _TRANSACTIONAL_BIT, _V2_CRC_START, _V2_HEADER, _V2_HEADER_SIZE, ControlType,
                    TimestampType, decode_batch)
from .errors import CodecError

__all__ = ["Columns", "Framed", "Region", "fill_regions", "frame_regions", "read_columns", "read_regions"]


@dataclass
class Columns:
    """The records read, in offset order, and where the next read starts."""

    offsets: np.ndarray  # int64
    timestamps: np.ndarray  # int64, milliseconds (the broker's append time for LOG_APPEND_TIME batches)
    keys: pa.Array  # binary, null for a null key
    values: pa.Array  # binary, null for a tombstone
    next_offset: int  # one past the last offset of the last whole batch read (``first_offset`` when none was)
    cut_short: bool = False  # the data ended in a partial batch before any whole batch past ``first_offset``
    aborted: int = 0  # records left out because their transaction was aborted
    problems: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)


_NO_INTS = np.zeros(0, dtype=np.int64)
_NO_BYTES = pa.array([], pa.binary())


@dataclass
class _Exact:
    region: list[int] = field(default_factory=list)  # the region of each record
    position: list[int] = field(default_factory=list)  # where its batch starts in the data
    offsets: list[int] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Region:
    """One partition's record data inside a larger buffer (a fetch response): bytes ``[start, stop)``, read from
    ``first_offset`` up to ``end_offset`` (exclusive; None: to the end), with the response's aborted transactions
    of that partition as ``(producer_id, first_offset)`` pairs."""

    start: int
    stop: int
    first_offset: int
    end_offset: int | None = None
    aborted: Sequence[tuple[int, int]] = ()


def read_columns(
    data: bytes | bytearray | memoryview,
    *,
    first_offset: int,
    end_offset: int | None = None,
    aborted: Sequence[tuple[int, int]] = (),
    read_committed: bool = True,
    verify_crc: bool = False,
) -> Columns:
    """The records of ``data`` (whole record batches, the last possibly cut short) with offsets in
    ``[first_offset, end_offset)``; ``aborted`` is the fetch response's list of ``(producer_id, first_offset)``.

    ``verify_crc`` checks each batch's CRC-32C (off by default, like librdkafka's consumer: the broker verified
    it on write and TCP protects the transfer)."""
    view = memoryview(data)
    return read_regions(view, [Region(0, len(view), first_offset, end_offset, aborted)],
                        read_committed=read_committed, verify_crc=verify_crc)[0]


def read_regions(data: bytes | bytearray | memoryview, regions: Sequence[Region], *, read_committed: bool = True,
                 verify_crc: bool = False) -> list[Columns]:
    """:func:`read_columns` for several partitions' record data in one buffer at once, one :class:`Columns` per
    region, in order. Regions must not overlap and must be given in the order they lie in ``data``.

    Why at once: a fetch response holds a little of many partitions, and the numpy walk costs a fixed ~0.2 ms per
    call; walking every region's batches in one pass keeps that per response, not per partition."""
    return fill_regions(frame_regions(data, regions, read_committed=read_committed, verify_crc=verify_crc))


@dataclass
class Framed:
    """Regions whose batch headers are walked and whose records are not read yet (:func:`frame_regions`).

    ``columns`` already carry each region's ``next_offset``, ``cut_short``, ``aborted`` count and problems; their
    records arrive with :func:`fill_regions`."""

    view: memoryview
    regions: Sequence[Region]
    columns: list[Columns]
    fast: list[tuple[int, ...]]
    exact: _Exact


def frame_regions(data: bytes | bytearray | memoryview, regions: Sequence[Region], *, read_committed: bool = True,
                  verify_crc: bool = False) -> Framed:
    """The first half of :func:`read_regions`: walks the batch headers only, so where the next read of each region
    starts is known before its records are read. A reader can ask for the next data first and read these records
    while the broker prepares it (a few microseconds a batch here, against ~0.2 µs a record to read them)."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    fast: list[tuple[int, ...]] = []
    exact = _Exact()
    out = [_frame(view, r, i, fast, exact, read_committed, verify_crc) for i, r in enumerate(regions)]
    return Framed(view, regions, out, fast, exact)


def fill_regions(framed: Framed) -> list[Columns]:
    """The second half of :func:`read_regions`: the records of the framed regions, one :class:`Columns` each."""
    _fill(framed.view, framed.regions, framed.columns, framed.fast, framed.exact)
    return framed.columns


def _frame(view: memoryview, region: Region, index: int, fast: list[tuple[int, ...]], exact: _Exact,
           read_committed: bool, verify_crc: bool) -> Columns:
    """Walks one region's batches by their headers: decides which batches are read (``fast`` rows for the numpy
    walk, records into ``exact`` for the others) and returns the region's result without its records yet."""
    first_offset = region.first_offset
    limit = region.end_offset if region.end_offset is not None else 1 << 62
    queue = sorted((first, pid) for pid, first in region.aborted) if read_committed else []
    aborted_pids: set[int] = set()
    problems: list[str] = []
    dropped = 0
    next_offset = first_offset
    pos, size = region.start, region.stop
    cut = False
    while pos + 12 <= size:
        base, length = _ENTRY_PREFIX.unpack_from(view, pos)
        end = pos + 12 + length
        if length < _MIN_ENTRY_LENGTH:
            problems.append(f"batch at offset {base}: length {length} is below the smallest batch; the rest of the "
                            "data cannot be framed")
            break
        if end > size:
            cut = True
            break
        if base >= limit:
            break
        if view[pos + 16] != 2 or end - pos < _V2_HEADER_SIZE:
            next_offset = max(next_offset, _exact_batch(view, pos, base, exact, problems, verify_crc, index))
            pos = end
            continue
        (_, _, _, _, crc, attributes, last_delta, base_ts, max_ts, producer_id, _, _,
         count) = _V2_HEADER.unpack_from(view, pos)
        last_offset = base + last_delta
        pos_here, pos = pos, end
        if last_offset < first_offset:
            continue
        next_offset = max(next_offset, last_offset + 1)
        if queue and producer_id >= 0:
            while queue and queue[0][0] <= last_offset:
                aborted_pids.add(heapq.heappop(queue)[1])
        if attributes & _CONTROL_BIT:
            if aborted_pids and producer_id in aborted_pids and _is_abort(view, pos_here, verify_crc):
                aborted_pids.discard(producer_id)
            continue
        if attributes & _TRANSACTIONAL_BIT and producer_id in aborted_pids:
            dropped += count
            continue
        if verify_crc and crc32c(view[pos_here + _V2_CRC_START : end]) != crc:
            problems.append(f"batch at offset {base}: CRC-32C mismatch; its records are left out")
            continue
        fits = (end - pos_here - _V2_HEADER_SIZE) // _MIN_RECORD_SIZE  # records the batch's bytes can hold
        if attributes & _COMPRESSION_MASK or count <= 0 or count > fits:
            _exact_batch(view, pos_here, base, exact, problems, False, index)
            continue
        fast.append((pos_here, end, base, count, attributes, base_ts, max_ts, index))
    return Columns(_NO_INTS, _NO_INTS, _NO_BYTES, _NO_BYTES, next_offset, cut and next_offset == first_offset,
                   dropped, problems)


def _is_abort(view: memoryview, pos: int, verify_crc: bool) -> bool:
    try:
        marker = decode_batch(view, pos, verify_crc).control
    except CodecError:
        return False
    return marker is not None and marker.control_type == ControlType.ABORT


def _exact_batch(view: memoryview, pos: int, base: int, out: _Exact, problems: list[str], verify_crc: bool,
                 region: int) -> int:
    """Decodes one batch record by record into ``out``; returns the offset after it (for one that does not
    decode, the offset after its first: a legacy entry's offset is that of its last message)."""
    try:
        batch = decode_batch(view, pos, verify_crc)
    except CodecError as exc:
        problems.append(f"batch at offset {base}: {exc}; its records are left out")
        return base + 1
    h = batch.header
    if h.is_control:
        return h.last_offset + 1
    append_time = h.timestamp_type == TimestampType.LOG_APPEND_TIME
    for r in batch.records:
        out.region.append(region)
        out.position.append(pos)
        out.offsets.append(r.offset)
        out.timestamps.append(h.max_timestamp if append_time else r.timestamp)
        out.keys.append(r.key)
        out.values.append(r.value)
    return h.last_offset + 1


def _fill(view: memoryview, regions: Sequence[Region], out: list[Columns], fast: list[tuple[int, ...]],
          exact: _Exact) -> None:
    """Reads the records of every ``fast`` batch column-wise (those that do not walk cleanly go to ``exact``),
    keeps each region's ``[first_offset, end_offset)``, and hands every region its records in log order."""
    firsts = np.array([r.first_offset for r in regions], dtype=np.int64)
    limits = np.array([r.end_offset if r.end_offset is not None else 1 << 62 for r in regions], dtype=np.int64)
    parts = []  # (region, position of the batch, offset, timestamp, keys, values) per source
    if fast:
        arr = np.frombuffer(view, dtype=np.uint8)
        table = np.array(fast, dtype=np.int64)
        positions, stops, bases, counts = table[:, 0], table[:, 1], table[:, 2], table[:, 3]
        rec_pos, batch_ok = record_starts(view, arr, positions + _V2_HEADER_SIZE, stops, counts)
        row_batch = np.repeat(np.arange(len(fast)), counts)
        f = record_fields(arr, rec_pos, stops[row_batch], timestamps=True)
        if not f.ok.all():
            batch_ok &= np.bincount(row_batch[~f.ok], minlength=len(fast)) == 0
        if not batch_ok.all():
            for b in np.flatnonzero(~batch_ok).tolist():  # the exact decoder says what is wrong, or takes them
                index = int(table[b, 7])
                _exact_batch(view, int(positions[b]), int(bases[b]), exact, out[index].problems, False, index)
        offsets = bases[row_batch] + f.offset_delta
        region = table[row_batch, 7]
        append_time = (table[:, 4] & _TIMESTAMP_TYPE_BIT) != 0
        stamps = np.where(append_time[row_batch], table[row_batch, 6], table[row_batch, 5] + f.timestamp_delta)
        keep = batch_ok[row_batch] & (offsets >= firsts[region]) & (offsets < limits[region])
        rows = None if keep.all() else np.flatnonzero(keep)

        def kept(a: np.ndarray) -> np.ndarray:
            return a if rows is None else a[rows]

        parts.append((kept(region), kept(positions[row_batch]), kept(offsets), kept(stamps),
                      _binary(view, kept(f.key_start), kept(f.key_length)),
                      _binary(view, kept(f.value_start), kept(f.value_length))))
    if exact.offsets:
        offsets = np.array(exact.offsets, dtype=np.int64)
        region = np.array(exact.region, dtype=np.int64)
        keep = np.flatnonzero((offsets >= firsts[region]) & (offsets < limits[region]))
        parts.append((region[keep], np.array(exact.position, dtype=np.int64)[keep], offsets[keep],
                      np.array(exact.timestamps, dtype=np.int64)[keep],
                      pa.array(exact.keys, pa.binary()).take(keep), pa.array(exact.values, pa.binary()).take(keep)))
    if not parts:
        return
    if len(parts) == 1:
        region, _, offsets, stamps, keys, values = parts[0]
    else:
        # Records in the order of their batches in the data (regions lie in order), then as decoded.
        order = np.argsort(np.concatenate([p[1] for p in parts]), kind="stable")
        region = np.concatenate([p[0] for p in parts])[order]
        offsets = np.concatenate([p[2] for p in parts])[order]
        stamps = np.concatenate([p[3] for p in parts])[order]
        keys = pa.concat_arrays([p[4] for p in parts]).take(order)
        values = pa.concat_arrays([p[5] for p in parts]).take(order)
    bounds = np.searchsorted(region, np.arange(len(regions) + 1))
    for i, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        if hi > lo:
            c = out[i]
            c.offsets, c.timestamps = offsets[lo:hi], stamps[lo:hi]
            c.keys, c.values = keys.slice(lo, hi - lo), values.slice(lo, hi - lo)


def _binary(view: memoryview, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """A binary array of the byte ranges ``[start, start + length)`` of the data (length -1: null), copied out of
    it by Arrow's cast from a binary view (:func:`protocol._vector.binary_views`)."""
    if len(start) == 0:
        return _NO_BYTES
    return binary_views(view, start, length).cast(pa.binary())
