"""Fetch and ApiVersions framing against byte vectors written by hand from Kafka's message definitions.

The vectors follow ``FetchRequest.json`` / ``FetchResponse.json`` (api key 1), ``ApiVersionsRequest.json`` /
``ApiVersionsResponse.json`` (api key 18) and ``RequestHeader.json`` field by field: every field a version adds
is written out where the JSON puts it, so a field the module writes in the wrong place, or for the wrong versions,
moves every byte after it. The module speaks v4 to v11, the versions before ``"flexibleVersions": "12+"``, so no
vector carries tagged fields; a flexible version is refused rather than framed wrong.
"""

from __future__ import annotations

import struct

import pytest

from protocol import CodecError
from protocol.fetch import (
    API_VERSIONS,
    FETCH,
    FETCH_VERSIONS,
    AbortedTransaction,
    FetchPartitionRequest,
    decode_api_versions_response,
    decode_fetch_response,
    encode_api_versions_request,
    encode_fetch_request,
    pick_version,
    response_correlation_id,
)


def h(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


# Kafka's error codes (org.apache.kafka.common.protocol.Errors) that a fetch answers with.
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
UNSUPPORTED_VERSION = 35
FETCH_SESSION_ID_NOT_FOUND = 70

# Fetch v4: header v1, then ReplicaId, MaxWaitMs, MinBytes, MaxBytes (v3+), IsolationLevel (v4+), Topics.
REQUEST_V4 = h(
    """00 00 00 38
       00 01 00 04 00 00 00 07 00 02 67 73
       ff ff ff ff 00 00 01 f4 00 00 00 01 04 00 00 00 01
       00 00 00 01 00 01 74
         00 00 00 01
           00 00 00 00 00 00 00 00 00 00 00 05 00 00 04 00"""
)
# Fetch v11: v4 plus SessionId/SessionEpoch (v7+), CurrentLeaderEpoch (v9+) before FetchOffset, LogStartOffset
# (v5+) after it, ForgottenTopicsData (v7+) and RackId (v11+) at the end.
REQUEST_V11 = h(
    """00 00 00 52
       00 01 00 0b 00 00 00 07 00 02 67 73
       ff ff ff ff 00 00 01 f4 00 00 00 01 04 00 00 00 01
       00 00 00 00 ff ff ff ff
       00 00 00 01 00 01 74
         00 00 00 01
           00 00 00 00 ff ff ff ff 00 00 00 00 00 00 00 05 ff ff ff ff ff ff ff ff 00 00 04 00
       00 00 00 00
       00 00"""
)

# Fetch response v4 (after the size prefix): CorrelationId (header v0), ThrottleTimeMs, Responses; the partition
# has HighWatermark 10, LastStableOffset 8, one aborted transaction (producer 1000 from offset 3), 3 record bytes.
RESPONSE_V4 = h(
    """00 00 00 07 00 00 00 00
       00 00 00 01 00 01 74
         00 00 00 01
           00 00 00 00 00 00 00 00 00 00 00 00 00 0a 00 00 00 00 00 00 00 08
           00 00 00 01 00 00 00 00 00 00 03 e8 00 00 00 00 00 00 00 03
           00 00 00 03 61 62 63"""
)
# The same answer as v11: ErrorCode and SessionId (v7+) at the top, LogStartOffset (v5+) after the LSO,
# PreferredReadReplica (v11+) between the aborted transactions and the records.
RESPONSE_V11 = h(
    """00 00 00 07 00 00 00 00 00 00 00 00 00 00
       00 00 00 01 00 01 74
         00 00 00 01
           00 00 00 00 00 00 00 00 00 00 00 00 00 0a 00 00 00 00 00 00 00 08 00 00 00 00 00 00 00 02
           00 00 00 01 00 00 00 00 00 00 03 e8 00 00 00 00 00 00 00 03
           ff ff ff ff
           00 00 00 03 61 62 63"""
)


def request(version: int) -> bytes:
    return encode_fetch_request(version, 7, "gs", [FetchPartitionRequest("t", 0, 5, 1024)], max_wait_ms=500,
                                min_bytes=1, max_bytes=64 << 20, isolation_level=1)


def expected_request(version: int, parts: list[tuple[str, int, int, int]], *, client_id: str = "gs") -> bytes:
    """A Fetch request of ``version`` written straight from FetchRequest.json's version ranges, independent of
    the module's own writer (its checks are per field, not per version step)."""
    body = struct.pack(">hhi", FETCH, version, 7) + struct.pack(">h", len(client_id)) + client_id.encode()
    body += struct.pack(">iiiib", -1, 500, 1, 64 << 20, 1)
    if version >= 7:
        body += struct.pack(">ii", 0, -1)
    topics: dict[str, list[tuple[int, int, int]]] = {}
    for topic, partition, offset, max_bytes in parts:
        topics.setdefault(topic, []).append((partition, offset, max_bytes))
    body += struct.pack(">i", len(topics))
    for topic, entries in topics.items():
        body += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(entries))
        for partition, offset, max_bytes in entries:
            body += struct.pack(">i", partition)
            body += struct.pack(">i", -1) if version >= 9 else b""
            body += struct.pack(">q", offset)
            body += struct.pack(">q", -1) if version >= 5 else b""
            body += struct.pack(">i", max_bytes)
    if version >= 7:
        body += struct.pack(">i", 0)
    if version >= 11:
        body += struct.pack(">h", 0)
    return struct.pack(">i", len(body)) + body


