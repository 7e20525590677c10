"""Batch time and state size of the stateful step at scale: 10,000 groups × 100 partitions (1M group-partitions).

Runs the per-shard step (the code inside the Spark stateful operator) on one shard's share of the load —
``groups / shards`` groups, each committing every partition once, plus a heartbeat with the end offsets of every
partition (which triggers a full re-evaluation of every group of the shard) — and reports the step time, the
serialized state size and what that means for the whole job (shards share the cores). Usage::

    python benchmarks/bench_scale.py [--groups 10000 --partitions 100 --shards 50 --cores 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from protocol.builders import new_offset_commit  # noqa: E402
from protocol.codec import encode_record  # noqa: E402
from streaming.schema.heartbeat_format import encode_heartbeats  # noqa: E402
from streaming.job.step import ShardStep, StepConfig  # noqa: E402
from streaming.schema.tables import SOURCE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--shards", type=int, default=50)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--trigger", type=float, default=1.0, help="trigger interval (s)")
    ap.add_argument("--interval", type=float, default=10.0, help="model.snapshot_interval_seconds")
    args = ap.parse_args()
    per_shard = args.groups // args.shards
    shard = 7
    ts = 1_795_400_000_000
    rows = []
    for g in range(per_shard):
        topic = f"topic-{g % 50}"
        for p in range(args.partitions):
            k, v = encode_record(new_offset_commit(f"group-{g}", topic, p, 1000 + p, commit_timestamp=ts))
            rows.append({"key": k, "value": v, "topic": "__consumer_offsets", "partition": shard,
                         "offset": len(rows), "timestamp": ts * 1000})
    ends = [(f"topic-{t}", p, 2000 + p, 2000 + p, 0) for t in range(50) for p in range(args.partitions)]
    ends.append(("__consumer_offsets", shard, len(rows), len(rows), 0))
    for value in encode_heartbeats(ts + 5000, "bench", 1, ends):
        rows.append({"key": b"e", "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": 0,
                     "timestamp": (ts + 5000) * 1000})
    table = pa.Table.from_pylist(rows, schema=SOURCE)
    step = ShardStep(shard, StepConfig())
    t = time.perf_counter()
    tables, health = step.process(table, wall_ms=ts + 5000)
    first = time.perf_counter() - t
    state = step.state()
    # A steady-state batch: a heartbeat (every group re-evaluated) and one commit per group.
    t = time.perf_counter()
    step2 = ShardStep(shard, StepConfig(), state)
    restore = time.perf_counter() - t
    later = []
    for g in range(per_shard):
        k, v = encode_record(new_offset_commit(f"group-{g}", f"topic-{g % 50}", 0, 1500, commit_timestamp=ts + 9000))
        later.append({"key": k, "value": v, "topic": "__consumer_offsets", "partition": shard,
                      "offset": len(rows) + g, "timestamp": (ts + 9000) * 1000})
    for value in encode_heartbeats(ts + 20000, "bench", 2, ends):
        later.append({"key": b"e", "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": 1,
                      "timestamp": (ts + 20000) * 1000})
    t = time.perf_counter()
    step2.process(pa.Table.from_pylist(later, schema=SOURCE), wall_ms=ts + 20000)
    steady = time.perf_counter() - t
    t = time.perf_counter()
    step2.state()
    ser = time.perf_counter() - t
    gp = per_shard * args.partitions
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"one shard: {per_shard} groups x {args.partitions} partitions = {gp:,} group-partitions")
    print(f"  first batch ({len(rows):,} commits + heartbeat): {first:.2f} s")
    print(f"  steady batch (heartbeat re-evaluates every group, {per_shard} commits): {steady:.2f} s, "
          f"state serialization {ser:.2f} s, restore from the state bytes {restore:.2f} s")
    print(f"  serialized state: {len(state):,} bytes = {len(state) / gp:.1f} bytes per group-partition")
    total = args.groups * args.partitions
    print(f"whole job, {args.groups:,} groups x {args.partitions} partitions = {total:,} group-partitions over "
          f"{args.shards} shards on {args.cores} cores:")
    print(f"  if every shard re-evaluated in the same batch: ~{(steady + ser) * args.shards / args.cores:.1f} s of step "
          f"time per core; state {len(state) * args.shards / 1e6:.0f} MB")
    per_batch = args.shards * args.trigger / args.interval
    print(f"  shards re-evaluate at staggered times: {per_batch:.0f} of {args.shards} per {args.trigger:.0f} s batch at a "
          f"{args.interval:.0f} s snapshot interval = ~{(steady + ser) * per_batch / args.cores:.2f} s per batch")


if __name__ == "__main__":
    main()
