"""The executor-side range readers against a real Kafka-protocol broker (librdkafka's mock cluster over TCP): the
consumer (``read_ranges``) and the direct Fetch reader (``fetch_ranges``) must read exactly the same rows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from streaming.kafka.client import KafkaAccess
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.fetcher import direct_fetch_refusal, fetch_ranges
from streaming.kafka.reader import OffsetRange, ReadTimeout, read_ranges

READERS = ["consumer", "fetch"]


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


def _batches(reader: str, bootstrap: str, ranges: list[OffsetRange], **kw) -> list[pa.RecordBatch]:
    kafka = {"bootstrap.servers": bootstrap}
    if reader == "consumer":
        return list(read_ranges(kafka, ranges, **kw))
    chunks = list(fetch_ranges(kafka, ranges, **kw))
    for topic, partition, batch in chunks:  # each chunk: one partition's rows, in offset order
        assert set(batch.column("topic").to_pylist()) == {topic}
        assert set(batch.column("partition").to_pylist()) == {partition}
        offsets = batch.column("offset").to_pylist()
        assert offsets == sorted(offsets)
    return [batch for _, _, batch in chunks]


def _read(bootstrap: str, ranges: list[OffsetRange], reader: str = "consumer", **kw) -> pa.Table:
    batches = _batches(reader, bootstrap, ranges, **kw)
    return pa.Table.from_batches(batches) if batches else pa.table({})


@pytest.mark.parametrize("reader", READERS)
def test_reads_exactly_the_ranges_in_offset_order(broker, reader):
    table = _read(broker, [OffsetRange("plain", 0, 5, 17), OffsetRange("plain", 2, 0, 3), OffsetRange("plain", 1, 9, 9)],
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
    batches = _batches(reader, broker, [OffsetRange("plain", p, 0, 30) for p in range(3)], batch_rows=7)
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
    table = _read(broker, [OffsetRange("txn", 0, 0, end)], reader, timeout_s=30)
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
            tables = {r: _read(mc.bootstrap_servers, ranges, r).sort_by([("partition", "ascending"),
                                                                        ("offset", "ascending")]) for r in READERS}
            assert tables["fetch"].num_rows == sum(r.size for r in ranges)
            assert tables["fetch"].equals(tables["consumer"])


def test_fetch_reader_waits_out_a_broker_restart_and_times_out_on_a_dead_one():
    with MockCluster(1) as mc:
        mc.create_topic("t", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(20):
            p.produce("t", value=b"%d" % i, partition=0)
        p.flush(30)
        import threading

        mc.set_broker_down(1)
        threading.Timer(1.5, mc.set_broker_up, args=(1,)).start()
        table = _read(mc.bootstrap_servers, [OffsetRange("t", 0, 0, 20)], "fetch", timeout_s=30)
        assert table.column("value").to_pylist() == [b"%d" % i for i in range(20)]
        mc.set_broker_down(1)
        with pytest.raises(ReadTimeout, match=r"no progress for 2 s reading t-0@0\.\.20"):
            _read(mc.bootstrap_servers, [OffsetRange("t", 0, 0, 20)], "fetch", timeout_s=2)


def test_fetch_reader_leaves_tls_and_sasl_to_the_consumer():
    assert direct_fetch_refusal({"bootstrap.servers": "b:9092"}) is None
    assert direct_fetch_refusal({"security.protocol": "PLAINTEXT"}) is None
    assert direct_fetch_refusal({"security.protocol": "SASL_SSL"}) == "security.protocol=sasl_ssl"


def test_fetch_reader_asks_for_the_next_data_before_handing_on_the_last(monkeypatch):
    """One request in flight per connection: when a chunk is handed on, the fetch after it is already sent, so the
    broker prepares it while the chunk is packed and shipped. The rows are the same as without overlap."""
    from streaming.kafka import fetcher

    with MockCluster(1) as mc:
        mc.create_topic("t", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(6):  # six batches: flushed one by one
            p.produce("t", value=b"%d" % i, partition=0)
            p.flush(30)
        monkeypatch.setattr(fetcher, "_PARTITION_MAX_BYTES", 1)  # one batch per response
        calls = {"sent": 0, "received": 0}
        send, receive = fetcher._Connection.send_fetch, fetcher._Connection.receive_fetch

        def counting_send(self, *args, **kwargs):
            calls["sent"] += 1
            return send(self, *args, **kwargs)

        def counting_receive(self):
            calls["received"] += 1
            return receive(self)

        monkeypatch.setattr(fetcher._Connection, "send_fetch", counting_send)
        monkeypatch.setattr(fetcher._Connection, "receive_fetch", counting_receive)
        in_flight_at_chunk = []
        values = []
        for _, _, batch in fetch_ranges({"bootstrap.servers": mc.bootstrap_servers}, [OffsetRange("t", 0, 0, 6)],
                                        batch_rows=1):
            in_flight_at_chunk.append(calls["sent"] - calls["received"])
            values += batch.column("value").to_pylist()
        assert values == [b"%d" % i for i in range(6)]
        assert calls["received"] == 6, "one batch per response"
        assert in_flight_at_chunk == [1, 1, 1, 1, 1, 0], "the next fetch is out before a chunk is handed on"
