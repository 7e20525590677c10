"""Throughput of the whole streaming job: catch-up of a ``__consumer_offsets`` backlog, end to end.

A librdkafka mock cluster (real Kafka protocol over TCP) is loaded with N offset commits (G groups × P partitions,
commits in rounds as real consumers make them), then ``groupscope run``'s job is started from the earliest offset
and timed until every shard has caught up and the ``commits`` Delta table holds all N rows. Prints records/s,
batch count and durations. Usage::

    python benchmarks/bench_job.py --records 1000000 [--groups 20 --partitions 100] [--max-per-trigger 2000000]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
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


def load_backlog(bootstrap: str, records: int, groups: int, partitions: int, offsets_partitions: int,
                 topic: str = "bench-events", producer: dict | None = None) -> float:
    """Produces the offset commits straight into ``__consumer_offsets``; ``producer`` adds settings (a real broker
    takes produce requests to an internal topic only from the client id ``__admin_client``)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 2_000_000, "log_level": 3, **(producer or {})})
    failed: list = []
    ts = 1_767_225_600_000
    keys = {}
    started = time.perf_counter()
    for i in range(records):
        g, part = (i // partitions) % groups, i % partitions
        rnd = i // (groups * partitions)
        group = f"bench-g{g}"
        key = keys.get((g, part))
        rec = new_offset_commit(group, topic, part, rnd * 10 + 1, commit_timestamp=ts + i)
        k, v = encode_record(rec)
        if key is None:
            keys[(g, part)] = key = (k, partition_for(group, offsets_partitions))
        while True:
            try:
                p.produce("__consumer_offsets", key=key[0], value=v, partition=key[1], timestamp=ts + i,
                          on_delivery=lambda err, _msg: err is not None and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)
    if failed:
        raise SystemExit(f"{len(failed):,} offset commits were not written: {failed[0]}")
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--offsets-partitions", type=int, default=50,
                    help="partitions of __consumer_offsets (the mock broker keeps ~10 MB per partition: use more "
                         "partitions for backlogs above ~4M records)")
    ap.add_argument("--max-per-trigger", type=int, default=2_000_000)
    ap.add_argument("--shuffle-partitions", type=int, default=2)
    ap.add_argument("--no-delta", action="store_true", help="measure without writing Delta tables")
    ap.add_argument("--verbose", action="store_true", help="print every batch")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with MockCluster(1) as mc, tempfile.TemporaryDirectory() as tmp:
        mc.create_topic("__consumer_offsets", args.offsets_partitions)
        mc.create_topic("groupscope-heartbeat", 1)
        mc.create_topic("bench-events", args.partitions)
        secs = load_backlog(mc.bootstrap_servers, args.records, args.groups, args.partitions, args.offsets_partitions)
        print(f"backlog: {args.records:,} offset commits ({args.groups} groups x {args.partitions} partitions) "
              f"produced in {secs:.1f} s")
        settings = load_settings(None, {
            "cluster": "bench",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "source": {"max_offsets_per_trigger": args.max_per_trigger},
            "spark": {"checkpoint": f"{tmp}/cp", "trigger_seconds": 0, "shuffle_partitions": args.shuffle_partitions,
                      "driver_memory": "6g"},
            "delta": {"path": f"{tmp}/delta", "enabled": not args.no_delta},
            "metrics": {"enabled": False},
            "heartbeat": {"interval_seconds": 2.0},
        })
        batches = []
        def on_batch(r):
            batches.append((time.perf_counter(), r))
            if args.verbose:
                print(f"  {time.perf_counter() - t0:6.1f} s batch {r.batch_id}: {sum(h.records for h in r.health):,} records, "
                      f"{sum(h.caught_up for h in r.health)}/{len(r.health)} shards caught up, "
                      f"driver {r.seconds:.2f} s", flush=True)

        job = GroupscopeJob(settings, install_signal_handlers=False, on_batch=on_batch)
        t0 = time.perf_counter()
        job.start()
        t_started = time.perf_counter()
        seen = 0
        try:
            while True:
                time.sleep(0.2)
                if batches:
                    seen = sum(sum(h.records for h in r.health) for _, r in batches)
                    reports = [r.health for _, r in batches if r.health]
                    if seen >= args.records and reports and all(h.caught_up for h in reports[-1]):
                        break
                if job.query is not None and not job.query.isActive:
                    print(f"query stopped: {job.query.exception()}")
                    break
                if time.perf_counter() - t_started > 1800:
                    print("gave up after 30 min")
                    break
        finally:
            t_done = time.perf_counter()
            job_progress = [p for p in (job.query.recentProgress if job.query else []) if p.numInputRows]
            job.stop()
        work = [r for _, r in batches if sum(h.records for h in r.health)]
        catch_up = t_done - t_started
        print(f"job start (Spark session, Kafka metadata, first heartbeat): {t_started - t0:.1f} s")
        print(f"catch-up: {seen:,} records in {catch_up:.1f} s = {seen / catch_up:,.0f} records/s "
              f"({len(work)} batches with data)")
        for r in work[:3] + work[-2:]:
            print(f"  batch {r.batch_id}: {sum(h.records for h in r.health):,} records; shard steps "
                  f"{sum(h.step_seconds for h in r.health):.2f} s in total (max {max(h.step_seconds for h in r.health):.2f} s); "
                  f"driver (Delta, metrics) {r.seconds:.2f} s")
        for p in job_progress[-3:]:
            print(f"  spark progress: batch {p.batchId} rows {p.numInputRows} durations {p.durationMs}")


if __name__ == "__main__":
    main()
