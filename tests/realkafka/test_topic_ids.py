"""The heartbeat carries the watched topics' ids as the broker knows them (Kafka's ``kafka-topics`` is the
reference): what names a Kafka 4.1+ consumer-protocol group's assigned topics before it commits to them."""

from __future__ import annotations

import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.schema.heartbeat_format import decode_heartbeat
from tests.realkafka.tools import topic_id

# Eight topics: an id written in the wrong base64 alphabet differs in about one id of two, so all eight would match
# by chance once in some 250 runs.
TOPICS = 8


def test_the_heartbeat_announces_each_topic_id_as_kafka_describes_it(kafka):
    prefix, beats = f"ids-{kafka.version}-", f"ids-heartbeat-{kafka.version}"
    topics = [f"{prefix}{i}" for i in range(TOPICS)]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    emitter = HeartbeatEmitter({"bootstrap.servers": kafka.bootstrap}, topic=beats, include=f"^{prefix}",
                               interval_s=1)
    try:
        deadline = time.monotonic() + 60
        while not set(topics) <= set(emitter.topic_ids.known) and time.monotonic() < deadline:
            assert emitter.tick(), emitter.status.last_error
            time.sleep(0.2)
        emitter.tick()
    finally:
        emitter.stop()
    expected = {t: topic_id(kafka, t) for t in topics}
    assert emitter.topic_ids.known == expected
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": f"{beats}-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([beats])
    announced: dict[str, str] = {}
    deadline = time.monotonic() + 30
    while announced != expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            announced.update(decode_heartbeat(message.value()).topic_ids)
    consumer.close()
    assert announced == expected  # the offsets topic's own id is not announced: no group is assigned it