def response(version: int, partitions: list[bytes], *, error: int = 0, throttle: int = 0, topic: bytes = b"t") -> bytes:
    """A one-topic Fetch response of ``version``; each entry of ``partitions`` is from :func:`partition`."""
    out = struct.pack(">ii", 7, throttle)
    if version >= 7:
        out += struct.pack(">hi", error, 0)
    return out + struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic + struct.pack(">i", len(partitions)) \
        + b"".join(partitions)


def partition(version: int, index: int, *, error: int = 0, high: int = 10, stable: int = 8, log_start: int = 2,
              aborted: list[tuple[int, int]] | None = None, records: bytes | None = b"abc") -> bytes:
    out = struct.pack(">ihqq", index, error, high, stable)
    if version >= 5:
        out += struct.pack(">q", log_start)
    if aborted is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(aborted)) + b"".join(struct.pack(">qq", p, o) for p, o in aborted)
    if version >= 11:
        out += struct.pack(">i", -1)
    if records is None:
        return out + struct.pack(">i", -1)
    return out + struct.pack(">i", len(records)) + records


# --- requests -----------------------------------------------------------------------------------------------------


def test_fetch_request_v4_matches_the_hand_written_vector():
    assert request(4) == REQUEST_V4


def test_fetch_request_v11_matches_the_hand_written_vector():
    assert request(11) == REQUEST_V11


@pytest.mark.parametrize("version", list(FETCH_VERSIONS))
def test_fetch_request_every_supported_version_follows_the_schema(version):
    parts = [("t", 0, 5, 1024), ("orders", 3, 1 << 40, 256), ("t", 2, 0, 1)]
    built = encode_fetch_request(version, 7, "gs", [FetchPartitionRequest(*p) for p in parts], max_wait_ms=500,
                                 min_bytes=1, max_bytes=64 << 20, isolation_level=1)
    assert built == expected_request(version, parts)
    (size,) = struct.unpack_from(">i", built)
    assert size == len(built) - 4


def test_fetch_request_groups_partitions_under_their_topic_in_first_seen_order():
    built = encode_fetch_request(4, 7, "gs", [FetchPartitionRequest("b", 1, 0, 9), FetchPartitionRequest("a", 0, 0, 9),
                                              FetchPartitionRequest("b", 0, 0, 9)])
    topics_at = 4 + 12 + 17
    assert struct.unpack_from(">i", built, topics_at) == (2,)
    assert built[topics_at + 4 : topics_at + 7] == b"\x00\x01b"
    assert struct.unpack_from(">iiqi", built, topics_at + 7) == (2, 1, 0, 9)


