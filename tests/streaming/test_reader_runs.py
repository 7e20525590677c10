"""The range reader's per-run bookkeeping: records outside their range dropped, ranges completed and paused, topics
told apart where two topics of one read share a partition number.

The first test drives ``_take`` with stand-ins, named as such (``FakeMessage``, ``FakeConsumer``): it needs message
runs in an order a broker would not produce on demand (interleaved, overrunning, repeated), and only the calls
``_take`` makes. The others read from librdkafka's mock cluster, a real broker over TCP."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from confluent_kafka import Producer

from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange, _batch, _take, read_ranges


class FakeMessage:
    """Stand-in for a confluent-kafka message: the accessors ``_take`` calls, nothing else."""

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._t, self._p, self._o = topic, partition, offset

    def error(self):
        return None

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes:
        return f"{self._t}/{self._p}/{self._o}".encode()

    def value(self) -> bytes:
        return b"v%d" % self._o

    def timestamp(self) -> tuple[int, int]:
        return 1, 1_767_225_600_000 + self._o


class FakeConsumer:
    """Stand-in for a consumer: records what ``_take`` pauses."""

    def __init__(self) -> None:
        self.paused: list[tuple[str, int]] = []

    def pause(self, tps) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in tps]


@pytest.mark.parametrize("shared_partition", [False, True])
def test_take_keeps_in_range_records_and_completes_ranges(shared_partition):
    ranges = [OffsetRange("a", 0, 0, 3), OffsetRange("b", 0 if shared_partition else 1, 10, 20),
              OffsetRange("a", 2, 5, 8)]
    names = ["a", "b"]
    codes = {"a": 0, "b": 1}
    topic_of = None if shared_partition else {0: 0, 1: 1, 2: 0}
    pb = ranges[1].partition
    # Interleaved runs; a2 and a0 overrun their ends; a run of a finished range (a0 again) is dropped entirely.
    msgs = ([FakeMessage("a", 0, o) for o in range(0, 2)] + [FakeMessage("b", pb, o) for o in range(10, 14)]
            + [FakeMessage("a", 2, o) for o in range(5, 10)] + [FakeMessage("a", 0, o) for o in range(2, 5)]
            + [FakeMessage("b", pb, o) for o in range(14, 16)])
    remaining = {(r.topic, r.partition): r for r in ranges}
    next_offset = {tp: r.start for tp, r in remaining.items()}
    cols: tuple[list, ...] = ([], [], [], [], [], [])
    consumer = FakeConsumer()
    _take(msgs, remaining, next_offset, cols, consumer, names, codes, topic_of)
    batch = _batch(*cols, pa.array(names))
    got = list(zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                   batch.column("offset").to_pylist()))
    want = ([("a", 0, o) for o in range(0, 2)] + [("b", pb, o) for o in range(10, 14)]
            + [("a", 2, o) for o in range(5, 8)] + [("a", 0, 2)] + [("b", pb, o) for o in range(14, 16)])
    assert got == want
    assert batch.column("key").to_pylist() == [f"{t}/{p}/{o}".encode() for t, p, o in want]
    assert sorted(consumer.paused) == [("a", 0), ("a", 2)]
    assert set(remaining) == {("b", pb)}
    assert next_offset == {("a", 0): 3, ("b", pb): 16, ("a", 2): 8}

    # The next result holds only records of finished ranges: nothing is taken.
    before = sum(len(c) for c in cols[:2])
    _take([FakeMessage("a", 2, 9)], remaining, next_offset, cols, consumer, names, codes, topic_of)
    assert sum(len(c) for c in cols[:2]) == before


@pytest.fixture(scope="module")
def broker():
    with MockCluster(1) as mc:
        mc.create_topic("one", 2)
        mc.create_topic("two", 2)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for topic in ("one", "two"):
            for i in range(400):
                p.produce(topic, key=b"%s-%d" % (topic.encode(), i), value=b"v%d" % i, partition=i % 2)
        p.flush(30)
        yield mc.bootstrap_servers


def test_two_topics_sharing_partition_numbers_are_told_apart(broker):
    ranges = [OffsetRange("one", 0, 10, 150), OffsetRange("two", 0, 0, 200), OffsetRange("two", 1, 50, 51)]
    batches = list(read_ranges({"bootstrap.servers": broker}, ranges, batch_rows=64))
    table = pa.Table.from_batches(batches)
    rows = list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                    table.column("offset").to_pylist(), table.column("key").to_pylist()))
    assert sorted(r[:3] for r in rows) == sorted([("one", 0, o) for o in range(10, 150)]
                                                 + [("two", 0, o) for o in range(0, 200)] + [("two", 1, 50)])
    for topic, partition, offset, key in rows:
        assert key == b"%s-%d" % (topic.encode(), offset * 2 + partition), "each record keeps its own topic"
    for tp in {(t, p) for t, p, _, _ in rows}:
        offsets = [o for t, p, o, _ in rows if (t, p) == tp]
        assert offsets == sorted(offsets)
    assert np.all(np.diff([b.num_rows for b in batches[:-1]]) == 0), "full batches before the last"
