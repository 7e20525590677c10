"""The heartbeat carries the watched topics' ids as the broker knows them (Kafka's ``kafka-topics`` is the
reference): what names a Kafka 4.1+ consumer-protocol group's assigned topics before it commits to them."""

from __future__ import annotations

import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.schema.heartbeat_format import decode_heartbeat
from tests.realkafka.tools import topic_id


def test_the_heartbeat_announces_each_topic_id_as_kafka_describes_it(kafka):
    topic, beats = f"ids-{kafka.version}", f"ids-heartbeat-{kafka.version}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    emitter = HeartbeatEmitter({"bootstrap.servers": kafka.bootstrap}, topic=beats, include=f"^{topic}$",
                               interval_s=1)
    try:
        deadline = time.monotonic() + 60
        while topic not in emitter.topic_ids.known and time.monotonic() < deadline:
            assert emitter.tick(), emitter.status.last_error
            time.sleep(0.2)
        emitter.tick()
    finally:
        emitter.stop()
    expected = topic_id(kafka, topic)
    assert emitter.topic_ids.known.get(topic) == expected
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"{beats}-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([beats])
    announced: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while topic not in announced and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            announced.update(decode_heartbeat(message.value()).topic_ids)
    consumer.close()
    assert announced == {topic: expected}
