"""The executor-side range reader against a real Kafka-protocol broker (librdkafka's mock cluster over TCP)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from streaming.kafka.client import KafkaAccess
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange, read_ranges


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


def _read(bootstrap: str, ranges: list[OffsetRange], **kw) -> pa.Table:
    batches = list(read_ranges({"bootstrap.servers": bootstrap}, ranges, **kw))
    return pa.Table.from_batches(batches) if batches else pa.table({})


def test_reads_exactly_the_ranges_in_offset_order(broker):
    table = _read(broker, [OffsetRange("plain", 0, 5, 17), OffsetRange("plain", 2, 0, 3), OffsetRange("plain", 1, 9, 9)])
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


def test_small_batches_split_but_lose_nothing(broker):
    batches = list(read_ranges({"bootstrap.servers": broker}, [OffsetRange("plain", p, 0, 30) for p in range(3)],
                               batch_rows=7))
    assert max(b.num_rows for b in batches) == 7, "no batch holds more than batch_rows"
    assert sum(b.num_rows for b in batches) == 90


def test_a_range_ending_on_control_markers_completes(broker):
    """read_committed never delivers the markers, so the read must end on the consumer's position."""
    end = KafkaAccess({"bootstrap.servers": broker}).end_offsets([("txn", 0)])[("txn", 0)].last_stable
    assert end == 18, "15 records and 3 commit markers"
    table = _read(broker, [OffsetRange("txn", 0, 0, end)], timeout_s=30)
    assert table.num_rows == 15
    assert table.column("value").to_pylist()[-1] == b"t2-4"
