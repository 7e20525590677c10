"""Two Kafka clusters watched by one ``groupscope run`` job: two librdkafka mock clusters over TCP, each fed by the
workload simulator with groups of its own, one local Spark application running one query per cluster.

Checked: each cluster's groups appear under its own ``cluster`` label in ``/metrics``, in the API (Burrow's cluster
list and consumer lists) and in its own Delta tables; then one broker goes down and the other cluster's query keeps
running and ready while ``/ready`` names the one that is not. A second test starts the job while one cluster is
down: the other starts anyway, and the missing one joins once its broker is up.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest

from streaming.driver.runner import GroupscopeJob
from streaming.kafka.mock_cluster import MockCluster
from streaming.simulator import Simulation, SimulationRunner
from streaming.simulator.kafka_sink import KafkaSink
from streaming.sinks.delta import DeltaSink
from tests.spark.harness import HEARTBEAT, OFFSETS, job_settings

pytestmark = [pytest.mark.spark, pytest.mark.slow]

OFFSETS_PARTITIONS = 4


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def feed(mc: MockCluster, scenarios: list[str], seed: int) -> None:
    """Writes 20 simulated seconds of the scenarios' records to ``mc``."""
    sim = Simulation(scenarios, seed=seed, offsets_partitions=OFFSETS_PARTITIONS, start_ms=int(time.time() * 1000))
    sink = KafkaSink(mc.bootstrap_servers, create_topic=mc.create_topic)
    try:
        SimulationRunner(sim, sink, speed=0, duration_ms=20_000).start().join(120)
    finally:
        sink.close()


def new_cluster() -> MockCluster:
    mc = MockCluster(1)
    mc.create_topic(OFFSETS, OFFSETS_PARTITIONS)
    mc.create_topic(HEARTBEAT, 1)
    return mc


def stop_all(job: GroupscopeJob | None, runner: threading.Thread | None, *clusters: MockCluster) -> None:
    if job is not None:
        job.request_stop()
        if runner is not None:
            runner.join(60)
        job.stop()
    for mc in clusters:
        mc.close()


def groups_by_cluster(metrics_text: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in re.finditer(r'^kafka_consumergroup_members\{cluster="([^"]+)",group="([^"]+)"\}', metrics_text, re.M):
        out.setdefault(m.group(1), set()).add(m.group(2))
    return out


def two_cluster_settings(tmp_path, east: MockCluster, west: MockCluster, **over):
    return job_settings(east.bootstrap_servers, tmp_path, cluster="ignored", api={"enabled": True, "host": "127.0.0.1",
                                                                                  "port": 0},
                        metrics={"ready_max_heartbeat_age_seconds": 8.0},
                        clusters={"east": {"kafka": {"bootstrap.servers": east.bootstrap_servers}},
                                  "west": {"kafka": {"bootstrap.servers": west.bootstrap_servers},
                                           "model": {"storm_rebalances": 4}}}, **over)


def test_two_clusters_in_one_job_and_one_going_down(tmp_path):
    east, west = new_cluster(), new_cluster()
    job = runner = None
    try:
        feed(east, ["steady", "lagging"], seed=3)
        feed(west, ["kip848", "storm"], seed=4)
        settings = two_cluster_settings(tmp_path, east, west)
        job = GroupscopeJob(settings, install_signal_handlers=False)
        assert [c.settings.model.storm_rebalances for c in job.clusters] == [3, 4], "west's own threshold"
        job.start()
        runner = threading.Thread(target=job.run, daemon=True)
        runner.start()
        port, api = job.metrics.port, job.metrics.api.port
        wait_for(lambda: get(port, "/ready")[0] == 200, 240, "both clusters ready")

        by_cluster = groups_by_cluster(get(port, "/metrics")[1])
        assert set(by_cluster) == {"east", "west"}
        assert by_cluster["east"] and by_cluster["west"]
        assert not by_cluster["east"] & by_cluster["west"], "each group under its own cluster only"

        assert json.loads(get(api, "/v3/kafka")[1])["clusters"] == ["east", "west"]
        for name in ("east", "west"):
            status, body = get(api, f"/v3/kafka/{name}/consumer")
            assert status == 200
            assert set(json.loads(body)["consumers"]) == by_cluster[name], name
            # Each cluster's own Delta tables, under delta.path/<cluster>, hold its groups and no other's.
            tables = DeltaSink(str(tmp_path / "delta" / name))
            wait_for(lambda: set(tables.read("groups").column("group_id").to_pylist()) == by_cluster[name], 60,
                     f"{name}'s groups table")
        assert (tmp_path / "checkpoint" / "east" / "offsets").is_dir()
        assert (tmp_path / "checkpoint" / "west" / "offsets").is_dir()

        # West's broker goes away: east keeps running and ready; /ready names west.
        west.set_broker_down(1)
        wait_for(lambda: get(port, "/ready?cluster=west")[0] == 503, 60, "west to be reported not ready")
        batches = job.clusters[0].status.batches
        time.sleep(5)
        assert job.clusters[0].status.batches > batches, "east's query goes on while west is down"
        assert get(port, "/ready?cluster=east")[0] == 200
        status, body = get(port, "/ready")
        assert status == 503 and "cluster west:" in body and "cluster east" not in body, body
        assert job.clusters[0].query.isActive
        assert get(port, "/ready?cluster=nowhere")[0] == 404

        west.set_broker_up(1)
        wait_for(lambda: get(port, "/ready")[0] == 200, 120, "west ready again")
    finally:
        stop_all(job, runner, east, west)


def test_a_cluster_down_at_start_does_not_keep_the_other_from_running(tmp_path):
    east, west = new_cluster(), new_cluster()
    job = runner = None
    try:
        feed(east, ["steady"], seed=5)
        feed(west, ["lagging"], seed=6)
        west.set_broker_down(1)
        job = GroupscopeJob(two_cluster_settings(tmp_path, east, west), install_signal_handlers=False)
        job.start()
        runner = threading.Thread(target=job.run, daemon=True)
        runner.start()
        port = job.metrics.port
        wait_for(lambda: get(port, "/ready?cluster=east")[0] == 200, 240, "east ready while west is down")
        assert job.clusters[1].query is None and "cannot reach Kafka" in (job.clusters[1].status.last_error or "")
        west.set_broker_up(1)
        wait_for(lambda: get(port, "/ready")[0] == 200, 240, "west to start once its broker is up")
        assert set(groups_by_cluster(get(port, "/metrics")[1])) == {"east", "west"}
    finally:
        stop_all(job, runner, east, west)
