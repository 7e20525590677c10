"""groupscope's Burrow-shaped answers beside Burrow's own, for the same groups on the same broker.

Debian's ``burrow`` package (Burrow 1.2.1) and its ``zookeeper`` run here: ZooKeeper on loopback, librdkafka's mock
cluster as the broker, the workload simulator writing ``__consumer_offsets`` and the data topics. Burrow consumes
``__consumer_offsets`` itself; groupscope's side is the same log read back with a read_committed consumer, replayed
through the group model with end offsets listed from the broker, and served by the real ``ApiServer``. Both are asked
over HTTP once the workload has stopped and Burrow has refreshed its end offsets.

Held equal: the envelopes' and objects' field names (Burrow 1.2.1 predates ``observedAt``), every committed offset,
every current lag, total lag, the end offsets of every topic, the groups listed. Statuses are printed side by side,
not compared: they are decided by different rules on purpose (docs/http-api.md#statuses). Skipped, saying why, where
the packages are not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from streaming.api import ApiServer, ClusterSource
from streaming.kafka.mock_cluster import MockCluster
from streaming.model.lag import EndOffsetSample
from streaming.schema import tables
from streaming.simulator import Simulation, SimulationRunner
from streaming.simulator.kafka_sink import KafkaSink
from streaming.sinks.prometheus import MetricsState, MonitorHealth, OffsetsPartitionHealth
from tests.api.http import get_json
from tests.spark.harness import OFFSETS, oracle_model, read_committed

BURROW = shutil.which("Burrow") or shutil.which("burrow")
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
JAVA = shutil.which("java")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BURROW is None, reason="Burrow is not installed (Debian: apt-get install burrow zookeeper)"),
    pytest.mark.skipif(not ZOOKEEPER_JAR.exists() or JAVA is None,
                       reason="Burrow needs ZooKeeper: Debian's zookeeper package and a Java runtime"),
]

CLUSTER = "local"
SCENARIOS = ["steady", "lagging", "stopped"]
OFFSETS_PARTITIONS = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _four_letters(port: int, command: bytes) -> bytes:
    """ZooKeeper's admin words: ``srvr`` answers with the mode only once the server accepts sessions."""
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(command)
        return s.makefile("rb").read()


def _wait(what: str, check, timeout_s: float = 90.0):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(burrow port, groupscope port, data topics) with the workload written and Burrow settled."""
    root = tmp_path_factory.mktemp("burrow")
    zk_port, burrow_port = _free_port(), _free_port()
    (root / "zk").mkdir()
    (root / "zoo.cfg").write_text(f"tickTime=2000\ndataDir={root / 'zk'}\nclientPort={zk_port}\n"
                                  "admin.enableServer=false\n")
    procs: list[subprocess.Popen] = []
    with MockCluster(1) as mc:
        try:
            procs.append(subprocess.Popen([JAVA, "-cp", str(ZOOKEEPER_JAR),
                                           "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(root / "zoo.cfg")],
                                          stdout=open(root / "zk.log", "w"), stderr=subprocess.STDOUT))
            _wait("ZooKeeper to serve", lambda: b"Mode: standalone" in _four_letters(zk_port, b"srvr"))
            mc.create_topic(OFFSETS, OFFSETS_PARTITIONS)
            bootstrap = mc.bootstrap_servers
            sim = Simulation(SCENARIOS, seed=3, offsets_partitions=OFFSETS_PARTITIONS,
                             start_ms=int(time.time() * 1000))
            sink = KafkaSink(bootstrap, create_topic=mc.create_topic)
            SimulationRunner(sim, sink, speed=0, duration_ms=5_000).start().join(60)
            (root / "burrow.toml").write_text(_burrow_config(root, bootstrap, zk_port, burrow_port))
            procs.append(subprocess.Popen([BURROW, "--config-dir", str(root)], stdout=open(root / "burrow.log", "w"),
                                          stderr=subprocess.STDOUT))
            _wait("Burrow's HTTP server", lambda: get_json(burrow_port, "/v3/kafka")[0] == 200)
            time.sleep(3)  # Burrow lists the topics' end offsets before it can store commits against them
            # Commits Burrow sees live, then a quiet end: both sides are compared on a log that no longer moves.
            SimulationRunner(sim, sink, speed=4, duration_ms=60_000).start().join(60)
            sink.close()
            topics = sorted(sim.topics)
            ends = _end_offsets(bootstrap, {t: len(sim.topics[t].end_offsets(sim.now_ms)) for t in topics})
            _wait("Burrow's end offsets to reach the log end", lambda: all(
                get_json(burrow_port, f"/v3/kafka/{CLUSTER}/topic/{t}")[1].get("offsets")
                == [ends[(t, p)] for p in range(len(sim.topics[t].end_offsets(sim.now_ms)))] for t in topics))
            state = _groupscope_state(bootstrap, ends, sim.now_ms)
            with ApiServer({CLUSTER: ClusterSource.of_state(CLUSTER, state)}, host="127.0.0.1", port=0) as api:
                yield burrow_port, api.port, topics
        finally:
            for p in reversed(procs):
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()


def _burrow_config(root: Path, bootstrap: str, zk_port: int, http_port: int) -> str:
    return f"""
