"""The running ``groupscope run`` job serves the API: local Spark tailing librdkafka's mock cluster over TCP, fed by the
workload simulator, with ``api.enabled`` on an ephemeral port (and per-partition metrics off: the API alone must be
enough to bring partition rows to the driver).

The oracle is independent of the job: ``__consumer_offsets`` read back from the broker with a read_committed consumer
and replayed through the group model; every committed offset the API shows must be the one the log holds.
"""

from __future__ import annotations

import threading
import time
import urllib.request

import pytest

from streaming.driver.runner import GroupscopeJob
from streaming.kafka.mock_cluster import MockCluster
from streaming.simulator import Simulation, SimulationRunner
from streaming.simulator.kafka_sink import KafkaSink
from tests.api.http import get_json
from tests.spark.harness import HEARTBEAT, OFFSETS, job_settings, oracle_model, read_committed

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCENARIOS = ["steady", "lagging", "kip848"]
OFFSETS_PARTITIONS = 4
CLUSTER = "e2e"


def test_the_running_job_serves_burrow_and_groupscope_paths(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, OFFSETS_PARTITIONS)
        mc.create_topic(HEARTBEAT, 1)
        bootstrap = mc.bootstrap_servers
        sim = Simulation(SCENARIOS, seed=5, offsets_partitions=OFFSETS_PARTITIONS, start_ms=int(time.time() * 1000))
        sink = KafkaSink(bootstrap, create_topic=mc.create_topic)
        try:
            SimulationRunner(sim, sink, speed=0, duration_ms=30_000).start().join(120)
        finally:
            sink.close()
        settings = job_settings(bootstrap, tmp_path, cluster=CLUSTER, delta={"enabled": False},
                                api={"enabled": True, "host": "127.0.0.1", "port": 0})
        assert not settings.metrics.partition_metrics
        job = GroupscopeJob(settings, install_signal_handlers=False)
        job.start()
        runner = threading.Thread(target=job.run, daemon=True)
        runner.start()
        try:
            port = job.metrics.api.port
            oracle = {g.group_id: g for s in oracle_model(read_committed(bootstrap, OFFSETS, OFFSETS_PARTITIONS))
                      .snapshot() for g in s.groups}
            assert len(oracle) >= len(SCENARIOS)
            deadline = time.monotonic() + 240
            while True:
                _, cluster = get_json(port, f"/v1/clusters/{CLUSTER}")
                _, consumers = get_json(port, f"/v3/kafka/{CLUSTER}/consumer")
                if cluster.get("caught_up") and set(consumers["consumers"]) >= set(oracle):
                    break
                assert time.monotonic() < deadline, f"no caught-up API: {cluster}, {consumers}"
                time.sleep(1)
            assert get_json(port, "/v3/kafka")[1]["clusters"] == [CLUSTER]
            for gid, snap in oracle.items():
                status, detail = get_json(port, f"/v3/kafka/{CLUSTER}/consumer/{gid}")
                assert status == 200, gid
                shown = {(t, n): e["offsets"][-1]["offset"] for t, entries in detail["topics"].items()
                         for n, e in enumerate(entries) if e["offsets"]}
                assert shown == {(p.topic, p.partition): p.committed for p in snap.partitions}, gid
                status, lag = get_json(port, f"/v3/kafka/{CLUSTER}/consumer/{gid}/lag")
                assert status == 200 and lag["status"]["partition_count"] == len(snap.partitions), gid
                assert lag["status"]["complete"] == 1.0
                status, group = get_json(port, f"/v1/clusters/{CLUSTER}/groups/{gid}")
                assert status == 200 and group["type"] == snap.group_type.name, gid
            assert get_json(port, f"/v3/kafka/{CLUSTER}/consumer/nope/status")[0] == 404
        finally:
            job.request_stop()
            runner.join(60)
            job.stop()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v3/kafka", timeout=5)
