"""Whole segment files as ``kafka-dump-log.sh --offsets-decoder`` prints them: the text of ``groupscope decode
--format kafka``, one JSON object per line.

Sans-IO: a segment's bytes (``bytes`` or a ``memoryview``, e.g. of an ``mmap``) in; UTF-8 text chunks and problems
out. Two renderers produce the same bytes:

* the exact one, :class:`KafkaLineRenderer` and :func:`kafka_batch_items`: one :class:`~protocol.batch.LogRecord`
  per record through :func:`~protocol.batch.iter_batches` and :func:`~protocol.codec.decode_record`. It is the
  reference and handles everything (every record type and version, control batches, compressed and legacy
  batches, corrupt data);
* :class:`KafkaDump`, the one the command uses: the same output several times faster, because a dump is mostly
  uncompressed batches of offset commits (value v3, empty metadata) and tombstones, and for those it never builds
  a per-record Python object. Batches are framed one by one, but their records are walked for all batches of a
  run at once with numpy, keys are dictionary-encoded with Arrow and rendered once per distinct key, and the lines
  are joined column-wise by Arrow's string kernels into one UTF-8 buffer. Every batch or record it does not
  recognise as that common case goes through the exact renderer at its place, so the two outputs are identical
  byte for byte (tests check it on the Kafka captures, the benchmark corpus and hand-made edge cases).

The partition, which the files do not hold, comes first on each line when the caller knows it; without it the
lines start at ``offset``. Byte layouts are those of docs/kafka-formats.md (batch-v2, records, varints).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Iterator, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._crc import crc32c
from ._vector import LOCKSTEP_MIN, binary_views, int_at, record_fields, record_starts
from ._offsets import parse_offset_commit_value
from .batch import ControlType, CorruptBatch, RecordBatch, decode_batch, iter_batches
from .codec import decode_record
from .errors import CodecError
from .kafka_json import kafka_key_json, kafka_offset_commit_payload_text, kafka_payload_json
from .records import UnknownRecord

__all__ = ["KafkaDump", "KafkaLineRenderer", "RecordProblem", "DumpItem", "kafka_batch_items", "line_prefix"]


@dataclass(frozen=True, slots=True)
class RecordProblem:
    """A record of a readable batch that does not decode; its line is left out."""

    offset: int
    reason: str


# What the renderers yield, in log order: UTF-8 text (whole lines), a batch that could not be read, or a record
# that could not be decoded.
DumpItem = Union[bytes, memoryview, CorruptBatch, RecordProblem]


def _dumps(obj: object) -> str:
    # Compact separators and raw UTF-8 like Jackson, so output diffs cleanly against Kafka's tool.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def line_prefix(partition: int | None) -> str:
    """The start of every line up to the offset's digits: ``{"partition":12,"offset":``, or ``{"offset":`` when the
    partition is not known (the field is left out rather than printed as null)."""
    return '{"offset":' if partition is None else f'{{"partition":{int(partition)},"offset":'


class KafkaLineRenderer:
    """Renders one data record as a ``--format kafka`` line (without the newline); the exact, per-record path.

    Keys repeat (one per group, topic and partition), so their JSON is cached by key bytes, and offset-commit
    values are formatted straight to text. Raises CodecError like ``decode_record``.
    """

    _LIMIT = 100_000

    def __init__(self) -> None:
        self._keys: dict[bytes, str] = {}

    def line(self, prefix: str, offset: int, key: bytes | None, value: bytes | None) -> str:
        head = f"{prefix}{offset},"
        key_text = self._keys.get(key) if key is not None else None
        if (key_text is not None and value is not None and key[1] <= 1 and len(value) >= 2 and value[0] == 0
                and value[1] <= 3):
            fields = parse_offset_commit_value(value, value[1])
            return f'{head}"key":{key_text},"payload":{kafka_offset_commit_payload_text(value[1], *fields)}}}'
        decoded = decode_record(key, value)
        if isinstance(decoded, UnknownRecord):
            return head + f'"unknown":{_dumps(decoded.reason)}}}'
        if key_text is None:
            key_text = _dumps(kafka_key_json(decoded))
            if len(self._keys) >= self._LIMIT:
                self._keys.clear()
            self._keys[bytes(key)] = key_text  # type: ignore[arg-type]
        return f'{head}"key":{key_text},"payload":{_dumps(kafka_payload_json(decoded))}}}'


def kafka_batch_items(batch: RecordBatch, partition: int | None,
                      renderer: KafkaLineRenderer) -> Iterator[str | RecordProblem]:
    """The lines (each ending in a newline) and record problems of one decoded batch, the exact way."""
    prefix = line_prefix(partition)
    if batch.header.is_control:
        marker = batch.control
        for rec in batch.records:
            obj: dict[str, object] = {} if partition is None else {"partition": partition}
            obj["offset"] = rec.offset
            if marker is None:
                obj["controlType"] = ControlType.UNKNOWN.name
            else:
                obj["endTxnMarker"] = marker.control_type.name
                obj["coordinatorEpoch"] = marker.coordinator_epoch
            yield _dumps(obj) + "\n"
        return
    for rec in batch.records:
        try:
            yield renderer.line(prefix, rec.offset, rec.key, rec.value) + "\n"
        except CodecError as exc:
            yield RecordProblem(rec.offset, str(exc))


# ---------------------------------------------------------------------------------------------------------------
# The vectorized renderer
# ---------------------------------------------------------------------------------------------------------------

# The 12-byte prefix of every entry, and the v2 header fields this module reads (docs/kafka-formats.md#batch-v2).
_ENTRY_PREFIX = struct.Struct(">qi")
_V2_HEAD = struct.Struct(">qiibIh")  # baseOffset, length, partitionLeaderEpoch, magic, crc, attributes
_I32 = struct.Struct(">i").unpack_from
_V2_HEADER_SIZE = 61
_V2_CRC_START = 21
_V2_COUNT_AT = 57
_MIN_ENTRY_LENGTH = 14
_MIN_RECORD_SIZE = 7
_CODEC_AND_CONTROL = 0x07 | 0x20  # compressed or control batches take the exact path
_BASE_OFFSET_LIMIT = 1 << 62  # base + offsetDelta must stay far from int64 overflow in numpy

# A run of batches is rendered at once; bounded so memory stays flat on a 1 GiB segment.
_RUN_RECORDS = 1 << 17
_RUN_BYTES = 32 << 20
_LOCKSTEP_MIN = LOCKSTEP_MIN  # a module global, so tests can vary it

# The common offset-commit value is v3 with empty metadata, 24 bytes: version (int16), offset (int64) at byte 2,
# leaderEpoch (int32) at 10, metadata length 0 (int16) at 14, commitTimestamp (int64) at 16.
_V3_MIDDLE = ',"payload":{"version":"3","data":{"offset":'

# Row kinds inside a run.
_FAST, _SLOW, _FAILED_FIRST, _FAILED_REST = 0, 1, 2, 3


class KafkaDump:
    """Renders segment files as ``--format kafka`` lines; see the module docstring.

    ``records`` counts the records read (rendered or not), like the exact path. One instance serves any number of
    segments; it keeps the rendered text of the keys it has seen.
    """

    _KEY_LIMIT = 200_000

    def __init__(self, *, verify_crc: bool = True) -> None:
        self.verify_crc = verify_crc
        self.records = 0
        self.renderer = KafkaLineRenderer()
        # key bytes -> (key text, payload text of a tombstone), or None when the key is not an offset-commit key
        # that decodes (its records then take the exact path).
        self._keys: dict[bytes, tuple[str, str] | None] = {}

    # -- entry points --------------------------------------------------------------------------------------------

    def segment(self, data: bytes | bytearray | memoryview, partition: int | None) -> Iterator[DumpItem]:
        """Everything ``iter_batches`` finds in ``data``, rendered in log order."""
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        prefix = line_prefix(partition)
        n = len(view)
        pos = 0
        run: list[tuple[int, int, int, int]] = []  # (position, end, base offset, count) of batches to vectorize
        run_records = run_start = 0
        verify = self.verify_crc
        while pos < n:
            if n - pos < 12:
                break
            base, length = _ENTRY_PREFIX.unpack_from(view, pos)
            end = pos + 12 + length
            if length < _MIN_ENTRY_LENGTH or end > n:
                break
            if end - pos >= _V2_HEADER_SIZE and view[pos + 16] == 2:
                _, _, _, _, crc, attributes = _V2_HEAD.unpack_from(view, pos)
                count = _I32(view, pos + _V2_COUNT_AT)[0]
                fits = (end - pos - _V2_HEADER_SIZE) // _MIN_RECORD_SIZE  # a larger count is rejected, unallocated
                if (not attributes & _CODEC_AND_CONTROL and 0 < count <= fits and 0 <= base < _BASE_OFFSET_LIMIT
                        and (not verify or crc32c(view[pos + _V2_CRC_START : end]) == crc)):
                    if not run:
                        run_start = pos
                    run.append((pos, end, base, count))
                    run_records += count
                    pos = end
                    if run_records >= _RUN_RECORDS or pos - run_start >= _RUN_BYTES:
                        yield from self._run(view, run, prefix, partition)
                        run, run_records = [], 0
                    continue
            if run:
                yield from self._run(view, run, prefix, partition)
                run, run_records = [], 0
            yield from self._exact_batch(view, pos, base, partition)
            pos = end
        if run:
            yield from self._run(view, run, prefix, partition)
        if pos < n:
            # The rest cannot be framed (a truncated last batch, zero padding, a broken length field): iter_batches
            # says why in its own words. It is rare, and reading the segment again the exact way is the simplest
            # way to report exactly what the exact path reports.
            for item in iter_batches(view, verify_crc=verify):
                where = item.position if isinstance(item, CorruptBatch) else item.header.position
                if where >= pos:
                    if isinstance(item, CorruptBatch):
                        yield item
                    else:  # not reached: framing stopped here, so iter_batches cannot decode a batch here either
                        yield from self._exact_items(item, partition)

    # -- the exact path, batch by batch -------------------------------------------------------------------------

    def _exact_batch(self, view: memoryview, pos: int, base: int, partition: int | None) -> Iterator[DumpItem]:
        try:
            batch = decode_batch(view, pos, self.verify_crc)
        except CodecError as exc:
            yield CorruptBatch(pos, str(exc), base)
            return
        yield from self._exact_items(batch, partition)

    def _exact_items(self, batch: RecordBatch, partition: int | None) -> Iterator[DumpItem]:
        self.records += len(batch.records)
        lines: list[str] = []
        for item in kafka_batch_items(batch, partition, self.renderer):
            if isinstance(item, str):
                lines.append(item)
                continue
            if lines:
                yield "".join(lines).encode()
                lines = []
            yield item
        if lines:
            yield "".join(lines).encode()

    def _exact_record(self, view: memoryview, prefix: str, offset: int, key: tuple[int, int],
                      value: tuple[int, int]) -> str | RecordProblem:
        k = None if key[1] < 0 else bytes(view[key[0] : key[0] + key[1]])
        v = None if value[1] < 0 else bytes(view[value[0] : value[0] + value[1]])
        try:
            return self.renderer.line(prefix, offset, k, v) + "\n"
        except CodecError as exc:
            return RecordProblem(offset, str(exc))

    # -- the vectorized path ------------------------------------------------------------------------------------

    def _key_info(self, key: bytes) -> tuple[str, str] | None:
        info = self._keys.get(key, False)
        if info is not False:
            return info  # type: ignore[return-value]
        info = None
        try:
            decoded = decode_record(key, None)
        except CodecError:
            decoded = None
        if decoded is not None and not isinstance(decoded, UnknownRecord):
            info = (_dumps(kafka_key_json(decoded)), _dumps(kafka_payload_json(decoded)))
        if len(self._keys) >= self._KEY_LIMIT:
            self._keys.clear()
        self._keys[key] = info
        return info

    def _run(self, view: memoryview, run: list[tuple[int, int, int, int]], prefix: str,
             partition: int | None) -> Iterator[DumpItem]:
        """Renders a run of uncompressed, non-control v2 batches whose CRC matched.

        A batch whose records do not parse exactly as the exact decoder would accept them goes to the exact path
        (which then reports what is wrong); so do single records that are not the common case.
        """
        arr = np.frombuffer(view, dtype=np.uint8)
        table = np.array(run, dtype=np.int64)
        positions, stops, bases, counts = table[:, 0], table[:, 1], table[:, 2], table[:, 3]
        starts = positions + _V2_HEADER_SIZE
        rec_pos, batch_ok = record_starts(view, arr, starts, stops, counts, _LOCKSTEP_MIN)
        nb = len(run)
        row_batch = np.repeat(np.arange(nb), counts)
        stop = stops[row_batch]

        # Each record's fields (docs/kafka-formats.md#records); records with headers take the exact path. Rows of
        # batches that already failed are parsed too, harmlessly.
        fields = record_fields(arr, rec_pos, stop, timestamps=False)
        ok, delta = fields.ok, fields.offset_delta
        kstart, klen, vstart, vlen = fields.key_start, fields.key_length, fields.value_start, fields.value_length
        last = len(arr) - 1
        if not ok.all():
            batch_ok &= np.bincount(row_batch[~ok], minlength=nb) == 0
        row_ok = batch_ok[row_batch]
        offsets = bases[row_batch] + delta

        # Offset-commit keys (type 0 or 1), dictionary-encoded; values v3 with empty metadata, or tombstones.
        k0 = arr[np.minimum(kstart, last)]
        k1 = arr[np.minimum(kstart + 1, last)]
        cand = np.flatnonzero(row_ok & (klen >= 2) & (k0 == 0) & (k1 <= 1))
        fast = np.zeros(len(rec_pos), dtype=bool)
        codes = np.zeros(len(rec_pos), dtype=np.int64)
        seg_texts: list[str] = []
        if len(cand):
            dictionary, cand_codes = _dictionary_encode(view, kstart[cand], klen[cand])
            infos = [self._key_info(k) for k in dictionary]
            known = np.array([i is not None for i in infos], dtype=bool)
            seg_texts = [f',"key":{i[0]}{_V3_MIDDLE}' if i else "" for i in infos]
            seg_texts += [f',"key":{i[0]},"payload":{i[1]}}}\n' if i else "" for i in infos]
            vs = vstart[cand]
            vl = vlen[cand]
            v3 = vl == 24
            v3_rows = np.flatnonzero(v3)
            if len(v3_rows):
                head = arr[np.minimum(vs[v3_rows, None] + np.array([0, 1, 14, 15]), last)]
                v3[v3_rows] = (head[:, 0] == 0) & (head[:, 1] == 3) & (head[:, 2] == 0) & (head[:, 3] == 0)
            tomb = vl == -1
            good = known[cand_codes] & (v3 | tomb)
            fast[cand[good]] = True
            codes[cand] = cand_codes + np.where(tomb, len(infos), 0)

        kind = np.where(fast, _FAST, _SLOW)
        if not batch_ok.all():
            first = np.zeros(nb + 1, dtype=np.int64)
            np.cumsum(counts, out=first[1:])
            failed_rows = ~row_ok
            kind[failed_rows] = _FAILED_REST
            kind[first[:-1][~batch_ok]] = _FAILED_FIRST
        self.records += int(counts[batch_ok].sum())

        fast_rows = np.flatnonzero(fast)
        rendered = None
        if len(fast_rows):
            rendered = _render(arr, prefix, offsets[fast_rows], codes[fast_rows], vstart[fast_rows],
                               vlen[fast_rows] < 0, seg_texts)
        bounds = None if rendered is None else np.frombuffer(rendered.buffers()[1], dtype=np.int64)[
            rendered.offset : rendered.offset + len(rendered) + 1]
        text = None if rendered is None else memoryview(rendered.buffers()[2])

        events = np.flatnonzero((kind == _SLOW) | (kind == _FAILED_FIRST))
        if not len(events):
            if text is not None:
                yield text[int(bounds[0]) : int(bounds[-1])]
            return
        rank = np.cumsum(fast) - fast  # fast rows before each row
        done = 0
        pending: list[str] = []
        for r, k, fr in zip(events.tolist(), kind[events].tolist(), rank[events].tolist()):
            if fr > done:
                if pending:
                    yield "".join(pending).encode()
                    pending = []
                yield text[int(bounds[done]) : int(bounds[fr])]  # type: ignore[index]
                done = fr
            if k == _SLOW:
                item = self._exact_record(view, prefix, int(offsets[r]), (int(kstart[r]), int(klen[r])),
                                          (int(vstart[r]), int(vlen[r])))
                if isinstance(item, str):
                    pending.append(item)
                    continue
                if pending:
                    yield "".join(pending).encode()
                    pending = []
                yield item
            else:
                if pending:
                    yield "".join(pending).encode()
                    pending = []
                b = int(row_batch[r])
                yield from self._exact_batch(view, int(positions[b]), int(bases[b]), partition)
        if pending:
            yield "".join(pending).encode()
        if text is not None and len(fast_rows) > done:
            yield text[int(bounds[done]) : int(bounds[-1])]


def _dictionary_encode_arrow(view: memoryview, kstart: np.ndarray,
                             klen: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Distinct keys (as bytes) and each row's index into them, hashing the keys where they lie in the segment.

    The keys are described to Arrow as a binary-view array over the segment buffer (length, 4-byte prefix,
    offset; keys of 12 bytes or fewer are stored inline), so no key is copied before hashing.
    """
    keys = binary_views(view, kstart, klen)
    encoded = pc.dictionary_encode(keys)
    dictionary = encoded.dictionary.to_pylist()
    return dictionary, encoded.indices.to_numpy().astype(np.int64)


