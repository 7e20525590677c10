"""Compression codecs of Kafka record batches: gzip, snappy (xerial-framed), LZ4 frame and zstd (docs/kafka-formats.md#compression).

Mirrors ``org.apache.kafka.common.compress.{Gzip,Snappy,Lz4,Zstd}Compression``. The codec work is done by
``cramjam`` (one maintained wheel for all four); this module adds the two places where Kafka's streams are not what
a generic library produces or accepts:

* snappy: Kafka's Java clients write the *xerial* framing (``SnappyOutputStream``), which no general-purpose library
  implements, and very old / non-Java clients wrote bare raw snappy. Both are read; xerial is written.
* LZ4: magic 0 messages were written by Kafka 0.8–0.9 with a wrong frame-header checksum (KAFKA-3160, fixed for
  magic 1 by KIP-57). Reading such data needs a fallback that repairs that checksum.

Every failure is reported as :class:`~protocol.errors.CodecError`, the codec's one error type for bad bytes.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import cramjam

from .errors import CodecError

__all__ = ["CompressionType", "compress", "decompress"]


class CompressionType(IntEnum):
    """Codec in bits 0–2 of the batch attributes (docs/kafka-formats.md#batch-v2). ``UNKNOWN`` stands for the
    unassigned codes 5–7. Defined here, beside the codecs, and re-exported by ``batch``."""

    UNKNOWN = -1
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# Wire codes of the attributes bits 0-2 as plain ints, for the hot paths below.
_NONE, _GZIP, _SNAPPY, _LZ4, _ZSTD = 0, 1, 2, 3, 4
_NAMES = {_NONE: "none", _GZIP: "gzip", _SNAPPY: "snappy", _LZ4: "lz4", _ZSTD: "zstd"}

# --- snappy, xerial framing ------------------------------------------------------------------------------------
# Layout written by org.xerial.snappy.SnappyOutputStream (and read by SnappyInputStream):
#   8 bytes magic 82 'SNAPPY' 00, int32 version (1), int32 minimum compatible version (1),
#   then blocks: int32 big-endian compressed length + one *raw* snappy block (at most 32 KiB of input each).
# cramjam only offers raw snappy and the (different) official snappy framing format ("sNaPpY" stream identifier,
# CRC'd chunks), so the xerial container is written and parsed by hand around cramjam's raw block codec.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block size, so our blocks look like Kafka's.
_INT32 = struct.Struct(">i")

# --- LZ4 frame -------------------------------------------------------------------------------------------------
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
# xxHash32 primes (xxHash specification); only needed to repair the header checksum of magic 0 LZ4 frames.
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def compress(codec: CompressionType | int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress ``data`` (a serialized record sequence or inner message set) with a batch codec.

    ``magic`` only matters for LZ4: with ``magic=0`` the frame carries Kafka 0.8/0.9's broken header checksum, so
    tests can produce exactly what an old broker stored; any other value writes a standard LZ4 frame.

    Raises:
        CodecError: for an unknown codec number, or ``NONE`` (nothing to compress: a caller bug surfaced early).
    """
    if codec == _GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == _SNAPPY:
        return _xerial_snappy_compress(data)
    if codec == _LZ4:
        return _lz4_compress(data, broken_header_checksum=(magic == 0))
    if codec == _ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CodecError(f"cannot compress with codec {int(codec)}", field="attributes.compression")


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview, *, magic: int = 2) -> bytes:
    """Decompress a batch's records stream (v2) or a wrapper message's value (magic 0/1).

    ``magic`` selects the LZ4 leniency: for magic 0/1 a frame whose header checksum does not verify is retried
    with the checksum recomputed, because Kafka 0.8–0.9 computed it over the wrong bytes (the LZ4 magic number was
    included). This is best effort: if the repaired frame still fails, the original error is reported.

    Raises:
        CodecError: unknown codec, or bytes that are not a valid stream of that codec.
    """
    name = _NAMES.get(int(codec))
    if name is None or codec == _NONE:
        raise CodecError(f"cannot decompress with codec {int(codec)}", field="attributes.compression")
    try:
        if codec == _GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == _SNAPPY:
            return _snappy_decompress(data)
        if codec == _LZ4:
            return _lz4_decompress(data, lenient=magic in (0, 1))
        return bytes(cramjam.zstd.decompress(data))
    except CodecError:
        raise
    except Exception as exc:  # cramjam raises DecompressionError, but also ValueError/OverflowError on odd sizes.
        raise CodecError(f"{name} stream does not decompress: {exc}", field="records") from exc


