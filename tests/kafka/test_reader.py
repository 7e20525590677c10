"""The executor-side range readers against a real Kafka-protocol broker (librdkafka's mock cluster over TCP): the
consumer (``read_ranges``) and the direct Fetch reader (``fetch_ranges``) must read exactly the same rows. What
only the Fetch reader does is in ``tests/kafka/test_fetcher.py``."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Producer

from streaming.kafka.client import KafkaAccess
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange
from tests.kafka.range_readers import READERS, read_batches, read_table


@pytest.fixture(scope="module")
def broker():
    with MockCluster(1) as mc:
        mc.create_topic("plain", 3)
        mc.create_topic("txn", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(90):
            p.produce("plain", key=b"k%d" % i, value=None if i % 10 == 0 else b"v%d" % i, partition=i % 3)
        p.flush(30)
        t = Producer({"bootstrap.servers": mc.bootstrap_servers, "transactional.id": "reader-test", "log_level": 3})
        t.init_transactions(30)
        for n in range(3):  # three transactions: each ends with a control marker that takes an offset
            t.begin_transaction()
            for i in range(5):
                t.produce("txn", value=b"t%d-%d" % (n, i), partition=0)
            t.commit_transaction(30)
        yield mc.bootstrap_servers


@pytest.mark.parametrize("reader", READERS)
def test_reads_exactly_the_ranges_in_offset_order(broker, reader):
    table = read_table(broker, [OffsetRange("plain", 0, 5, 17), OffsetRange("plain", 2, 0, 3), OffsetRange("plain", 1, 9, 9)],
                  reader)
    got = list(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    assert sorted(got) == [(0, o) for o in range(5, 17)] + [(2, o) for o in range(3)]
    for p in (0, 2):
        offsets = [o for q, o in got if q == p]
        assert offsets == sorted(offsets)
    now = datetime.now(timezone.utc)
    assert all(abs(now - ts) < timedelta(minutes=10) for ts in table.column("timestamp").to_pylist()), \
        "record timestamps (ms) become Spark's microsecond timestamps"
    values = dict(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
    assert values[b"k15"] == b"v15" and values[b"k30"] is None, "null values (tombstones) stay null"


@pytest.mark.parametrize("reader", READERS)
def test_small_batches_split_but_lose_nothing(broker, reader):
    batches = read_batches(reader, broker, [OffsetRange("plain", p, 0, 30) for p in range(3)], batch_rows=7)
    if reader == "consumer":
        assert max(b.num_rows for b in batches) == 7, "no batch holds more than batch_rows"
    else:
        assert len(batches) >= 3, "a chunk is handed on once it holds batch_rows"
    assert sum(b.num_rows for b in batches) == 90


@pytest.mark.parametrize("reader", READERS)
def test_a_range_ending_on_control_markers_completes(broker, reader):
    """read_committed never delivers the markers, so the read must end on the consumer's position."""
    end = KafkaAccess({"bootstrap.servers": broker}).end_offsets([("txn", 0)])[("txn", 0)].last_stable
    assert end == 18, "15 records and 3 commit markers"
    table = read_table(broker, [OffsetRange("txn", 0, 0, end)], reader, timeout_s=30)
    assert table.num_rows == 15
    assert table.column("value").to_pylist()[-1] == b"t2-4"


def test_both_readers_read_a_real_brokers_records_identically(captures):
    """Every record of the Kafka 4.0 captures, produced into __consumer_offsets partitions of the broker, read by
    both readers over ranges that start and end inside the producer's batches: the same rows, row for row."""
    from tests.protocol.conformance import captured_records

    with MockCluster(1) as mc:
        mc.create_topic("__consumer_offsets", 4)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3, "linger.ms": 50})
        produced = 0
        for rec in captured_records(captures):
            if rec.is_control:
                continue
            value = rec.raw["value_hex"]
            p.produce("__consumer_offsets", key=bytes.fromhex(rec.raw["key_hex"]),
                      value=None if value is None else bytes.fromhex(value), partition=rec.partition % 4)
            produced += 1
        p.flush(30)
        ends = KafkaAccess({"bootstrap.servers": mc.bootstrap_servers}).end_offsets(
            [("__consumer_offsets", q) for q in range(4)])
        assert sum(e.high_watermark for e in ends.values()) == produced > 100
        for ranges in ([OffsetRange("__consumer_offsets", q, 0, e.last_stable) for (_, q), e in ends.items()],
                       [OffsetRange("__consumer_offsets", q, 3, e.last_stable - 2) for (_, q), e in ends.items()]):
            tables = {r: read_table(mc.bootstrap_servers, ranges, r).sort_by([("partition", "ascending"),
                                                                        ("offset", "ascending")]) for r in READERS}
            assert tables["fetch"].num_rows == sum(r.size for r in ranges)
            assert tables["fetch"].equals(tables["consumer"])