def _dictionary_encode_py(view: memoryview, kstart: np.ndarray, klen: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """The same as :func:`_dictionary_encode_arrow` with a dict, for pyarrow versions that cannot hash binary
    views."""
    index: dict[bytes, int] = {}
    codes = [index.setdefault(bytes(view[s : s + n]), len(index)) for s, n in zip(kstart.tolist(), klen.tolist())]
    return list(index), np.array(codes, dtype=np.int64)


def _views_hashable() -> bool:
    try:
        pc.dictionary_encode(pa.array([b"a"], pa.binary_view()))
    except (pa.ArrowNotImplementedError, AttributeError, TypeError):
        return False
    return True


_dictionary_encode = _dictionary_encode_arrow if _views_hashable() else _dictionary_encode_py


def _render(arr: np.ndarray, prefix: str, offsets: np.ndarray, codes: np.ndarray, vstart: np.ndarray,
            tomb: np.ndarray, seg_texts: list[str]) -> pa.Array:
    """The lines of fast rows as one Arrow large_string array (each line ends in a newline).

    ``seg_texts[code]`` is everything between the offset and the value's numbers (the key, and the start of the
    payload), or for a tombstone the whole rest of the line.
    """
    n = len(offsets)
    segs = pa.array(seg_texts, pa.large_string()).take(pa.array(codes))
    pieces: list[object] = [_scalar(prefix), _text(offsets), segs]
    live = np.flatnonzero(~tomb)
    if not len(live):
        return pc.binary_join_element_wise(*pieces, _EMPTY)
    at = vstart[live]
    if len(live) == n:
        committed, epoch, stamp = int_at(arr, at + 2, 8), int_at(arr, at + 10, 4), int_at(arr, at + 16, 8)
    else:
        committed = np.zeros(n, dtype=np.int64)
        epoch = np.zeros(n, dtype=np.int64)
        stamp = np.zeros(n, dtype=np.int64)
        committed[live] = int_at(arr, at + 2, 8)
        epoch[live] = int_at(arr, at + 10, 4)
        stamp[live] = int_at(arr, at + 16, 8)
    tail = [_text(committed), _scalar(',"leaderEpoch":'), _text(epoch),
            _scalar(',"metadata":"","commitTimestamp":'), _text(stamp), _scalar("}}}\n")]
    if len(live) == n:
        return pc.binary_join_element_wise(*pieces, *tail, _EMPTY)
    # Tombstones among them: their value part is null, and skipped by the outer join.
    tail[0] = _text(committed, mask=tomb)
    return pc.binary_join_element_wise(*pieces, pc.binary_join_element_wise(*tail, _EMPTY), _EMPTY,
                                       null_handling="skip")


def _scalar(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def _text(numbers: np.ndarray, mask: np.ndarray | None = None) -> pa.Array | pa.Scalar:
    """Decimal text of int64 numbers; a scalar when they are all the same (a leader epoch often is)."""
    if mask is None and len(numbers) and numbers[0] == numbers[-1] and (numbers == numbers[0]).all():
        return _scalar(str(int(numbers[0])))
    return pc.cast(pa.array(numbers, type=pa.int64(), mask=mask), pa.large_string())


_EMPTY = _scalar("")
