"""The direct Fetch reader (``streaming.kafka.fetcher``) against a real Kafka-protocol broker (librdkafka's mock
cluster over TCP): what only it does, beside the consumer it stands in for. That both read the same rows is checked
in ``tests/streaming/test_reader.py``."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Producer

from streaming.kafka import fetcher
from streaming.kafka.fetcher import direct_fetch_refusal, fetch_ranges
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange, ReadTimeout
from tests.kafka.range_readers import read_table


def test_fetch_reader_waits_out_a_broker_restart_and_times_out_on_a_dead_one():
    with MockCluster(1) as mc:
        mc.create_topic("t", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(20):
            p.produce("t", value=b"%d" % i, partition=0)
        p.flush(30)
        mc.set_broker_down(1)
        threading.Timer(1.5, mc.set_broker_up, args=(1,)).start()
        table = read_table(mc.bootstrap_servers, [OffsetRange("t", 0, 0, 20)], "fetch", timeout_s=30)
        assert table.column("value").to_pylist() == [b"%d" % i for i in range(20)]
        mc.set_broker_down(1)
        with pytest.raises(ReadTimeout, match=r"no progress for 2 s reading t-0@0\.\.20"):
            read_table(mc.bootstrap_servers, [OffsetRange("t", 0, 0, 20)], "fetch", timeout_s=2)


def test_fetch_reader_leaves_tls_and_sasl_to_the_consumer():
    assert direct_fetch_refusal({"bootstrap.servers": "b:9092"}) is None
    assert direct_fetch_refusal({"security.protocol": "PLAINTEXT"}) is None
    assert direct_fetch_refusal({"security.protocol": "SASL_SSL"}) == "security.protocol=sasl_ssl"


def test_fetch_reader_asks_for_the_next_data_before_handing_on_the_last(monkeypatch):
    """One request in flight per connection: when a chunk is handed on, the fetch after it is already sent, so the
    broker prepares it while the chunk is packed and shipped. The rows are the same as without overlap."""
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

