"""Readiness that tells the truth: ``/ready`` is 503 with the reason when no batch completed for too long or the
newest heartbeat is too old, even once caught up; ``groupscope_last_batch_age_seconds`` and ``groupscope_kafka_up``
say the same to Prometheus. The Kafka-up figure comes from a real heartbeat emitter against the mock cluster."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.config import load_settings
from streaming.kafka.heartbeat import HeartbeatEmitter
from streaming.kafka.mock_cluster import MockCluster
from streaming.driver.metrics_feed import MetricsFeed
from streaming.driver.runner import JobStatus
from streaming.sinks.prometheus import MetricsServer, MetricsState, MonitorHealth
from streaming.job.step import StepHealth

NOW = 1_795_311_000.0


def _health(*, batch_at: float, heartbeat_at: float, caught_up: bool = True) -> MonitorHealth:
    step = StepHealth(shard=0, records=10, decode_errors=0, unknown_records=0, heartbeats=1, last_offset=99,
                      offsets_high_watermark=100, offsets_last_stable=100, heartbeat_ms=int(heartbeat_at * 1000),
                      caught_up=caught_up, groups=1, step_seconds=0.01)
    return MonitorHealth().after_batch([step], batch_seconds=0.1, now=batch_at)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _get(server: MetricsServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(server: MetricsServer) -> dict[str, float]:
    text = generate_latest(server.registry).decode()
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name.startswith("groupscope_")}


def test_ready_goes_503_with_the_reason_when_batches_or_heartbeats_stop():
    state = MetricsState()
    clock = _Clock(NOW)
    with MetricsServer(state, cluster="c1", host="127.0.0.1", port=0, process_metrics=False, clock=clock,
                       max_batch_age_s=300, max_heartbeat_age_s=120) as server:
        assert _get(server, "/ready") == (503, "not ready: no batch processed yet\n")
        state.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 5))
        assert _get(server, "/ready") == (200, "ready\n")
        assert _samples(server)["groupscope_last_batch_age_seconds"] == 2

        clock.now = NOW + 130  # batches still complete (see below) but carry no newer heartbeat
        state.set_health(_health(batch_at=NOW + 129, heartbeat_at=NOW - 5))
        assert _get(server, "/ready") == (503, "not ready: newest heartbeat is 135 s old (limit 120 s)\n")

        clock.now = NOW + 500  # the query hangs: no batch since NOW + 129
        status, body = _get(server, "/ready")
        assert (status, body) == (503, "not ready: no batch completed for 371 s (limit 300 s)\n")
        assert _samples(server)["groupscope_last_batch_age_seconds"] == 371

        state.set_health(_health(batch_at=NOW + 499, heartbeat_at=NOW + 498))
        assert _get(server, "/ready") == (200, "ready\n")


def test_a_stalled_job_is_not_hidden_behind_catching_up():
    state = MetricsState()
    clock = _Clock(NOW + 1000)
    state.set_health(_health(batch_at=NOW, heartbeat_at=NOW, caught_up=False))
    server = MetricsServer(state, cluster="c1", process_metrics=False, clock=clock, max_batch_age_s=300,
                           max_heartbeat_age_s=120)
    assert server.not_ready_reason() == "no batch completed for 1000 s (limit 300 s)"
    clock.now = NOW + 10
    assert server.not_ready_reason().startswith("catching up on __consumer_offsets partitions [0]")


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
        assert "groupscope_kafka_up" not in _samples(feed.server), "unknown before the first attempt"
        assert emitter.tick()
        assert _samples(feed.server)["groupscope_kafka_up"] == 1
        mc.set_broker_down(1)
        deadline = time.monotonic() + 30
        while emitter.tick() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _samples(feed.server)["groupscope_kafka_up"] == 0
        mc.set_broker_up(1)
        deadline = time.monotonic() + 30
        while not emitter.tick() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _samples(feed.server)["groupscope_kafka_up"] == 1
        emitter.stop()
    without = MetricsFeed(load_settings(None, {"metrics": {"port": 0}}), JobStatus())
    assert "groupscope_kafka_up" not in _samples(without.server)


def test_a_heartbeat_topic_that_cannot_be_created_is_the_reason_ready_gives_and_kafka_is_up():
    """The mock cannot create topics: nothing is processed, and /ready says why rather than only "no batch"."""
    with MockCluster(1) as mc:
        emitter, feed = _emitter_and_feed(mc)
        assert feed.server.not_ready_reason() == "no batch processed yet"
        assert not emitter.tick()
        reason = feed.server.not_ready_reason()
        assert reason.startswith("no batch processed yet; heartbeat topic groupscope-heartbeat does not exist and "
                                 "cannot be created ("), reason
        assert _samples(feed.server)["groupscope_kafka_up"] == 1
        emitter.stop()


def test_several_clusters_one_endpoint_ready_per_cluster_and_for_all():
    east, west = MetricsState(), MetricsState()
    clock = _Clock(NOW)
    with MetricsServer(east, cluster="east", host="127.0.0.1", port=0, process_metrics=False, clock=clock,
                       max_batch_age_s=300, max_heartbeat_age_s=120, kafka_up=lambda: True) as server:
        server.add_cluster("west", west, kafka_up=lambda: False)
        east.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 5))
        west.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 200))
        assert _get(server, "/ready?cluster=east") == (200, "ready\n")
        assert _get(server, "/ready?cluster=west") == (503, "not ready: newest heartbeat is 200 s old (limit 120 s)\n")
        assert _get(server, "/ready") == (503, "not ready: cluster west: newest heartbeat is 200 s old (limit 120 s)\n")
        status, body = _get(server, "/ready?cluster=north")
        assert status == 404 and "east, west" in body
        west.set_health(_health(batch_at=NOW - 1, heartbeat_at=NOW - 1))
        assert _get(server, "/ready") == (200, "ready\n")
        # Both clusters' series in one exposition, told apart by the label.
        text = generate_latest(server.registry).decode()
        up = {s.labels["cluster"]: s.value for f in text_string_to_metric_families(text) for s in f.samples
              if s.name == "groupscope_kafka_up"}
        assert up == {"east": 1.0, "west": 0.0}
        with pytest.raises(ValueError):
            server.add_cluster("west", MetricsState())
