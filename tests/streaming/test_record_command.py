"""What ``groupscope record`` captures (``kafka/capture.py``): the lines it writes are what the recording loader
reads, records are kept by the group their key names, and the size budget holds. The command's refusals of bad
input are ``tests/commands/test_record.py``.

The capture against a real broker, replayed afterwards, is ``tests/realkafka/test_record.py``.
"""

from __future__ import annotations

import json
import re

from protocol.builders import (new_classic_member, new_consumer_group_member, new_consumer_subscription,
                               new_group_metadata, new_offset_commit, new_offset_commit_tombstone)
from protocol.codec import encode_record
from streaming.kafka.capture import (CaptureOptions, _Budget, group_of_key, record_line, sample_line,
                                     topics_named)
from streaming.offline.recording import load_recording


def _commit(group: str, topic: str, partition: int, offset: int):
    return encode_record(new_offset_commit(group, topic, partition, offset, commit_timestamp=1_000))


def test_the_group_id_comes_from_every_kind_of_key():
    key, _ = _commit("orders-app", "orders", 3, 10)
    assert group_of_key(key) == "orders-app"
    member = new_classic_member("m-1", client_id="c", subscription=new_consumer_subscription(["orders"]))
    key, _ = encode_record(new_group_metadata("classic-app", generation=1, protocol_type="consumer",
                                              protocol="range", leader="m-1", members=[member],
                                              current_state_timestamp=1_000))
    assert group_of_key(key) == "classic-app"
    key, _ = encode_record(new_consumer_group_member("kip848-app", "m-2", client_id="c",
                                                     subscribed_topic_names=["payments"]))
    assert group_of_key(key) == "kip848-app"
    assert group_of_key(b"\x00") is None and group_of_key(None) is None


def test_the_topics_a_group_consumes_come_from_commits_and_subscriptions():
    assert topics_named(*_commit("g", "orders", 0, 1)) == {"orders"}
    assert topics_named(*encode_record(new_offset_commit_tombstone("g", "gone", 0))) == {"gone"}
    member = new_classic_member("m-1", client_id="c", subscription=new_consumer_subscription(["a", "b"]))
    classic = encode_record(new_group_metadata("g", generation=1, protocol_type="consumer", protocol="range",
                                               leader="m-1", members=[member], current_state_timestamp=1))
    assert topics_named(*classic) == {"a", "b"}
    kip848 = encode_record(new_consumer_group_member("g", "m", client_id="c", subscribed_topic_names=["p"]))
    assert topics_named(*kip848) == {"p"}
    assert topics_named(b"\x00\x63garbage", b"\x00\x00") == set()


def test_group_patterns_match_whole_ids():
    options = CaptureOptions(out_dir=None, groups=(re.compile("orders-.*"), re.compile("billing")))
    assert options.watches("orders-app") and options.watches("billing")
    assert not options.watches("billing-test") and not options.watches("my-orders-app")
    assert not options.watches(None)
    assert CaptureOptions(out_dir=None).watches("anything")


def test_what_the_capture_writes_is_what_replay_loads(tmp_path):
    key, value = _commit("g", "orders", 2, 42)
    tomb_key, _ = encode_record(new_offset_commit_tombstone("g", "orders", 1))
    (tmp_path / "records.jsonl").write_text(record_line(7, 100, 5_000, key, value)
                                            + record_line(7, 101, 5_500, tomb_key, None))
    (tmp_path / "end_offsets.jsonl").write_text(
        sample_line(6_000, {("orders", 2): (50, 50, 0), ("__consumer_offsets", 7): (102, 102, 0)}))
    rec = load_recording(tmp_path)
    assert [(r.partition, r.offset, r.timestamp, r.key, r.value) for r in rec.records] == [
        (7, 100, 5_000, key, value), (7, 101, 5_500, tomb_key, None)]
    assert rec.samples[0].t_ms == 6_000
    assert rec.samples[0].ends == {("orders", 2): (50, 50, 0), ("__consumer_offsets", 7): (102, 102, 0)}


def test_the_size_budget_refuses_the_line_that_would_exceed_it():
    budget = _Budget(100)
    assert budget.take(60) and budget.take(40)
    assert not budget.take(1)
    assert budget.used == 100
