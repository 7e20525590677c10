"""The workload simulator's second mode, real confluent-kafka consumers, against a real Kafka broker."""

from __future__ import annotations

import time

from streaming.simulator.real_consumers import plan


def test_real_consumers_form_groups_on_a_real_kafka(kafka):
    from confluent_kafka.admin import AdminClient

    from streaming.simulator.real_consumers import RealConsumerRunner

    topics, specs = plan(["steady", "kip848"], seed=1)
    runner = RealConsumerRunner(kafka.bootstrap, topics, specs).start()
    try:
        time.sleep(30)
    finally:
        runner.stop()
    assert not runner.errors
    groups = {s.group for s in specs}
    listed = AdminClient({"bootstrap.servers": kafka.bootstrap}).list_consumer_groups().result(30)
    assert groups <= {g.group_id for g in listed.valid}
    assert sum(runner.consumed.values()) > 0
