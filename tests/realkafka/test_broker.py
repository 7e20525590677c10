"""The real broker itself: it starts, answers, stops, restarts on its log directory, and fails clearly."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer

from tests.realkafka.broker import BrokerFailed, KafkaBroker
from tests.realkafka.install import KafkaUnavailable, kafka_install
from tests.realkafka.tools import consumer_groups, parse_tables


def test_the_broker_is_the_version_asked_for_and_writes_consumer_offsets(kafka):
    group = f"smoke-{kafka.version}"
    topic = f"smoke-{kafka.version}"
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(10):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == 10
    rows = parse_tables(consumer_groups(kafka, "--describe", "--group", group, "--offsets"))
    assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows] == [(topic, "0", "10", "0")]
    assert any(p.name.startswith("__consumer_offsets-") for p in kafka.data_dir.iterdir())
    assert f"Kafka version: {kafka.version}" in kafka.log_path.read_text()


def test_a_broker_that_cannot_start_fails_with_its_log(newest_kafka_install, tmp_path):
    broker = KafkaBroker(newest_kafka_install, tmp_path, settings={"num.io.threads": "not-a-number"})
    with pytest.raises(BrokerFailed) as failed:
        broker.start(timeout=60)
    assert "exited during start-up" in str(failed.value) or "kafka-storage format failed" in str(failed.value)
    assert "num.io.threads" in str(failed.value)
    assert not broker.running


@pytest.mark.parametrize("missing, package", [("java", "openjdk-17-jre-headless"), ("mvn", "maven")])
def test_a_missing_java_or_maven_is_one_line_naming_the_package(monkeypatch, tmp_path, missing, package):
    import shutil

    which = shutil.which
    monkeypatch.setenv("REALKAFKA_CACHE", str(tmp_path))  # an empty cache: the jars must be fetched
    monkeypatch.setattr("tests.realkafka.install.shutil.which", lambda name: None if name == missing else which(name))
    with pytest.raises(KafkaUnavailable) as failed:
        kafka_install("4.0.0")
    assert "\n" not in str(failed.value)
    assert f"apt-get install {package}" in str(failed.value)


def test_a_restarted_broker_keeps_its_log(own_kafka):
    producer = Producer({"bootstrap.servers": own_kafka.bootstrap})
    producer.produce("kept", b"before")
    assert producer.flush(30) == 0
    own_kafka.restart()
    consumer = Consumer({"bootstrap.servers": own_kafka.bootstrap, "group.id": "kept",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["kept"])
    deadline = time.monotonic() + 60
    values = []
    while not values and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            values.append(message.value())
    consumer.close()
    assert values == [b"before"]
