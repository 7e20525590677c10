"""Hard kills: ``groupscope run`` is killed with SIGKILL in the middle of micro-batches, several times, while records
keep arriving. After the last restart catches up, no row of any Delta table is lost or written twice. And a job
killed after it counted rebalances, storms and rolling restarts serves the same counters after its restart."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from protocol import partition_for
from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.kafka.mock_cluster import MockCluster
from streaming.model.describe import describe
from streaming.sinks.delta import DeltaSink

from .harness import HEARTBEAT, OFFSETS, oracle_model, read_committed

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def commit_stream(bootstrap: str, stop: threading.Event, total: int) -> None:
    """Offset commits of 40 groups over 4 partitions of one topic, about 2,000 per second."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    ts = 1_767_225_600_000
    for i in range(total):
        if stop.is_set():
            break
        group = f"restart-g{i % 40}"
        rec = new_offset_commit(group, "events", i % 4, i, commit_timestamp=ts + i)
        key, value = encode_record(rec)
        p.produce(OFFSETS, key=key, value=value, partition=partition_for(group, 50), timestamp=ts + i)
        if i % 200 == 199:
            p.flush(10)
            time.sleep(0.1)
    p.flush(30)


def start_job(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--config", str(config)], cwd=REPO,
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def test_kill_9_during_batches_loses_and_duplicates_nothing(tmp_path):
    rng = random.Random(7)
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        mc.create_topic("events", 4)
        config = tmp_path / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "restart",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "source": {"max_offsets_per_trigger": 3000},
            "spark": {"checkpoint": str(tmp_path / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
            "delta": {"path": str(tmp_path / "delta")},
            "metrics": {"enabled": False},
            "heartbeat": {"interval_seconds": 1.0},
            "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 2.0},
        }))
        stop = threading.Event()
        producer = threading.Thread(target=commit_stream, args=(mc.bootstrap_servers, stop, 24_000), daemon=True)
        producer.start()
        delta = DeltaSink(tmp_path / "delta", app_id="groupscope-restart")
        log = tmp_path / "job.log"
        kills = 0
        try:
            for _ in range(3):
                job = start_job(config, log)
                # Kill once the job has committed at least one batch, at a random moment of its batch cycle.
                deadline = time.time() + 120
                while time.time() < deadline and delta.written_version("commits") is None:
                    time.sleep(0.5)
                time.sleep(rng.uniform(2.0, 6.0))
                os.killpg(job.pid, signal.SIGKILL)
                job.wait(30)
                kills += 1
            producer.join(120)
            job = start_job(config, log)
            expected = read_committed(mc.bootstrap_servers)
            want = {(p, o) for p, o, *_ in expected}
            deadline = time.time() + 180
            got: Counter = Counter()
            while time.time() < deadline:
                commits = delta.read("commits")
                got = Counter(zip(commits.column("shard").to_pylist(), commits.column("offset").to_pylist()))
                if set(got) >= want:
                    break
                time.sleep(1)
            time.sleep(4)  # let the groups table take its periodic snapshot
            job.send_signal(signal.SIGTERM)
            job.wait(90)
        finally:
            stop.set()
            for proc in [job]:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
        assert kills == 3
        assert set(got) == want, f"missing {len(want - set(got))} commit rows; log: {log.read_text()[-2000:]}"
        assert max(got.values()) == 1, "a commit row was written twice"
        events = delta.read("group_events")
        keys = Counter(zip(events.column("shard").to_pylist(), events.column("offset").to_pylist(),
                           events.column("kind").to_pylist(), events.column("detail").to_pylist()))
        assert keys and max(keys.values()) == 1, "an event row was written twice"
        created = [k for k in keys if k[2] == "GroupCreated"]
        assert len(created) == 40, "each group's creation is recorded exactly once"
        oracle = describe(oracle_model(expected))["groups"]
        rows = {r["group_id"]: r for r in delta.read("groups").to_pylist()}
        assert set(rows) == set(oracle)
        for gid, want_group in oracle.items():
            assert rows[gid]["partition_count"] == len(want_group["offsets"])


