"""Walking the records of many v2 record batches at once with numpy (shared by :mod:`protocol.kafka_dump` and
:mod:`protocol.columns`).

Inside a batch each record's position depends on the one before it (records are length-prefixed), but batches are
independent: the i-th record of every batch is found in one numpy step. The fields of a record (length,
attributes, timestampDelta, offsetDelta, key, value, header count: docs/kafka-formats.md#records) are then read for
all records together. Hand-written because no library reads Kafka's zig-zag varints column-wise, and a Python loop
per record is what these modules exist to avoid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["LOCKSTEP_MIN", "RecordFields", "binary_views", "int_at", "record_fields", "record_starts", "varints"]

# Below this many batches still being walked, a numpy step per record costs more than a Python loop.
LOCKSTEP_MIN = 48


def record_starts(view: memoryview, arr: np.ndarray, starts: np.ndarray, stops: np.ndarray, counts: np.ndarray,
                  lockstep_min: int = LOCKSTEP_MIN) -> tuple[np.ndarray, np.ndarray]:
    """Where each record of each batch starts, following the record length varints; and which batches walked
    cleanly (every record's length fits one or two bytes and the batch's records end exactly at its end).

    The walk is sequential inside a batch but independent across batches, so all batches take their i-th step
    together as one numpy operation; the last few long batches finish in a plain loop.
    """
    nb = len(starts)
    first = np.zeros(nb, dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    rec_pos = np.zeros(int(counts.sum()), dtype=np.int64)
    ok = np.ones(nb, dtype=bool)
    cur = starts.copy()
    active = np.arange(nb)
    last = len(arr) - 1
    i = 0
    while len(active) >= lockstep_min:
        p = cur[active]
        stop = stops[active]
        rec_pos[first[active] + i] = p
        b0 = arr[np.minimum(p, last)].astype(np.int64)
        b1 = arr[np.minimum(p + 1, last)].astype(np.int64)
        two = b0 >= 0x80
        z = np.where(two, (b0 & 0x7F) | (b1 << 7), b0)
        size = (z >> 1) ^ -(z & 1)
        nxt = p + 1 + two + size
        bad = (p >= stop) | (two & ((b1 >= 0x80) | (p + 1 >= stop))) | (size < 0) | (nxt > stop)
        if bad.any():
            ok[active[bad]] = False
        cur[active] = nxt
        i += 1
        active = active[(counts[active] > i) & ~bad]
    for b in active.tolist():
        p = int(cur[b])
        stop = int(stops[b])
        at = int(first[b])
        for j in range(i, int(counts[b])):
            rec_pos[at + j] = p
            if p >= stop:
                ok[b] = False
                break
            z = view[p]
            if z < 0x80:
                p += 1
            elif p + 1 < stop and view[p + 1] < 0x80:
                z = (z & 0x7F) | (view[p + 1] << 7)
                p += 2
            else:
                ok[b] = False
                break
            size = (z >> 1) ^ -(z & 1)
            p += size
            if size < 0 or p > stop:
                ok[b] = False
                break
        cur[b] = p
    ok &= cur == stops
    return rec_pos, ok


def varints(arr: np.ndarray, p: np.ndarray, stop: np.ndarray, max_bytes: int,
            value: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zig-zag varints (``max_bytes`` 5) or varlongs (10) at positions ``p``: their values (None when not
    wanted), the positions after them, and whether each lay inside its batch within ``max_bytes`` bytes.

    A varint's value is masked to 32 bits like Kafka's reader before the zig-zag step; a varlong's keeps 64.
    """
    last = len(arr) - 1
    b = arr[np.minimum(p, last)]
    ok = p < stop
    end = p + 1
    more = np.flatnonzero(b >= 0x80)
    z = (b & 0x7F).astype(np.uint64) if value else None
    k = 1
    while len(more):
        if k == max_bytes:
            ok[more] = False
            break
        q = p[more] + k
        ok[more] &= q < stop[more]
        bb = arr[np.minimum(q, last)]
        if z is not None:
            z[more] |= (bb & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        end[more] = q + 1
        more = more[bb >= 0x80]
        k += 1
    if z is None:
        return None, end, ok  # type: ignore[return-value]
    if max_bytes <= 5:
        z &= np.uint64(0xFFFFFFFF)
    decoded = (z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))
    return decoded.view(np.int64), end, ok


