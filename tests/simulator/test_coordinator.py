"""Unit checks of the coordinator emulation's building blocks against Kafka facts and the kafka-4.0 captures."""

from __future__ import annotations

import json
import random

from protocol.builders import new_offset_commit
from protocol.codec import decode_record, encode_record
from streaming.simulator import MemorySink, Simulation
from streaming.simulator.coordinator import (
    java_hashmap_order,
    kip848_member_id,
    librdkafka_member_id,
)


def test_hot_path_offset_commit_bytes_equal_the_builders():
    # The simulator packs OffsetCommitValue v3 itself (speed); the bytes must be the codec's.
    sim = Simulation(["steady"], seed=1)
    sink = MemorySink()
    sim.run_until(1000, sink)
    co = sim.coordinator
    co.commit_offsets("g", [("t", 3, 12345, 0)], metadata="m\u00e9ta")
    key, value = sink.entries[-1].records[0]
    want = encode_record(new_offset_commit("g", "t", 3, 12345, commit_timestamp=sim.now_ms, leader_epoch=0,
                                           metadata="m\u00e9ta"))
    assert (key, value) == want


def test_member_order_is_java_hashmap_order_as_in_the_captures(captures):
    # Every GroupMetadataValue the real broker wrote lists its members in HashMap iteration order.
    checked = 0
    with open(captures / "conformance" / "kafka-4.0" / "a_classic" / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r["key_version"] != 2 or r["value_hex"] is None:
                continue
            rec = decode_record(bytes.fromhex(r["key_hex"]), bytes.fromhex(r["value_hex"]))
            ids = [m.member_id for m in rec.value.members]
            if len(ids) > 1:
                assert java_hashmap_order(sorted(ids)) == ids or java_hashmap_order(ids) == ids
                checked += 1
    assert checked > 5


def test_member_id_shapes():
    rng = random.Random(1)
    assert len(kip848_member_id(rng)) == 22
    mid = librdkafka_member_id("client-1", rng)
    assert mid.startswith("client-1-") and mid[len("client-1-") + 14] == "4"