# --- snappy ----------------------------------------------------------------------------------------------------


def _xerial_snappy_compress(data: bytes) -> bytes:
    """Write ``data`` as a xerial snappy stream: header, then 32 KiB raw-snappy blocks with int32 length prefixes."""
    out = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes | bytearray | memoryview) -> bytes:
    """Read xerial-framed snappy (Java clients) or, without the xerial magic, one raw snappy block (old clients).

    xerial's own reader falls back to raw snappy the same way when the magic is absent, which is how Kafka accepted
    the unframed streams some non-Java clients produced.
    """
    view = memoryview(data)
    if bytes(view[:8]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    if len(view) < 16:
        raise CodecError(f"xerial snappy header needs 16 bytes, {len(view)} present", field="records")
    pos, end = 16, len(view)
    parts: list[bytes] = []
    while pos < end:
        if end - pos < 4:
            raise CodecError(
                f"xerial snappy block length needs 4 bytes at byte {pos}, {end - pos} left", field="records"
            )
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CodecError(
                f"xerial snappy block at byte {pos - 4} declares {size} bytes, {end - pos} left", field="records"
            )
        parts.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + size])))
        pos += size
    return b"".join(parts)


# --- LZ4 -------------------------------------------------------------------------------------------------------


def _lz4_compress(data: bytes, *, broken_header_checksum: bool) -> bytes:
    """Write a standard LZ4 frame with independent 64 KiB blocks, as Kafka's ``Lz4BlockOutputStream`` does.

    Kafka's reader rejects frames with linked blocks, so ``block_linked=False`` is required, not cosmetic. cramjam
    also adds per-block checksums, which Kafka's reader accepts (it skips them).
    """
    compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    compressor.compress(data)
    frame = bytes(compressor.finish())
    if broken_header_checksum:
        frame = _lz4_with_header_checksum(frame, over_magic=True)
    return frame


def _lz4_decompress(data: bytes | bytearray | memoryview, *, lenient: bool) -> bytes:
    """Decompress an LZ4 frame; for magic 0/1 retry with a repaired header checksum (see :func:`decompress`)."""
    try:
        return bytes(cramjam.lz4.decompress(data))
    except Exception as first:
        if not lenient or bytes(memoryview(data)[:4]) != _LZ4_MAGIC:
            raise
        try:
            repaired = _lz4_with_header_checksum(bytes(data), over_magic=False)
            return bytes(cramjam.lz4.decompress(repaired))
        except (CodecError, cramjam.DecompressionError, ValueError, OverflowError):
            raise first from None


def _lz4_with_header_checksum(frame: bytes, *, over_magic: bool) -> bytes:
    """Return ``frame`` with its frame-descriptor checksum byte (HC) recomputed.

    The LZ4 frame spec defines HC = (xxh32(descriptor) >> 8) & 0xFF, the descriptor being FLG, BD and the optional
    8-byte content size. Kafka 0.8/0.9 hashed the 4 magic bytes too (``over_magic=True`` reproduces that).
    """
    if len(frame) < 7:
        raise CodecError(f"LZ4 frame header needs 7 bytes, {len(frame)} present", field="records")
    descriptor_len = 10 if frame[4] & 0x08 else 2  # FLG bit 3: content size present
    hc_pos = 4 + descriptor_len
    if len(frame) <= hc_pos:
        raise CodecError(f"LZ4 frame header needs {hc_pos + 1} bytes, {len(frame)} present", field="records")
    hashed = frame[0:hc_pos] if over_magic else frame[4:hc_pos]
    checksum = (_xxh32(hashed) >> 8) & 0xFF
    return frame[:hc_pos] + bytes((checksum,)) + frame[hc_pos + 1 :]


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 per the xxHash specification; used only for LZ4 header checksums (a dozen bytes), so speed is moot."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        while pos <= n - 16:
            lanes = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl32((v1 + lanes[0] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl32((v2 + lanes[1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl32((v3 + lanes[2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl32((v4 + lanes[3] * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl32((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl32((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