def test_fetch_request_default_isolation_is_read_committed_and_read_uncommitted_is_zero():
    isolation_at = 4 + 12 + 16
    assert encode_fetch_request(4, 1, "gs", [])[isolation_at] == 1
    assert encode_fetch_request(4, 1, "gs", [], isolation_level=0)[isolation_at] == 0


def test_fetch_request_client_id_is_counted_in_utf8_bytes():
    built = encode_fetch_request(4, 1, "é", [])
    assert built[12:16] == h("00 02 c3 a9")


@pytest.mark.parametrize("version", [0, 3, 12, 13, 17])
def test_fetch_request_refuses_versions_outside_v4_to_v11(version):
    """v12+ is flexible (compact strings and tagged fields) and v13+ names topics by id; framing those as v11
    would send a request the broker misreads, so the module refuses them."""
    with pytest.raises(ValueError, match="not supported"):
        encode_fetch_request(version, 1, "gs", [FetchPartitionRequest("t", 0, 0, 1)])


def test_api_versions_request_is_version_0_with_an_empty_body():
    assert encode_api_versions_request(42, "gs") == h("00 00 00 0c 00 12 00 00 00 00 00 2a 00 02 67 73")
    assert API_VERSIONS == 18 and FETCH == 1


# --- responses ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, raw", [(4, RESPONSE_V4), (11, RESPONSE_V11)])
def test_fetch_response_hand_written_vectors_decode(version, raw):
    resp = decode_fetch_response(version, raw)
    assert (resp.correlation_id, resp.throttle_ms, resp.error_code) == (7, 0, 0)
    (p,) = resp.partitions
    assert (p.topic, p.partition, p.error_code, p.high_watermark, p.last_stable_offset) == ("t", 0, 0, 10, 8)
    assert p.log_start_offset == (-1 if version < 5 else 2)
    assert p.aborted == (AbortedTransaction(producer_id=1000, first_offset=3),)
    start, end = p.records
    assert raw[start:end] == b"abc" and end == len(raw)


@pytest.mark.parametrize("version", list(FETCH_VERSIONS))
def test_fetch_response_every_supported_version(version):
    raw = response(version, [partition(version, 0, aborted=[(1000, 3), (1001, 7)], records=b"xyz!"),
                             partition(version, 4, high=99, stable=99, log_start=50, aborted=[], records=b"")],
                   throttle=25)
    resp = decode_fetch_response(version, raw)
    assert resp.throttle_ms == 25
    first, second = resp.partitions
    assert first.aborted == (AbortedTransaction(1000, 3), AbortedTransaction(1001, 7))
    assert raw[slice(*first.records)] == b"xyz!"
    assert (second.partition, second.high_watermark, second.last_stable_offset) == (4, 99, 99)
    assert second.log_start_offset == (50 if version >= 5 else -1)
    assert second.aborted == () and second.records[0] == second.records[1] == len(raw)


def test_fetch_response_records_range_points_into_the_buffer_without_copying():
    raw = memoryview(RESPONSE_V11)
    p = decode_fetch_response(11, raw).partitions[0]
    assert bytes(raw[p.records[0] : p.records[1]]) == b"abc"


def test_fetch_response_null_aborted_list_and_null_records_read_as_empty():
    """Both are nullable in FetchResponse.json; read_uncommitted answers carry a null aborted list."""
    raw = response(11, [partition(11, 0, aborted=None, records=None)])
    (p,) = decode_fetch_response(11, raw).partitions
    assert p.aborted == ()
    assert p.records == (len(raw), len(raw))


@pytest.mark.parametrize("code", [OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER])
@pytest.mark.parametrize("version", [4, 11])
def test_fetch_response_partition_error_codes_are_reported_per_partition(version, code):
    raw = response(version, [partition(version, 0, error=code, high=-1, stable=-1, log_start=-1, aborted=None,
                                       records=b""), partition(version, 1)])
    failed, fine = decode_fetch_response(version, raw).partitions
    assert (failed.error_code, failed.high_watermark, failed.last_stable_offset) == (code, -1, -1)
    assert fine.error_code == 0 and raw[slice(*fine.records)] == b"abc"


