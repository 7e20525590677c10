"""librdkafka's mock cluster driven through ctypes (``streaming/kafka/mock_cluster.py``): it listens on one local
port per broker, answers Kafka's metadata with the topics created through the C API, takes records on
``__consumer_offsets`` like any topic, and its brokers go down and come back on request."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

import streaming.kafka.mock_cluster as mock_cluster
from streaming.kafka.mock_cluster import MockCluster, MockClusterError


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    return [(host, int(port)) for host, _, port in (a.rpartition(":") for a in bootstrap.split(","))]


def _accepts(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=2):
            return True
    except ConnectionRefusedError:
        return False


def _metadata(mc: MockCluster):
    return AdminClient({"bootstrap.servers": mc.bootstrap_servers}).list_topics(timeout=10)


def test_each_broker_listens_on_a_local_port_of_its_own():
    with MockCluster(3) as mc:
        addresses = _addresses(mc.bootstrap_servers)
        assert len(addresses) == 3 == mc.brokers and len(set(addresses)) == 3
        assert {host for host, _ in addresses} == {"127.0.0.1"}, "reachable by other local processes, no further"
        assert all(_accepts(a) for a in addresses)
        assert sorted(_metadata(mc).brokers) == [1, 2, 3], "the mock numbers its brokers from 1: set_broker_down(1) is the first"


def test_created_topics_are_in_the_metadata_with_their_partitions():
    with MockCluster() as mc:
        mc.create_topic("orders", 6)
        mc.create_topics([("__consumer_offsets", 50), ("groupscope-heartbeat", 1)])
        topics = _metadata(mc).topics
        assert {name: len(topics[name].partitions) for name in ("orders", "__consumer_offsets",
                                                                 "groupscope-heartbeat")} == \
            {"orders": 6, "__consumer_offsets": 50, "groupscope-heartbeat": 1}


def test_creating_a_topic_again_is_no_error_and_keeps_it_as_it_was():
    with MockCluster() as mc:
        mc.create_topic("orders", 3)
        mc.create_topic("orders", 8)  # a second component ensuring the same topic
        assert len(_metadata(mc).topics["orders"].partitions) == 3


def test_records_produced_to_the_offsets_topic_are_read_back_in_order():
    """The mock does not write ``__consumer_offsets`` itself but keeps what is produced to it, as the simulator
    needs: offsets from 0, keys and values unchanged."""
    records = [(b"\x00\x01key-%d" % i, b"value-%d" % i) for i in range(5)]
    with MockCluster() as mc:
        mc.create_topic("__consumer_offsets", 2)
        producer = Producer({"bootstrap.servers": mc.bootstrap_servers})
        for key, value in records:
            producer.produce("__consumer_offsets", value, key, partition=1)
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": mc.bootstrap_servers, "group.id": "reader",
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("__consumer_offsets", 1, 0)])
            got = []
            while len(got) < len(records):
                message = consumer.poll(10)
                assert message is not None, f"only {len(got)} of {len(records)} records came back"
                assert message.error() is None, message.error()
                got.append((message.offset(), message.key(), message.value()))
        finally:
            consumer.close()
    assert got == [(offset, key, value) for offset, (key, value) in enumerate(records)]


def test_a_broker_set_down_refuses_connections_until_it_is_set_up():
    with MockCluster(2) as mc:
        first, second = _addresses(mc.bootstrap_servers)
        mc.set_broker_down(1)
        assert not _accepts(first) and _accepts(second), "only the broker named goes down"
        mc.set_broker_up(1)
        assert _accepts(first)


def test_a_closed_cluster_listens_no_more_and_closes_once():
    mc = MockCluster()
    (address,) = _addresses(mc.bootstrap_servers)
    with mc:
        assert _accepts(address)
    assert not _accepts(address)
    mc.close()  # again: nothing left to free, and no crash from freeing twice


def test_without_the_bundled_librdkafka_the_error_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(mock_cluster.glob, "glob", lambda pattern: [])
    with pytest.raises(MockClusterError, match="librdkafka bundled with confluent-kafka was not found"):
        mock_cluster._find_library()
