"""``groupscope_kafka_up`` and ``/ready`` follow a real heartbeat emitter against the mock cluster, through the
driver's metrics feed. The server's own readiness rules (batch and heartbeat age, several clusters) are
``test_metrics_server.py``."""

from __future__ import annotations

import time


from streaming.config import load_settings
from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.kafka.mock_cluster import MockCluster
from streaming.driver.metrics_feed import MetricsFeed
from streaming.driver.runner import JobStatus
from tests.sinks.scrape import monitor_samples


def _emitter_and_feed(mc: MockCluster) -> tuple[HeartbeatEmitter, MetricsFeed]:
    """A real heartbeat emitter against ``mc`` (with ``__consumer_offsets``) and the metrics feed that reads it."""
    mc.create_topic("__consumer_offsets", 2)
    settings = load_settings(None, {"kafka": {"bootstrap.servers": mc.bootstrap_servers},
                                    "metrics": {"port": 0, "host": "127.0.0.1"}})
    emitter = HeartbeatEmitter(settings.kafka, interval_s=1)
    emitter.access.timeout_s = 2.0
    return emitter, MetricsFeed(settings, JobStatus(), emitter=lambda: emitter)


def test_kafka_up_follows_the_heartbeat_emitter(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic("groupscope-heartbeat", 1)
        emitter, feed = _emitter_and_feed(mc)
        assert "groupscope_kafka_up" not in monitor_samples(feed.server), "unknown before the first attempt"
        assert emitter.tick()
        assert monitor_samples(feed.server)["groupscope_kafka_up"] == 1
        mc.set_broker_down(1)
        deadline = time.monotonic() + 30
        while emitter.tick() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert monitor_samples(feed.server)["groupscope_kafka_up"] == 0
        mc.set_broker_up(1)
        deadline = time.monotonic() + 30
        while not emitter.tick() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert monitor_samples(feed.server)["groupscope_kafka_up"] == 1
        emitter.stop()
    without = MetricsFeed(load_settings(None, {"metrics": {"port": 0}}), JobStatus())
    assert "groupscope_kafka_up" not in monitor_samples(without.server)


def test_a_heartbeat_topic_that_cannot_be_created_is_the_reason_ready_gives_and_kafka_is_up():
    """The mock cannot create topics: nothing is processed, and /ready says why rather than only "no batch"."""
    with MockCluster(1) as mc:
        emitter, feed = _emitter_and_feed(mc)
        assert feed.server.not_ready_reason() == "no batch processed yet"
        assert not emitter.tick()
        reason = feed.server.not_ready_reason()
        assert reason.startswith("no batch processed yet; heartbeat topic groupscope-heartbeat does not exist and "
                                 "cannot be created ("), reason
        assert monitor_samples(feed.server)["groupscope_kafka_up"] == 1
        emitter.stop()