def test_fetch_response_top_level_error_code_exists_from_v7():
    raw = response(7, [], error=FETCH_SESSION_ID_NOT_FOUND)
    resp = decode_fetch_response(7, raw)
    assert resp.error_code == FETCH_SESSION_ID_NOT_FOUND and resp.partitions == []
    # Before v7 there is no such field: the same bytes after the throttle time are the topic count.
    assert decode_fetch_response(6, response(6, [])).error_code == 0


def test_fetch_response_utf8_topic_names():
    raw = response(4, [partition(4, 0)], topic="zaïre".encode())
    assert decode_fetch_response(4, raw).partitions[0].topic == "zaïre"


@pytest.mark.parametrize("version", [4, 11])
def test_fetch_response_every_strict_prefix_raises_codec_error(version):
    raw = response(version, [partition(version, 0, aborted=[(1, 2)], records=b"abcdef")])
    for cut in range(len(raw)):
        with pytest.raises(CodecError):
            decode_fetch_response(version, raw[:cut])


def test_fetch_response_records_longer_than_the_response_name_the_partition():
    raw = response(11, [partition(11, 3, records=b"abc")])[:-1]
    with pytest.raises(CodecError, match="t-3"):
        decode_fetch_response(11, raw)


@pytest.mark.parametrize("version", [3, 12, 16])
def test_fetch_response_refuses_versions_outside_v4_to_v11(version):
    with pytest.raises(ValueError, match="not supported"):
        decode_fetch_response(version, RESPONSE_V4)


def test_fetch_response_topic_name_that_is_not_utf8_raises_codec_error():
    raw = response(4, [partition(4, 0)], topic=b"\xff\xfe")
    with pytest.raises(CodecError):
        decode_fetch_response(4, raw)


def test_response_correlation_id():
    assert response_correlation_id(RESPONSE_V4) == 7
    assert response_correlation_id(h("ff ff ff fe")) == -2
    with pytest.raises(CodecError):
        response_correlation_id(b"\x00\x00\x07")


# --- ApiVersions --------------------------------------------------------------------------------------------------

# ApiVersions v0 response: CorrelationId, ErrorCode, ApiKeys [ApiKey, MinVersion, MaxVersion].
API_VERSIONS_V0 = h(
    """00 00 00 2a 00 00 00 00 00 03
       00 00 00 00 00 0b
       00 01 00 04 00 11
       00 12 00 00 00 04"""
)


def test_api_versions_response_decodes_to_ranges():
    assert decode_api_versions_response(API_VERSIONS_V0) == {0: (0, 11), FETCH: (4, 17), API_VERSIONS: (0, 4)}


def test_api_versions_response_error_code_raises():
    with pytest.raises(CodecError, match=str(UNSUPPORTED_VERSION)):
        decode_api_versions_response(h("00 00 00 2a 00 23 00 00 00 00"))


def test_api_versions_response_truncated_raises():
    for cut in range(len(API_VERSIONS_V0)):
        with pytest.raises(CodecError):
            decode_api_versions_response(API_VERSIONS_V0[:cut])


@pytest.mark.parametrize(
    "supported, expected",
    [
        ({FETCH: (4, 17)}, 11),  # Kafka 4.0: the newest non-flexible version
        ({FETCH: (0, 10)}, 10),  # an older broker: its newest
        ({FETCH: (0, 4)}, 4),
        ({FETCH: (5, 8)}, 8),
        ({FETCH: (12, 17)}, None),  # only flexible versions: nothing this module speaks
        ({FETCH: (0, 3)}, None),
        ({API_VERSIONS: (0, 4)}, None),  # Fetch not offered at all
        ({}, None),
    ],
)
def test_pick_version_is_the_highest_common_version(supported, expected):
    assert pick_version(supported) == expected