[general]
pidfile="{root / 'burrow.pid'}"
[logging]
level="info"
[zookeeper]
servers=["127.0.0.1:{zk_port}"]
timeout=6
root-path="/burrow"
[client-profile.p]
client-id="burrow-compare"
kafka-version="2.0.0"
[cluster.{CLUSTER}]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="p"
topic-refresh=2
offset-refresh=1
[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=["{bootstrap}"]
client-profile="p"
start-latest=false
[httpserver.default]
address="127.0.0.1:{http_port}"
[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1
[evaluator.default]
class-name="caching"
expire-cache=1
"""


def _end_offsets(bootstrap: str, partitions: dict[str, int]) -> dict[tuple[str, int], int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offsets", "log_level": 3})
    try:
        return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=10, cached=False)[1]
                for t, n in partitions.items() for p in range(n)}
    finally:
        c.close()


def _groupscope_state(bootstrap: str, ends: dict[tuple[str, int], int], now: int) -> MetricsState:
    """``now``: the simulation's clock, which the commits' timestamps follow (it runs ahead of the wall clock)."""
    model = oracle_model(read_committed(bootstrap, OFFSETS, OFFSETS_PARTITIONS))
    model.apply_heartbeat(now, {tp: EndOffsetSample(hw) for tp, hw in ends.items()})
    shards = model.snapshot(now)
    state = MetricsState()
    state.apply_batch([tables.group_row(g, shard=s.partition, now_ms=now) for s in shards for g in s.groups],
                      [r for s in shards for g in s.groups for r in tables.partition_rows(g, shard=s.partition,
                                                                                        now_ms=now)],
                      (), MonitorHealth(offsets_partitions=(OffsetsPartitionHealth(0, caught_up=True),)))
    return state


def _keys(obj) -> set[str]:
    return set(obj) if isinstance(obj, dict) else set()


def test_groups_and_envelopes_match(both):
    burrow, ours, _ = both
    b, g = get_json(burrow, f"/v3/kafka/{CLUSTER}/consumer")[1], get_json(ours, f"/v3/kafka/{CLUSTER}/consumer")[1]
    assert _keys(b) == _keys(g) and _keys(b["request"]) == _keys(g["request"])
    assert set(b["consumers"]) == set(g["consumers"]), "both list the groups that commit"
    for path in (f"/v3/kafka/nope/consumer", f"/v3/kafka/{CLUSTER}/consumer/nope/status", "/v3/kafka/x/y/z"):
        (bs, bb), (gs, gb) = get_json(burrow, path), get_json(ours, path)
        assert bs == gs and _keys(bb) == _keys(gb), path
        assert {k: v for k, v in bb.items() if k != "request"} == {k: v for k, v in gb.items() if k != "request"}


def test_committed_offsets_and_lags_match(both):
    burrow, ours, _ = both
    report = []
    for group in get_json(burrow, f"/v3/kafka/{CLUSTER}/consumer")[1]["consumers"]:
        bd = get_json(burrow, f"/v3/kafka/{CLUSTER}/consumer/{group}")[1]["topics"]
        gd = get_json(ours, f"/v3/kafka/{CLUSTER}/consumer/{group}")[1]["topics"]
        b_last = {(t, n): (e["offsets"][-1]["offset"], e["current-lag"]) for t, es in bd.items()
                  for n, e in enumerate(es) if e["offsets"] and e["offsets"][-1]}
        g_last = {(t, n): (e["offsets"][-1]["offset"], e["current-lag"]) for t, es in gd.items()
                  for n, e in enumerate(es) if e["offsets"]}
        assert b_last == g_last, group
        for t, es in gd.items():
            for e in es:
                assert _keys(e) == _keys(bd[t][0])
                for o in e["offsets"]:
                    assert _keys(o) - {"observedAt"} == _keys(next(x for x in bd[t][0]["offsets"] if x))
        (_, bl), (_, gl) = get_json(burrow, f"/v3/kafka/{CLUSTER}/consumer/{group}/lag"), \
            get_json(ours, f"/v3/kafka/{CLUSTER}/consumer/{group}/lag")
        bst, gst = bl["status"], gl["status"]
        assert _keys(bst) == _keys(gst) and _keys(bst["partitions"][0]) == _keys(gst["partitions"][0])
        assert bst["totallag"] == gst["totallag"], group
        assert {(p["topic"], p["partition"]): p["current_lag"] for p in bst["partitions"]} == \
            {(p["topic"], p["partition"]): p["current_lag"] for p in gst["partitions"]}, group
        report.append(f"{group}: Burrow {bst['status']} {sorted({p['status'] for p in bst['partitions']})} "
                      f"complete {bst['complete']}; groupscope {gst['status']} "
                      f"{sorted({p['status'] for p in gst['partitions']})}; owners "
                      f"{sorted({p['owner'] for p in bst['partitions']})} vs "
                      f"{sorted({p['owner'] for p in gst['partitions']})}")
    print("\n" + "\n".join(report))


def test_topics_and_end_offsets_match(both):
    burrow, ours, topics = both
    assert set(get_json(ours, f"/v3/kafka/{CLUSTER}/topic")[1]["topics"]) <= set(
        get_json(burrow, f"/v3/kafka/{CLUSTER}/topic")[1]["topics"])
    for t in get_json(ours, f"/v3/kafka/{CLUSTER}/topic")[1]["topics"]:
        (_, b), (_, g) = get_json(burrow, f"/v3/kafka/{CLUSTER}/topic/{t}"), get_json(ours, f"/v3/kafka/{CLUSTER}/topic/{t}")
        assert b["offsets"] == g["offsets"] and _keys(b) == _keys(g), t
