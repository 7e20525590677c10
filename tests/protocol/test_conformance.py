"""Every record of the real Kafka 4.0 captures decodes, matches Kafka's own decoder field by field, and re-encodes
to the exact bytes the broker wrote."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from protocol import CoordinatorRecord, decode_record, encode_record, kafka_key_json, kafka_payload_json

from .conformance import captured_records, dumplog_reference


@pytest.fixture(scope="module")
def records(captures):
    return list(captured_records(captures))


@pytest.fixture(scope="module")
def reference(captures):
    return dumplog_reference(captures)


def test_capture_is_not_empty(records, reference):
    data = [r for r in records if not r.is_control]
    assert len(data) > 15000
    # Every data record has a line in Kafka's dump output (and nothing is left over).
    assert {(r.scenario, r.partition, r.offset) for r in records} == set(reference)
    types = Counter(r.key[1] for r in data)
    for expected in (1, 2, 3, 4, 5, 6, 7, 8, 16):
        assert types[expected] > 0, f"capture has no record of type {expected}"


def test_every_record_matches_kafka_dump_log(records, reference):
    mismatches = []
    for rec in records:
        if rec.is_control:
            continue
        decoded = decode_record(rec.key, rec.value)
        assert isinstance(decoded, CoordinatorRecord), (rec.scenario, rec.offset, decoded)
        got = (kafka_key_json(decoded), kafka_payload_json(decoded))
        expected = reference[(rec.scenario, rec.partition, rec.offset)]
        # Compare the serialized form: field order and value types must match too, not just equality.
        if json.dumps(got) != json.dumps(expected):
            mismatches.append((rec.scenario, rec.partition, rec.offset, got, expected))
    assert not mismatches, mismatches[:3]


def test_every_record_reencodes_byte_exactly(records):
    for rec in records:
        if rec.is_control:
            continue
        decoded = decode_record(rec.key, rec.value)
        assert encode_record(decoded) == (rec.key, rec.value), (rec.scenario, rec.partition, rec.offset)


def test_versions_seen_match_capture_metadata(records):
    for rec in records:
        if rec.is_control:
            continue
        decoded = decode_record(rec.key, rec.value)
        assert int(decoded.type) == rec.raw["key_version"]
        if rec.value is not None:
            assert decoded.value_version == rec.raw["value_version"]
        assert decoded.is_tombstone == rec.raw["tombstone"]


def test_markers_in_reference_match_capture(records, reference):
    markers = [r for r in records if r.is_control]
    assert markers, "the transactions scenario must contain control records"
    for rec in markers:
        kind, (ctype, epoch) = reference[(rec.scenario, rec.partition, rec.offset)]
        assert kind == "marker"
        assert rec.raw["control"]["type"].upper() == ctype
        assert rec.raw["control"]["coordinator_epoch"] == epoch
