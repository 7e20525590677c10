"""The heartbeat message: compact JSON a person can read, split into chunks with each partition's quiet tail and
oldest records beside its end offsets, topic ids in the first chunk, and anything else refused with one error."""

from __future__ import annotations

import json

import pytest

from streaming.schema.heartbeat_format import (
    Heartbeat,
    HeartbeatError,
    OldestRecord,
    decode_heartbeat,
    encode_heartbeats,
    iter_ends,
)

TS = 1_767_225_600_000


def test_one_message_is_the_documented_json():
    (raw,) = encode_heartbeats(TS, "host:1", 42, [("orders", 0, 1500, 1500, 0)], quiet=[("orders", 0, 1500, 1498)],
                               topic_ids=[("orders", "XuMxlfAoToyPp6uhLLiU4w")],
                               oldest=[OldestRecord("orders", 0, 1200, 1203, TS - 5_000)])
    assert json.loads(raw) == {
        "v": 1, "ts": TS, "emitter": "host:1", "seq": 42, "chunk": 0, "chunks": 1,
        "ends": [["orders", 0, 1500, 1500, 0]], "quiet": [["orders", 0, 1500, 1498]],
        "oldest": [["orders", 0, 1200, 1203, TS - 5_000]], "topic_ids": [["orders", "XuMxlfAoToyPp6uhLLiU4w"]],
    }
    assert b" " not in raw  # compact separators


def test_round_trip():
    ends = [("a", 0, 10, 9, 1), ("b", 3, 5, -1, 0)]
    (raw,) = encode_heartbeats(TS, "e", 7, ends, quiet=[("a", 0, 10, 8)], topic_ids=[("a", "id-a")],
                               oldest=[OldestRecord("b", 3, 2, 2, TS)])
    assert decode_heartbeat(raw) == Heartbeat(TS, "e", 7, 0, 1, tuple(ends), (("a", 0, 10, 8),), (("a", "id-a"),),
                                              (OldestRecord("b", 3, 2, 2, TS),))


def test_chunks_carry_their_partitions_extras_and_topic_ids_only_in_the_first():
    ends = [("t", p, 100 + p, 100 + p, 0) for p in range(5)]
    raws = encode_heartbeats(TS, "e", 1, ends, chunk_size=2, quiet=[("t", 3, 103, 101)], topic_ids=[("t", "x")],
                             oldest=[OldestRecord("t", 4, 50, 50, TS), OldestRecord("t", 0, 1, 1, TS)])
    beats = [decode_heartbeat(r) for r in raws]
    assert [(b.chunk, b.chunks, [e[1] for e in b.ends]) for b in beats] == [(0, 3, [0, 1]), (1, 3, [2, 3]),
                                                                            (2, 3, [4])]
    assert [b.quiet for b in beats] == [(), (("t", 3, 103, 101),), ()]
    assert [[o.partition for o in b.oldest] for b in beats] == [[0], [], [4]]
    assert [b.topic_ids for b in beats] == [(("t", "x"),), (), ()]
    assert [e for _, e in iter_ends(beats)] == ends


def test_a_tick_with_no_partitions_is_still_one_message():
    (raw,) = encode_heartbeats(TS, "e", 1, [])
    assert decode_heartbeat(raw).ends == () and decode_heartbeat(raw).chunks == 1


def test_optional_keys_default_for_old_or_minimal_messages():
    hb = decode_heartbeat(b'{"v":1,"ts":5,"ends":[["t",0,1,1,0]]}')
    assert (hb.emitter, hb.seq, hb.chunk, hb.chunks, hb.quiet, hb.topic_ids, hb.oldest) == ("", 0, 0, 1, (), (), ())


def test_oldest_record_covers_the_offsets_from_where_it_was_read_to_itself():
    o = OldestRecord("t", 0, 10, 13, TS)
    assert [o.covers(c) for c in (9, 10, 12, 13, 14)] == [False, True, True, True, False]


@pytest.mark.parametrize(
    "value, match",
    [
        (None, "without a value"),
        (b'{"v":2,"ts":1,"ends":[]}', "unknown heartbeat version 2"),
        (b'{"ts":1,"ends":[]}', "unknown heartbeat version None"),
        (b"not json", "not a heartbeat"),
        (b"[1, 2]", "not a heartbeat"),
        (b'{"v":1,"ends":[]}', "not a heartbeat"),  # no timestamp
        (b'{"v":1,"ts":1,"ends":[["t",0,1]]}', "not a heartbeat"),  # an end row too short
        (b'{"v":1,"ts":1,"ends":[["t","x",1,1,0]]}', "not a heartbeat"),
        (b"\xff\xfe", "not a heartbeat"),
    ],
)
def test_what_is_not_a_heartbeat_raises_heartbeat_error(value, match):
    with pytest.raises(HeartbeatError, match=match):
        decode_heartbeat(value)