@dataclass(frozen=True, slots=True)
class RecordFields:
    """The fields of each record (one entry per record start); ``ok`` is False where a record does not parse as
    the common case (no headers, lengths inside the batch, the record ending exactly where its length says)."""

    ok: np.ndarray
    timestamp_delta: np.ndarray | None
    offset_delta: np.ndarray
    key_start: np.ndarray
    key_length: np.ndarray  # -1: null
    value_start: np.ndarray
    value_length: np.ndarray  # -1: null


def record_fields(arr: np.ndarray, rec_pos: np.ndarray, stop: np.ndarray, *, timestamps: bool) -> RecordFields:
    """Reads every record's fields at ``rec_pos`` (``stop``: the end of each record's batch). Records with
    headers are reported not ok: their callers take the exact path for them."""
    size, p, ok = varints(arr, rec_pos, stop, 5)
    rec_end = p + size
    ok &= p < stop  # attributes
    ts_delta, p, ok2 = varints(arr, p + 1, stop, 10, value=timestamps)
    ok &= ok2
    delta, p, ok2 = varints(arr, p, stop, 5)
    ok &= ok2
    klen, p, ok2 = varints(arr, p, stop, 5)
    ok &= ok2 & (klen >= -1)
    kstart = p
    p = p + np.maximum(klen, 0)
    vlen, p, ok2 = varints(arr, p, stop, 5)
    ok &= ok2 & (vlen >= -1)
    vstart = p
    p = p + np.maximum(vlen, 0)
    last = len(arr) - 1
    ok &= (p < stop) & (arr[np.minimum(p, last)] == 0)  # header count 0
    ok &= p + 1 == rec_end
    return RecordFields(ok, ts_delta, delta, kstart, klen, vstart, vlen)


def int_at(arr: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
    """The big-endian signed ints of ``size`` bytes starting at byte positions ``at`` of ``arr``, as int64.

    Read through a view of the buffer in which element i is the ``size`` bytes from byte i (stride 1), so one
    gather reads each number whole, wherever it lies."""
    windows = np.ndarray(shape=(len(arr) - size + 1,), dtype=f">i{size}", buffer=arr, strides=(1,))
    return windows[at].astype(np.int64)


def binary_views(view: memoryview, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """The byte ranges ``[start, start + length)`` of ``view`` as an Arrow binary-view array over it (length -1:
    null), built without copying a value: per value its length, a 4-byte prefix and its offset in the buffer,
    or the value itself when it has 12 bytes or fewer. Arrow hashes such an array, or casts it to a plain binary
    array, in one pass. The array refers to ``view``, which must outlive it."""
    arr = np.frombuffer(view, dtype=np.uint8)
    m = len(start)
    null = length < 0
    n = np.where(null, 0, length) if null.any() else length
    views = np.zeros((m, 16), dtype=np.uint8)
    words = views.view("<i4")
    words[:, 0] = n
    short = n <= 12
    span = np.arange(12)
    last = len(arr) - 1
    if short.any():
        rows = np.flatnonzero(short)
        inline = arr[np.minimum(start[rows, None] + span, last)]
        inline[span >= n[rows, None]] = 0
        views[rows, 4:16] = inline
    if not short.all():
        rows = np.flatnonzero(~short)
        views[rows, 4:8] = arr[start[rows, None] + span[:4]]
        words[rows, 3] = start[rows]
    validity = pa.py_buffer(np.packbits(~null, bitorder="little")) if null.any() else None
    return pa.Array.from_buffers(pa.binary_view(), m, [validity, pa.py_buffer(views), pa.py_buffer(view)],
                                 null_count=int(null.sum()))
