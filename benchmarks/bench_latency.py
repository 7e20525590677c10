"""Commit-to-metric latency of the running job at a 1 s trigger.

A librdkafka mock cluster and the real job (heartbeat emitter, Spark, Delta, metrics endpoint with per-partition
series) run; every second a new offset commit of a probe group is produced to ``__consumer_offsets``, and the
metrics endpoint is polled until both the group series (``kafka_consumergroup_last_commit_timestamp_seconds``) and
the committed partition's series (``kafka_consumergroup_current_offset{topic="events",partition="0"}``) show it.
Prints p50/p99/max of each. Usage::

    python benchmarks/bench_latency.py [--samples 60]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402

from protocol import partition_for  # noqa: E402
from protocol.builders import new_offset_commit  # noqa: E402
from protocol.codec import encode_record  # noqa: E402
from streaming.config import load_settings  # noqa: E402
from streaming.kafka.mock_cluster import MockCluster  # noqa: E402
from streaming.driver.runner import GroupscopeJob  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--groups", type=int, default=200, help="background groups committing every second")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with MockCluster(1) as mc, tempfile.TemporaryDirectory() as tmp:
        mc.create_topic("__consumer_offsets", 50)
        mc.create_topic("groupscope-heartbeat", 1)
        mc.create_topic("events", 10)
        settings = load_settings(None, {
            "cluster": "latency", "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "spark": {"checkpoint": f"{tmp}/cp", "trigger_seconds": 1.0, "shuffle_partitions": 2},
            "delta": {"path": f"{tmp}/delta"}, "metrics": {"host": "127.0.0.1", "port": 0, "partition_metrics": True},
            "heartbeat": {"interval_seconds": 5.0},
        })
        job = GroupscopeJob(settings, install_signal_handlers=False)
        job.start()
        import threading

        threading.Thread(target=job.run, daemon=True).start()
        url = f"http://127.0.0.1:{job.metrics.port}/metrics"
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "linger.ms": 0, "log_level": 3})
        pattern = re.compile(r'kafka_consumergroup_last_commit_timestamp_seconds\{cluster="latency",group="probe"\} '
                             r"([0-9.e+]+)")
        # prometheus_client writes labels in its own order: match the set, not a sequence
        partition_pattern = re.compile(r'^kafka_consumergroup_current_offset\{(?=[^}]*group="probe")'
                                       r'(?=[^}]*topic="events")(?=[^}]*partition="0")[^}]*\} ([0-9.e+]+)$', re.M)
        latencies, partition_latencies = [], []
        time.sleep(8)  # warm-up: Spark session, first batches
        for i in range(args.samples):
            now_ms = int(time.time() * 1000)
            for g in range(args.groups):
                group = f"bg-{g}"
                k, v = encode_record(new_offset_commit(group, "events", g % 10, i, commit_timestamp=now_ms))
                p.produce("__consumer_offsets", key=k, value=v, partition=partition_for(group, 50))
            k, v = encode_record(new_offset_commit("probe", "events", 0, i, commit_timestamp=now_ms))
            p.produce("__consumer_offsets", key=k, value=v, partition=partition_for("probe", 50))
            p.flush(10)
            sent = time.time()
            group_seen = partition_seen = None
            while time.time() - sent < 30 and (group_seen is None or partition_seen is None):
                with urllib.request.urlopen(url, timeout=10) as resp:
                    text = resp.read().decode()
                now = time.time()
                m = pattern.search(text)
                if group_seen is None and m and abs(float(m.group(1)) * 1000 - now_ms) < 1:
                    group_seen = now - sent
                m = partition_pattern.search(text)
                if partition_seen is None and m and float(m.group(1)) == i:
                    partition_seen = now - sent
                time.sleep(0.05)
            if group_seen is not None:
                latencies.append(group_seen)
            if partition_seen is not None:
                partition_latencies.append(partition_seen)
            time.sleep(max(0.0, 1.0 - (time.time() - sent)))
        job.request_stop()
        job.stop()
    print(f"commit-to-metric latency, {args.groups} background groups committing every second:")
    for what, values in (("group series (last_commit_timestamp_seconds)", latencies),
                         ("partition series (current_offset)", partition_latencies)):
        values.sort()
        if len(values) < 2:
            print(f"  {what}: {len(values)} of {args.samples} samples seen")
            continue
        q = statistics.quantiles(values, n=100, method="inclusive")
        print(f"  {what}: {len(values)} of {args.samples} samples, p50 {q[49]:.2f} s, p99 {q[98]:.2f} s, "
              f"max {values[-1]:.2f} s")


if __name__ == "__main__":
    main()
