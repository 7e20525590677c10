"""The vectorized Arrow decode: one row per input record in order, the same values as ``decode_record``, and bad
input as a ``decode_error`` row instead of an exception."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import CodecError, UnknownRecord, decode_record, encode_record
from protocol.arrow import DECODED_SCHEMA, decode_arrow
from protocol.builders import new_offset_commit, new_offset_commit_tombstone

from .conformance import captured_records


def expected_row(key, value):
    """Independent reference for the columns every row has, built from ``decode_record``."""
    try:
        rec = decode_record(key, value)
    except CodecError as exc:
        return {"decode_error": str(exc)}
    if isinstance(rec, UnknownRecord):
        return {"record_type": rec.type, "is_unknown": True, "decode_error": None}
    row = {"record_type": int(rec.type), "is_tombstone": rec.value is None, "group_id": rec.group_id,
           "is_unknown": False, "decode_error": None,
           "value_version": None if rec.value is None else rec.value_version}
    if rec.type in (0, 1):
        row.update(topic=rec.key.topic, partition=rec.key.partition)
        if rec.value is not None:
            row.update(committed_offset=rec.value.offset, leader_epoch=rec.value.leader_epoch,
                       metadata=rec.value.metadata, commit_timestamp=rec.value.commit_timestamp,
                       expire_timestamp=rec.value.expire_timestamp)
    return row


def check(keys, values):
    batch = decode_arrow(keys, values)
    assert batch.schema == DECODED_SCHEMA
    assert batch.num_rows == len(keys)
    rows = batch.to_pylist()
    if isinstance(keys, pa.Array):
        keys, values = keys.to_pylist(), values.to_pylist()
    for row, key, value in zip(rows, keys, values):
        want = expected_row(key, value)
        assert {k: row[k] for k in want} == want
    return rows


def test_capture_decodes_like_decode_record(captures):
    recs = [r for r in captured_records(captures) if not r.is_control]
    rows = check(pa.array([r.key for r in recs], pa.binary()), pa.array([r.value for r in recs], pa.binary()))
    members = [row for row, r in zip(rows, recs) if r.key[1] == 2 and r.value is not None and row["members"]]
    assert members, "classic group rows carry their members"
    assert all(m["assignment"] is not None for row in members for m in row["members"])


def test_all_offset_commits_take_the_fast_path_shape():
    recs = [new_offset_commit("g", "t", p, 10 * p, commit_timestamp=1000 + p, leader_epoch=p) for p in range(5)]
    recs.append(new_offset_commit("g", "t", 9, 1, commit_timestamp=5, metadata="meta"))
    recs.append(new_offset_commit("g", "t", 8, 2, commit_timestamp=5, expire_timestamp=99))  # v1
    recs.append(new_offset_commit_tombstone("g", "t", 1))
    encoded = [encode_record(r) for r in recs]
    rows = check([k for k, _ in encoded], [v for _, v in encoded])
    assert [r["committed_offset"] for r in rows] == [0, 10, 20, 30, 40, 1, 2, None]
    assert rows[6]["value_version"] == 1 and rows[6]["expire_timestamp"] == 99
    assert rows[7]["is_tombstone"] is True


def test_errors_become_rows_in_place():
    good = encode_record(new_offset_commit("g", "t", 0, 5, commit_timestamp=1))
    keys = [good[0], b"\x00", good[0], None, b"\x00\x63zz", good[0]]
    values = [good[1], b"x", b"\x00\x03\x00", b"\x00\x00", None, good[1]]
    rows = check(keys, values)
    assert [r["decode_error"] is None for r in rows] == [True, False, False, False, True, True]
    assert rows[4]["is_unknown"] is True and rows[4]["record_type"] == 99
    assert "OffsetCommitValue" in rows[2]["decode_error"]


def test_empty_input():
    assert decode_arrow([], []).num_rows == 0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=30)), st.one_of(st.none(), st.binary(max_size=30))),
                max_size=20), st.lists(st.integers(0, 10**12), max_size=10))
def test_random_mixtures(noise, offsets):
    commits = [encode_record(new_offset_commit("grp", "topic", i, o, commit_timestamp=o)) for i, o in enumerate(offsets)]
    pairs = noise + commits
    check([k for k, _ in pairs], [v for _, v in pairs])
