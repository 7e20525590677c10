"""The direct Fetch reader (``streaming.kafka.fetcher``) against a real Kafka-protocol broker (librdkafka's mock
cluster over TCP): what only it does, beside the consumer it stands in for. That both read the same rows is checked
in ``tests/kafka/test_reader.py``."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka import Producer

from protocol.fetch import FetchPartition
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



# ---- without a broker --------------------------------------------------------------------------------------------

def test_ranges_with_nothing_to_read_contact_no_broker():
    started = time.monotonic()
    assert list(fetch_ranges({"bootstrap.servers": "127.0.0.1:9"}, [OffsetRange("t", 0, 5, 5)], timeout_s=30)) == []
    assert list(fetch_ranges({"bootstrap.servers": "127.0.0.1:9"}, [], timeout_s=30)) == []
    assert time.monotonic() - started < 1


class _Reader:
    """What the error handling updates of the leader bookkeeping."""

    stale = False
    last_problem: str | None = None


def _answer(error_code: int, log_start: int = 0) -> FetchPartition:
    return FetchPartition("t", 0, error_code, high_watermark=100, last_stable_offset=100, log_start_offset=log_start,
                          aborted=(), records=(0, 0))


def test_records_deleted_before_they_were_read_are_skipped_to_the_log_start_with_a_warning(caplog):
    """OFFSET_OUT_OF_RANGE (Kafka error 1) with the log now starting past the range's next offset: retention took
    them; reading goes on from the first record that exists, as a consumer with auto.offset.reset=earliest."""
    caplog.set_level(logging.WARNING, logger="streaming.kafka.fetcher")
    r, reader = fetcher._Range("t", 0, 10, 90, 1 << 20), _Reader()
    fetcher._on_error(r, _answer(1, log_start=40), reader)
    assert r.next == 40 and not reader.stale and reader.last_problem is None
    assert [rec.getMessage() for rec in caplog.records] == [
        "t-0: offsets 10..39 no longer exist on the broker (log starts at 40); reading on from there"]


@pytest.mark.parametrize("code, relook", [
    (6, True),  # NOT_LEADER_OR_FOLLOWER: the partition moved
    (3, True),  # UNKNOWN_TOPIC_OR_PARTITION
    (74, True),  # FENCED_LEADER_EPOCH
    (1, False),  # OFFSET_OUT_OF_RANGE inside the log: not a leadership question
    (29, False),  # TOPIC_AUTHORIZATION_FAILED: asking another broker changes nothing
])
def test_a_partition_error_is_remembered_and_a_leadership_error_makes_the_leaders_be_looked_up_again(code, relook):
    r, reader = fetcher._Range("t", 0, 10, 90, 1 << 20), _Reader()
    fetcher._on_error(r, _answer(code, log_start=0), reader)
    assert r.next == 10
    assert reader.last_problem == f"t-0: Kafka error code {code}" and reader.stale is relook


def test_a_timeout_names_every_unfinished_range_and_the_last_problem():
    reader = _Reader()
    reader.last_problem = "broker b:9092: ConnectionResetError: reset"
    todo = {("t", 0): fetcher._Range("t", 0, 10, 90, 1), ("u", 2): fetcher._Range("u", 2, 0, 5, 1)}
    assert str(fetcher._timeout(todo, 30, reader)) == (
        "no progress for 30 s reading t-0@10..90, u-2@0..5 (last problem: broker b:9092: ConnectionResetError: reset)")


def test_the_connections_of_one_configuration_are_shared_by_the_calls_of_a_process():
    kafka = {"bootstrap.servers": "127.0.0.1:9", "client.id": "shared-test"}
    first = fetcher.shared_leaders(kafka, 30.0)
    try:
        assert fetcher.shared_leaders(dict(reversed(list(kafka.items()))), 30.0) is first, "order does not matter"
        other = fetcher.shared_leaders(kafka, 60.0)
        assert other is not first
    finally:
        for key in [k for k, v in fetcher._SHARED.items() if v in (first, other)]:
            fetcher._SHARED.pop(key).close()
