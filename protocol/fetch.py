"""Kafka's Fetch and ApiVersions requests and responses, sans-IO: bytes for the socket out, parsed answers in.

Why groupscope speaks Fetch itself: a fetch response carries the partition's record batches exactly as the broker
stores them (the bytes of its segment files), and :mod:`protocol.columns` turns those into Arrow columns several
times faster than any client that hands over one message object per record. Everything else about the connection
(which broker leads which partition, when to retry) belongs to the caller; this module only frames.

Versions: Fetch v4 to v11, the non-flexible versions that name topics (v12 switches to tagged fields, v13 to topic
ids). Kafka 4.0 accepts v4 to v17, so v11 is what a current broker is asked for; v4 is the first with
``isolation_level`` and the aborted-transaction list that ``read_committed`` needs, and Kafka 4.0 removed
everything older. Field order and types: Kafka's ``FetchRequest.json`` / ``FetchResponse.json`` message
definitions, summarized in docs/kafka-formats.md#fetch.

Requests are built with request header v1 (api key, version, correlation id, client id) and the 4-byte size prefix;
responses are parsed from the bytes after their size prefix (response header v0: the correlation id). Record data
is not copied: each partition's records are returned as a ``(start, end)`` byte range of the response buffer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ._wire import INT16, INT32, INT64
from .errors import CodecError

__all__ = [
    "API_VERSIONS",
    "FETCH",
    "FETCH_VERSIONS",
    "AbortedTransaction",
    "FetchPartition",
    "FetchPartitionRequest",
    "FetchResponse",
    "decode_api_versions_response",
    "decode_fetch_response",
    "encode_api_versions_request",
    "encode_fetch_request",
    "pick_version",
    "response_correlation_id",
]

FETCH = 1
API_VERSIONS = 18
FETCH_VERSIONS = range(4, 12)  # what this module encodes and decodes

READ_UNCOMMITTED, READ_COMMITTED = 0, 1

_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id (then the client id string)
_PARTITION_HEAD = struct.Struct(">ihqq")  # partition, error code, high watermark, last stable offset (v4+)


@dataclass(frozen=True, slots=True)
class FetchPartitionRequest:
    topic: str
    partition: int
    offset: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a fetch response. ``records`` is the byte range of its record data in the response
    buffer (``start == end`` when there is none); the last batch in it may be cut short (brokers send whole
    batches up to the size limits, and may cut the last one)."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[AbortedTransaction, ...]
    records: tuple[int, int]


@dataclass(frozen=True, slots=True)
class FetchResponse:
    correlation_id: int
    throttle_ms: int
    error_code: int
    partitions: list[FetchPartition] = field(default_factory=list)


def _header(api_key: int, version: int, correlation_id: int, client_id: str) -> bytearray:
    out = bytearray(4)  # size, filled in by _sized
    out += _HEADER.pack(api_key, version, correlation_id)
    raw = client_id.encode()
    out += INT16.pack(len(raw)) + raw
    return out


def _sized(out: bytearray) -> bytes:
    out[0:4] = INT32.pack(len(out) - 4)
    return bytes(out)


def _string(value: str) -> bytes:
    raw = value.encode()
    return INT16.pack(len(raw)) + raw


def encode_api_versions_request(correlation_id: int, client_id: str) -> bytes:
    """ApiVersions v0 (an empty body): every broker version answers it, whatever else it supports."""
    return _sized(_header(API_VERSIONS, 0, correlation_id, client_id))


def response_correlation_id(buf: bytes | memoryview) -> int:
    if len(buf) < 4:
        raise CodecError("response shorter than its correlation id")
    return INT32.unpack_from(buf, 0)[0]


def decode_api_versions_response(buf: bytes | memoryview) -> dict[int, tuple[int, int]]:
    """``{api_key: (min_version, max_version)}`` from an ApiVersions v0 response (after its size prefix).

    Raises :class:`CodecError` for a truncated response or a non-zero error code."""
    try:
        _, error = struct.unpack_from(">ih", buf, 0)
        if error:
            raise CodecError(f"ApiVersions failed with error code {error}")
        (count,) = INT32.unpack_from(buf, 6)
        out = {}
        for i in range(max(count, 0)):
            key, low, high = struct.unpack_from(">hhh", buf, 10 + 6 * i)
            out[key] = (low, high)
        return out
    except struct.error:
        raise CodecError("ApiVersions response is truncated") from None


def pick_version(supported: dict[int, tuple[int, int]]) -> int | None:
    """The highest Fetch version both sides speak, or None when there is none."""
    low, high = supported.get(FETCH, (0, -1))
    both = [v for v in FETCH_VERSIONS if low <= v <= high]
    return max(both) if both else None


def encode_fetch_request(
    version: int,
    correlation_id: int,
    client_id: str,
    partitions: list[FetchPartitionRequest],
    *,
    max_wait_ms: int = 500,
    min_bytes: int = 1,
    max_bytes: int = 64 << 20,
    isolation_level: int = READ_COMMITTED,
) -> bytes:
    """A sessionless Fetch request (session id 0, epoch -1: the broker answers for exactly these partitions and
    keeps no state between requests) as a consumer sends it (replica id -1)."""
    if version not in FETCH_VERSIONS:
        raise ValueError(f"Fetch v{version} is not supported (v{FETCH_VERSIONS[0]}-v{FETCH_VERSIONS[-1]})")
    out = _header(FETCH, version, correlation_id, client_id)
    out += struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, isolation_level)
    if version >= 7:
        out += struct.pack(">ii", 0, -1)
    by_topic: dict[str, list[FetchPartitionRequest]] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(p)
    out += INT32.pack(len(by_topic))
    for topic, parts in by_topic.items():
        out += _string(topic)
        out += INT32.pack(len(parts))
        for p in parts:
            out += INT32.pack(p.partition)
            if version >= 9:
                out += INT32.pack(-1)  # current leader epoch: unknown, so the broker does not check it
            out += INT64.pack(p.offset)
            if version >= 5:
                out += INT64.pack(-1)  # log start offset: only followers send one
            out += INT32.pack(p.max_bytes)
    if version >= 7:
        out += INT32.pack(0)  # forgotten topics: none (no session)
    if version >= 11:
        out += INT16.pack(0)  # rack id: empty
    return _sized(out)


def decode_fetch_response(version: int, buf: bytes | memoryview) -> FetchResponse:
    """Parses a Fetch response of ``version`` (the bytes after its size prefix). Raises :class:`CodecError` when
    the bytes do not hold a whole response."""
    if version not in FETCH_VERSIONS:
        raise ValueError(f"Fetch v{version} is not supported")
    size = len(buf)
    try:
        correlation_id, throttle = struct.unpack_from(">ii", buf, 0)
        pos = 8
        error = 0
        if version >= 7:
            error, _session = struct.unpack_from(">hi", buf, pos)
            pos += 6
        response = FetchResponse(correlation_id, throttle, error)
        (topics,) = INT32.unpack_from(buf, pos)
        pos += 4
        for _ in range(topics):
            (length,) = INT16.unpack_from(buf, pos)
            topic = bytes(buf[pos + 2 : pos + 2 + length]).decode()
            pos += 2 + length
            (count,) = INT32.unpack_from(buf, pos)
            pos += 4
            for _ in range(count):
                partition, p_error, high, stable = _PARTITION_HEAD.unpack_from(buf, pos)
                pos += _PARTITION_HEAD.size
                log_start = -1
                if version >= 5:
                    (log_start,) = INT64.unpack_from(buf, pos)
                    pos += 8
                (n_aborted,) = INT32.unpack_from(buf, pos)
                pos += 4
                aborted = []
                for _ in range(max(n_aborted, 0)):  # -1: null, no list
                    aborted.append(AbortedTransaction(*struct.unpack_from(">qq", buf, pos)))
                    pos += 16
                if version >= 11:
                    pos += 4  # preferred read replica: only followers are offered one
                (n_records,) = INT32.unpack_from(buf, pos)
                pos += 4
                start = pos
                pos += max(n_records, 0)
                if pos > size:
                    raise CodecError(f"Fetch response: records of {topic}-{partition} run past the response")
                response.partitions.append(FetchPartition(topic, partition, p_error, high, stable, log_start,
                                                          tuple(aborted), (start, pos)))
        return response
    except struct.error:
        raise CodecError("Fetch response is truncated") from None
    except UnicodeDecodeError:
        raise CodecError("Fetch response: a topic name is not UTF-8 (not a response of this version?)") from None
