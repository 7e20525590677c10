"""What the live dashboard test scrapes: a metrics endpoint that, once filled, has data for every panel.

:class:`MetricsSource` is the contract the test relies on; :class:`ReplayedMetrics` fulfils it without Spark or
Kafka, from the real Kafka 4.0 captures replayed through the model (``tests.sinks.replay_rows``) plus synthetic
monitor health, served by the real :class:`MetricsServer`. When the ``groupscope run`` job and the simulator are
ready, a source that starts them (the simulator's storm and rolling-restart scenarios supply the events) replaces
this one in the test's ``metrics_source`` fixture and nothing else changes: ``tests.dashboards.live_job`` is that
source, and the live test runs against both.
"""

from __future__ import annotations

import time
from typing import Protocol

from streaming.model.verdicts import RebalanceConfig
from streaming.model.shard import ModelConfig
from streaming.sinks.prometheus import MetricsServer, MetricsState, MonitorHealth, OffsetsPartitionHealth
from tests.dashboards.promtools import PrometheusProcess
from tests.sinks.replay_rows import RowsBatch, ScenarioReplay

__all__ = ["MetricsSource", "ReplayedMetrics"]


class MetricsSource(Protocol):
    """A groupscope metrics endpoint for a real Prometheus to scrape."""

    target: str  # host:port of /metrics
    cluster: str
    # Alerts that must be firing once filled, as {alertname: {group, ...}} (empty: not checked).
    expected_alerts: dict[str, set[str]]
    # A group consuming exactly these two topics, for the topic variable.
    two_topic_group: str
    two_topics: list[str]

    def fill(self, prometheus: PrometheusProcess) -> None:
        """Makes the endpoint produce everything the dashboards show (events included: storms, rolling restarts,
        rebalances that move partitions), waiting for Prometheus to scrape each step; returns when it has."""

    def stop(self) -> None: ...


# Which snapshot of each capture each phase replays up to. Phase 1 establishes every series (counters at their
# first value); phase 2 brings the events: storms (a_classic, with a storm-prone model config), a rolling restart
# (c_consumer_protocol, members leaving one by one), rebalances moving partitions, retention overtaking the
# transactional groups (d_transactions: data loss). Phase 1 of d_transactions has a transaction open on
# __consumer_offsets (records held back from read_committed readers).
PHASES = {
    "a_classic": ("gen1-one-member-each", "final-active", False),
    "c_consumer_protocol": ("gen3-c3-joined-gamma-created", "final-stopped", False),
    "d_transactions": ("sd-txn-consumer-txn3-open", "final-active", True),
}
# Storm-prone: any member leaving within 10 minutes of joining flaps, and a storm stays active for an hour, so the
# capture's few quick generations make a storm that is still paging when Prometheus evaluates the rules.
STORM_PRONE = ModelConfig(rebalance=RebalanceConfig(storm_rebalances=3, storm_window_ms=600_000,
                                                    flap_lifetime_ms=600_000, storm_quiet_ms=3_600_000))


class ReplayedMetrics:
    """The real sink and endpoint, fed with the conformance captures replayed through the model."""

    cluster = "conformance"
    two_topic_group, two_topics = "sa-range", ["sa-orders", "sa-payments"]

    def __init__(self) -> None:
        self.state = MetricsState()
        # The captures were taken from a reachable Kafka: the endpoint says so as the job's heartbeat emitter would
        # (up, and reached at its last attempt: silent for 0 s).
        self.server = MetricsServer(self.state, cluster=self.cluster, host="127.0.0.1", port=0,
                                    partition_metrics=True, kafka_up=lambda: True, kafka_silence=lambda: 0.0)
        self.replays = {sc: ScenarioReplay(sc, STORM_PRONE if sc == "a_classic" else ModelConfig())
                        for sc in PHASES}
        self.health = MonitorHealth()
        self.expected_alerts: dict[str, set[str]] = {}
        self._batch = 0

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def start(self) -> ReplayedMetrics:
        self.server.start()
        # Phase 1 before Prometheus's first scrape: the monitor is caught up from the start, as the storm rule's
        # "caught up for the whole window" condition expects.
        self._phase(0, decode_errors=0)
        return self

    def fill(self, prometheus: PrometheusProcess) -> None:
        prometheus.wait_for_scrapes(2)
        batches = self._phase(1, decode_errors=3)
        prometheus.wait_for_scrapes(3)
        storms = {r["group_id"] for b in batches for r in b.groups if r.get("storm_active")}
        assert storms, "phase 2 must contain storms"
        # exactly the groups whose latest storm event in the phase began a storm (none ended it since)
        latest = {e["group_id"]: e["kind"] for b in batches for e in b.events
                  if e["kind"] in ("RebalanceStorm", "StormEnded")}
        assert storms == {g for g, kind in latest.items() if kind == "RebalanceStorm"}, (storms, latest)
        self.expected_alerts = {"KafkaConsumerGroupRebalanceStorm": storms}

    def stop(self) -> None:
        self.server.stop()

    def _phase(self, index: int, *, decode_errors: int) -> list[RowsBatch]:
        batches = []
        offsets: dict[int, OffsetsPartitionHealth] = {p.partition: p for p in self.health.offsets_partitions}
        for scenario, replay in self.replays.items():
            label, low_at_end = PHASES[scenario][index], PHASES[scenario][2] and index == 1
            replay.advance(label)
            b = replay.batch(low_at_end=low_at_end)
            batches.append(b)
            offsets.update({p.partition: p for p in b.offsets})
        self._batch += 1
        now = time.time()
        records = sum(len(b.events) for b in batches)
        self.health = MonitorHealth(
            records_decoded=self.health.records_decoded + records * 10,
            decode_errors=self.health.decode_errors + decode_errors,
            unknown_records=self.health.unknown_records + index,
            batches=self._batch, query_restarts=index, last_batch_seconds=0.35 + 0.1 * index,
            input_records_per_second=1000.0 + index, last_batch_time=now, heartbeat_time=now - 2,
            offsets_partitions=tuple(offsets[p] for p in sorted(offsets)))
        for i, b in enumerate(batches):
            last = i == len(batches) - 1
            self.state.apply_batch(b.groups, b.partitions, b.events, self.health if last else None,
                                   batch_id=self._batch * 10 + i)
        return batches
