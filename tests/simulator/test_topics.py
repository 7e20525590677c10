"""The consumed topics: end offsets grow at the produce rate from each partition's base, a rate change keeps what
was already produced, new partitions start empty, and bad specs are refused."""

from __future__ import annotations

import random

import pytest

from protocol import Uuid
from streaming.simulator.topics import Topic, TopicSpec

T0 = 1_000_000


def test_a_spec_needs_a_name_partitions_and_a_rate_that_is_not_negative():
    for bad in (dict(name="", partitions=1), dict(name="t", partitions=0), dict(name="t", partitions=1, rate=-1)):
        with pytest.raises(ValueError, match="bad topic spec"):
            TopicSpec(**bad)
    assert TopicSpec("t", 3).rate == 10.0


def test_end_offsets_are_base_plus_rate_times_elapsed_rounded_down():
    topic = Topic(TopicSpec("orders", 3, rate=7.5), random.Random(0), T0, bases={1: 100})
    # 7.5 messages per second: 2 s give 15 per partition, 1.1 s give 8.25 -> 8 whole messages.
    assert topic.end_offsets(T0) == [0, 100, 0]
    assert topic.end_offsets(T0 + 2_000) == [15, 115, 15]
    assert topic.end_offset(1, T0 + 1_100) == 108
    assert topic.partitions == 3


def test_a_rate_change_keeps_what_was_produced_and_pausing_freezes_the_end():
    topic = Topic(TopicSpec("orders", 2, rate=10), random.Random(0), T0)
    topic.set_rate(0, T0 + 3_000)  # 30 produced per partition by now
    assert topic.end_offsets(T0 + 60_000) == [30, 30]
    topic.set_rate(100, T0 + 60_000)
    assert topic.end_offsets(T0 + 60_500) == [80, 80]
    with pytest.raises(ValueError, match="rate"):
        topic.set_rate(-0.5, T0 + 61_000)


def test_added_partitions_start_empty_when_they_are_created():
    topic = Topic(TopicSpec("orders", 1, rate=10), random.Random(0), T0)
    topic.add_partitions(3, T0 + 5_000)
    assert topic.partitions == 3
    assert topic.end_offsets(T0 + 7_000) == [70, 20, 20]
    topic.add_partitions(2, T0 + 8_000)  # never shrinks: Kafka cannot remove partitions
    assert topic.partitions == 3


def test_the_topic_id_is_128_random_bits_from_the_seeded_generator():
    a = Topic(TopicSpec("orders", 1), random.Random(42), T0)
    b = Topic(TopicSpec("orders", 1), random.Random(42), T0)
    c = Topic(TopicSpec("orders", 1), random.Random(43), T0)
    assert isinstance(a.topic_id, Uuid)
    assert a.topic_id == b.topic_id != c.topic_id
    assert bytes(a.topic_id) == random.Random(42).getrandbits(128).to_bytes(16, "big")