# Every per-group counter family of /metrics: they come from the checkpointed model, never from a process's memory.
COUNTERS = ("kafka_consumergroup_rebalances_total", "kafka_consumergroup_rebalance_storms_total",
            "kafka_consumergroup_rolling_restarts_total", "kafka_consumergroup_scale_outs_total",
            "kafka_consumergroup_scale_ins_total", "kafka_consumergroup_rebalance_partitions_moved_total",
            "kafka_consumergroup_rebalance_causes_total")
_SERIES = re.compile(r"^(?P<name>kafka_consumergroup_\w+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$", re.M)


def counters(port: int) -> dict[tuple[str, str], float]:
    """``{(family, labels): value}`` of every per-group counter series on /metrics (empty while not serving)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    return {(m["name"], m["labels"]): float(m["value"]) for m in _SERIES.finditer(text) if m["name"] in COUNTERS}


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.HTTPError, OSError):
        return False


def stable_counters(port: int, job: subprocess.Popen, log: Path, timeout_s: float) -> dict[tuple[str, str], float]:
    """The counters once the job is ready and three scrapes 3 s apart agree."""
    deadline = time.time() + timeout_s
    seen: list[dict] = []
    while time.time() < deadline:
        assert job.poll() is None, f"the job exited; log: {log.read_text()[-3000:]}"
        now = counters(port) if ready(port) else {}
        seen = (seen + [now])[-3:] if now else []
        if len(seen) == 3 and seen[0] == seen[1] == seen[2]:
            return now
        time.sleep(3)
    raise AssertionError(f"the counters did not settle; last scrapes: {seen}; log: {log.read_text()[-3000:]}")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_kill_9_keeps_every_per_group_counter(tmp_path):
    """The simulator's storm, rolling-restart and KIP-848 churn scenarios are written to the broker first (so nothing
    happens after the kill), the job counts them, is killed with SIGKILL and restarted on the same checkpoint: every
    per-group counter series is back with the value it had before the kill."""
    from streaming.simulator import Simulation
    from streaming.simulator.kafka_sink import KafkaSink

    port = free_port()
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        # The scenarios' interesting events all happen within 130 simulated seconds; they end before "now".
        sim = Simulation(["storm", "rolling-restart", "kip848-churn"], seed=3,
                         start_ms=int(time.time() * 1000) - 150_000)
        sink = KafkaSink(mc.bootstrap_servers, create_topic=mc.create_topic)
        sim.run_until(130_000, sink)
        sink.flush()
        config = tmp_path / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "kill9",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "spark": {"checkpoint": str(tmp_path / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
            "delta": {"path": str(tmp_path / "delta")},
            "metrics": {"host": "127.0.0.1", "port": port},
            "heartbeat": {"interval_seconds": 1.0},
            "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 2.0},
        }))
        log = tmp_path / "job.log"
        job = start_job(config, log)
        try:
            before = stable_counters(port, job, log, 240)
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
            job = start_job(config, log)
            after = stable_counters(port, job, log, 240)
            job.send_signal(signal.SIGTERM)
            job.wait(90)
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
            sink.close()

    def value(family: str, group: str) -> float:
        return sum(v for (name, labels), v in before.items() if name == family and f'group="{group}"' in labels)

    # The workload did what the test is about: otherwise equal counters prove nothing.
    assert value("kafka_consumergroup_rebalance_storms_total", "storm") >= 1, before
    assert value("kafka_consumergroup_rolling_restarts_total", "rolling") >= 1, before
    assert value("kafka_consumergroup_rebalances_total", "storm") >= 5, before
    assert value("kafka_consumergroup_rebalances_total", "kip848-storm") >= 5, before
    assert value("kafka_consumergroup_rolling_restarts_total", "kip848-roll") >= 1, before
    assert value("kafka_consumergroup_rebalance_partitions_moved_total", "rolling") > 0, before
    assert any(name == "kafka_consumergroup_rebalance_causes_total" for name, _ in before), before
    changed = {k: (v, after.get(k)) for k, v in before.items() if after.get(k) != v}
    assert not changed, f"counters changed across kill -9 (before, after): {changed}"
    assert set(after) == set(before), f"series appeared or vanished: {set(after) ^ set(before)}"
    assert "resumed from checkpoint at batch" in log.read_text()
