"""Latency of the HTTP API (Burrow's /v3 paths and groupscope's /v1) under concurrent clients on loopback.

The simulator's scenarios (every named one plus ``scale`` groups of 32 partitions) are replayed through the group
model; the rows of its snapshot fill a ``MetricsState``, which the real ``ApiServer`` serves. Several client threads
then send requests over fresh TCP connections, mixing every endpoint over every group and topic. Prints p50/p99/max
per endpoint and overall, and the throughput. Usage::

    python benchmarks/bench_api.py [--groups 500] [--requests 5000] [--threads 8]
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streaming.api import ApiServer, ClusterSource  # noqa: E402
from streaming.model.lag import EndOffsetSample  # noqa: E402
from streaming.model.shard import CoordinatorModel  # noqa: E402
from streaming.schema import tables  # noqa: E402
from streaming.simulator import MemorySink, Simulation  # noqa: E402
from streaming.simulator.sinks import replay_entries  # noqa: E402
from streaming.sinks.prometheus import MetricsState, MonitorHealth, OffsetsPartitionHealth  # noqa: E402

CLUSTER = "bench"


def build_state(groups: int, seconds: int) -> MetricsState:
    sim = Simulation(["all", "scale"], seed=1, offsets_partitions=50, scale_groups=groups)
    sink = MemorySink()
    model = CoordinatorModel()
    done = 0
    for t in range(10, seconds + 1, 10):
        sim.run_until(t * 1000, sink)
        replay_entries(model, sink.entries[done:])
        done = len(sink.entries)
        model.apply_heartbeat(sim.now_ms, {tp: EndOffsetSample(hw) for tp, hw in sink.ends.items()})
        model.drain_events()
    shards = model.snapshot(sim.now_ms)
    rows = [tables.group_row(g, shard=s.partition, now_ms=sim.now_ms) for s in shards for g in s.groups]
    parts = [r for s in shards for g in s.groups for r in tables.partition_rows(g, shard=s.partition,
                                                                              now_ms=sim.now_ms)]
    hws = sink.high_watermarks()
    read = tuple(OffsetsPartitionHealth(p, hws[p] - 1, hws[p], hws[p], True) for p in sorted(hws))
    health = MonitorHealth(batches=1, offsets_partitions=read)
    state = MetricsState()
    state.apply_batch(rows, parts, (), health, batch_id=0)
    return state


def request_mix(state: MetricsState) -> list[tuple[str, str]]:
    """(endpoint, path) pairs: the per-group endpoints for every group, the cluster-wide ones once per 50 groups."""
    view = state.view()
    out: list[tuple[str, str]] = []
    topics = sorted({t for parts in view.partitions.values() for t, _ in parts})
    base = f"/v3/kafka/{CLUSTER}"
    for i, gid in enumerate(sorted(view.groups)):
        g = quote(gid, safe="")
        out += [("consumer detail", f"{base}/consumer/{g}"), ("status", f"{base}/consumer/{g}/status"),
                ("lag", f"{base}/consumer/{g}/lag"), ("v1 group", f"/v1/clusters/{CLUSTER}/groups/{g}")]
        if i % 50 == 0:
            t = quote(topics[i // 50 % len(topics)], safe="")
            out += [("consumer list", f"{base}/consumer"), ("topic list", f"{base}/topic"),
                    ("topic detail", f"{base}/topic/{t}"), ("unknown group", f"{base}/consumer/nope/status")]
    return out


def run(port: int, mix: list[tuple[str, str]], requests: int, threads: int) -> tuple[dict[str, list[float]], int,
                                                                                       float]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors = 0
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        nonlocal errors
        mine: list[tuple[str, float]] = []
        bad = 0
        for i in counter:
            name, path = mix[i % len(mix)]
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                bad += resp.status != (404 if name == "unknown group" else 200)
            except OSError:
                bad += 1
            finally:
                conn.close()
            mine.append((name, time.perf_counter() - started))
        with lock:
            errors += bad
            for name, seconds in mine:
                latencies[name].append(seconds)

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return latencies, errors, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=500, help="scale groups (32 partitions each) besides the scenarios")
    ap.add_argument("--seconds", type=int, default=60, help="simulated seconds before the snapshot")
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    t0 = time.perf_counter()
    state = build_state(args.groups, args.seconds)
    view = state.view()
    print(f"state: {len(view.groups)} groups, {sum(len(p) for p in view.partitions.values())} group-partitions "
          f"(built in {time.perf_counter() - t0:.1f} s)")
    mix = request_mix(state)
    with ApiServer({CLUSTER: ClusterSource.of_state(CLUSTER, state)}, host="127.0.0.1", port=0) as server:
        latencies, errors, seconds = run(server.port, mix, args.requests, args.threads)
    every = [s for values in latencies.values() for s in values]
    print(f"{len(every)} requests from {args.threads} threads in {seconds:.1f} s ({len(every) / seconds:.0f}/s), "
          f"{errors} errors")
    print(f"{'endpoint':<16} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name in sorted(latencies) + ["all"]:
        values = every if name == "all" else latencies[name]
        p50, p99 = percentile(values, 50) * 1000, percentile(values, 99) * 1000
        print(f"{name:<16} {len(values):>8} {p50:>8.1f} {p99:>8.1f} {max(values) * 1000:>8.1f}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
