"""Reading offset ranges the fastest way the cluster allows (``streaming.kafka.range_read``): Fetch requests of
groupscope's own on a plaintext listener, librdkafka's consumer for TLS or SASL and for a broker whose Fetch versions
the reader does not know. Against librdkafka's mock cluster (a real Kafka-protocol broker over TCP)."""

from __future__ import annotations

import logging
import pickle

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from streaming.kafka import fetcher
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.range_read import RangeRead, read_range_chunks
from streaming.kafka.reader import OffsetRange


@pytest.fixture(scope="module")
def bootstrap():
    with MockCluster(1) as mc:
        mc.create_topic("t", 2)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(40):
            p.produce("t", value=b"%d" % i, partition=i % 2)
        p.flush(30)
        yield mc.bootstrap_servers


RANGES = [OffsetRange("t", 0, 2, 12), OffsetRange("t", 1, 0, 5)]


def _offsets(chunks) -> list[tuple[int, int]]:
    table = pa.Table.from_batches([rows for _, rows in chunks])
    return sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))


WANT = [(0, o) for o in range(2, 12)] + [(1, o) for o in range(5)]


def test_a_plaintext_listener_is_fetched_directly_a_partition_per_chunk(bootstrap):
    chunks = list(read_range_chunks({"bootstrap.servers": bootstrap}, RANGES, timeout_s=30))
    assert {key for key, _ in chunks} == {("t", 0), ("t", 1)}
    for (topic, partition), rows in chunks:
        assert set(rows.column("partition").to_pylist()) == {partition}
    assert _offsets(chunks) == WANT


def test_the_consumer_reads_the_same_records_in_batches_that_may_mix_partitions(bootstrap):
    chunks = list(read_range_chunks({"bootstrap.servers": bootstrap}, RANGES, timeout_s=30, reader="consumer"))
    assert {key for key, _ in chunks} == {None}
    assert _offsets(chunks) == WANT


def test_a_broker_without_a_fetch_version_the_reader_knows_is_read_with_the_consumer(bootstrap, monkeypatch, caplog):
    def unsupported(*args, **kwargs):
        raise fetcher.UnsupportedBroker("broker b:9092 speaks Fetch v0 to v3 only")
        yield  # a generator, as fetch_ranges is: the refusal comes with the first chunk

    monkeypatch.setattr(fetcher, "fetch_ranges", unsupported)
    caplog.set_level(logging.WARNING, logger="streaming.kafka.range_read")
    chunks = list(read_range_chunks({"bootstrap.servers": bootstrap}, RANGES, timeout_s=30))
    assert {key for key, _ in chunks} == {None} and _offsets(chunks) == WANT
    assert [r.getMessage() for r in caplog.records] == [
        "broker b:9092 speaks Fetch v0 to v3 only; reading with the consumer instead"]


def test_tls_or_sasl_is_left_to_the_consumer_without_trying_fetch(monkeypatch):
    """The direct reader speaks plaintext only: with SASL it must not even try (the listener would drop it)."""
    calls = []
    monkeypatch.setattr(fetcher, "fetch_ranges", lambda *a, **k: calls.append(a) or iter(()))
    import streaming.kafka.reader as reader

    monkeypatch.setattr(reader, "read_ranges", lambda kafka, ranges, **kw: iter([pa.record_batch({"x": [1]})]))
    chunks = list(read_range_chunks({"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL"}, RANGES,
                                    timeout_s=1))
    assert calls == [] and [key for key, _ in chunks] == [None]


def test_nothing_to_read_is_no_chunk(bootstrap):
    assert list(read_range_chunks({"bootstrap.servers": bootstrap}, [], timeout_s=30)) == []


def test_a_steps_range_read_goes_to_the_executors_and_reads_the_ranges(bootstrap):
    """A RangeRead is pickled with the step's function: it must survive that, and read the same rows."""
    read = pickle.loads(pickle.dumps(RangeRead({"bootstrap.servers": bootstrap}, timeout_s=30)))
    batches = read.rows(RANGES)
    assert _offsets([(None, b) for b in batches]) == WANT
    assert _offsets([(None, b) for b in read.rows(RANGES)]) == WANT, "the kept connections read again"
