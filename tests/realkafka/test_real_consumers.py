"""The workload simulator's second mode, real confluent-kafka consumers, against a real Kafka broker."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient

from streaming.simulator.real_consumers import RealConsumerRunner, plan


def test_real_consumers_form_groups_on_a_real_kafka(kafka):
    topics, specs = plan(["steady", "kip848"], seed=1)
    groups = {s.group for s in specs}
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    runner = RealConsumerRunner(kafka.bootstrap, topics, specs).start()
    listed: set[str] = set()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (groups <= listed and all(runner.consumed.values())
                                                   and len(runner.consumed) == len(specs)):
            time.sleep(1)
            listed = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    finally:
        runner.stop()
    assert not runner.errors
    assert groups <= listed, f"groups the broker never listed: {sorted(groups - listed)}"
    assert len(runner.consumed) == len(specs) and all(runner.consumed.values()), runner.consumed
