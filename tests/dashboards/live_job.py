"""The live metrics source: the real ``groupscope run`` job, fed by the workload simulator through a real broker.

librdkafka's mock cluster (a Kafka-protocol broker over TCP on 127.0.0.1) holds ``__consumer_offsets`` and the
data topics; the simulator writes into it what Kafka's group coordinator writes for its scenarios, and produces the
data messages, so end offsets move. The job (heartbeat emitter, local Spark, Delta tables, metrics endpoint) tails
it exactly as it tails a real cluster, and Prometheus scrapes the job's own ``/metrics``.

Filling runs in two steps so counters are seen at zero before they move, as they would be on a long-running job:
the first seconds of simulated time create every group; the job catches up and Prometheus scrapes; then the rest
of the simulation runs at ``SPEED`` × real time while the job follows, bringing the storm, the rolling restart,
the stalled member, transactions and lag.
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

from streaming.kafka.mock_cluster import MockCluster
from streaming.driver.runner import GroupscopeJob
from streaming.simulator import Simulation, SimulationRunner
from streaming.simulator.kafka_sink import KafkaSink
from tests.dashboards.promtools import PrometheusProcess
from tests.spark.harness import HEARTBEAT, OFFSETS, job_settings

__all__ = ["LiveJobMetrics"]

SCENARIOS = ["steady", "lagging", "storm", "rolling-restart", "kip848", "transactional", "stalled", "stopped"]
OFFSETS_PARTITIONS = 6
SETUP_MS = 4_000  # every scenario's first generation/epoch is written by then
DURATION_MS = 120_000
SPEED = 5.0


class LiveJobMetrics:
    """The running job's metrics endpoint, fed by the simulator (see the module docstring)."""

    cluster = "live"
    two_topic_group, two_topics = "steady-range", ["steady-orders", "steady-payments"]

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="groupscope-live-")
        self.cluster_broker = MockCluster(1)
        self.cluster_broker.create_topic(OFFSETS, OFFSETS_PARTITIONS)
        self.cluster_broker.create_topic(HEARTBEAT, 1)
        bootstrap = self.cluster_broker.bootstrap_servers
        # The simulation starts at the wall clock the job's heartbeats carry (it then runs ahead at SPEED), so
        # record times and heartbeat times are one timeline: a storm is not ended by a heartbeat from "the future".
        self.sim = Simulation(SCENARIOS, seed=3, offsets_partitions=OFFSETS_PARTITIONS,
                              start_ms=int(time.time() * 1000))
        self.sink = KafkaSink(bootstrap, create_topic=self.cluster_broker.create_topic)
        # A 2 s heartbeat: "caught up" means everything up to one heartbeat ago is applied, and on two captures cores
        # a batch can take longer than a second while the simulator writes at 5x.
        settings = job_settings(bootstrap, Path(self._dir.name), cluster=self.cluster,
                                metrics={"partition_metrics": True}, heartbeat={"interval_seconds": 2.0})
        self.job = GroupscopeJob(settings, install_signal_handlers=False)
        self._thread: threading.Thread | None = None
        self.expected_alerts: dict[str, set[str]] = {}

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.job.metrics.port}"

    def start(self) -> LiveJobMetrics:
        SimulationRunner(self.sim, self.sink, speed=0, duration_ms=SETUP_MS).start().join(60)
        self.job.start()
        self._thread = threading.Thread(target=self.job.run, name="groupscope-supervisor", daemon=True)
        self._thread.start()
        self._wait_for_job(lambda v: len(v.groups) >= len(SCENARIOS), "every scenario's group")
        return self

    def fill(self, prometheus: PrometheusProcess) -> None:
        prometheus.wait_for_scrapes(2)
        SimulationRunner(self.sim, self.sink, speed=SPEED, duration_ms=DURATION_MS).start().join(
            DURATION_MS / 1000 / SPEED + 60)
        batches = self.job.status.batches
        self._wait_for_job(lambda v: self.job.status.batches >= batches + 3, "three batches after the simulation")
        prometheus.wait_for_scrapes(3)
        groups = self.job.metrics.state.view().groups
        storms = {g for g, r in groups.items() if r.storms}
        assert "storm" in storms, f"the storm scenario must be detected as a storm: {storms}"
        assert "rolling" not in storms, "a rolling restart is not a storm"
        assert groups["rolling"].rolling_restarts, "the rolling restart must be recognised as one"
        # The storm alert pages while a storm is active (the model's gauge), not for storms that ended.
        self.expected_alerts = {"KafkaConsumerGroupRebalanceStorm":
                                {g for g, r in groups.items() if r.storm_active}}

    def stop(self) -> None:
        try:
            self.job.request_stop()
            if self._thread is not None:
                self._thread.join(60)
            self.job.stop()
        finally:
            self.sink.close()
            self.cluster_broker.close()
            self._dir.cleanup()

    def _wait_for_job(self, done, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            view = self.job.metrics.state.view()
            if view.health is not None and view.health.caught_up and done(view):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the job did not show {what} within {timeout:.0f}s "
                                   f"(batches {self.job.status.batches}, groups {sorted(view.groups)}, "
                                   f"last error {self.job.status.last_error})")
            time.sleep(0.5)
