"""The read side of a batch alone: the job's range reader against a plain consumer, same broker, same run.

A librdkafka mock cluster (in this process) is loaded with N offset commits. Then, one after another:

- the reference: one plain ``confluent_kafka.Consumer`` with the job's fetch settings reads every record, touching
  key and value (what ``bench_catchup.py`` calls the reference);
- the two readers a read task of the job can run, over the same ranges: ``streaming.kafka.fetcher.fetch_ranges``
  (Fetch requests decoded column-wise, the default ``source.reader: fetch``) and
  ``streaming.kafka.reader.read_ranges`` (librdkafka's consumer, ``source.reader: consumer``); each in one process,
  then split over two processes (the default ``source.read_tasks``), without and with packing the records into the
  chunks the query moves (``streaming.job.packed``).

Each reader runs in a process of its own, as Spark's tasks do; the broker stays in this one. Wall-clock seconds and
each reader process's CPU seconds (librdkafka's threads included) are printed. What it shows is how far a read
task is from the bare consumer, and what packing adds; the rest of a batch (shuffle, shard steps, Delta) is in
``bench_catchup.py``'s figures. Usage::

    python benchmarks/bench_read.py                      # 2,000,000 records over 80 partitions
    python benchmarks/bench_read.py --records 1000000
    python benchmarks/bench_read.py --records 5000000 --slices   # as bench_catchup.py's batches: 40%, 40%, 20%

``--slices`` reads the ranges the way the job's three catch-up batches do (0-40%, 40-80% and 80-100% of each
partition, two tasks each) and prints the mock broker's thread's CPU seconds for each slice: the broker finds a
fetch offset by walking its message-set list, so the deeper slices cost it more per record.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_catchup import OFFSETS_TOPIC, check_backlog, loadavg, read_all  # noqa: E402
from bench_job import load_backlog  # noqa: E402
from streaming.kafka.fetcher import fetch_ranges  # noqa: E402
from streaming.kafka.mock_cluster import MockCluster  # noqa: E402
from streaming.kafka.reader import OffsetRange, read_ranges  # noqa: E402


def _read_task(bootstrap: str, ranges: list[OffsetRange], pack_chunks: bool, out: mp.Queue) -> None:
    from streaming.job.packed import pack

    started, cpu = time.perf_counter(), time.process_time()
    rows = 0
    for batch in read_ranges({"bootstrap.servers": bootstrap}, ranges):
        rows += batch.num_rows
        if pack_chunks:
            for _ in pack(batch):
                pass
    out.put((rows, time.perf_counter() - started, time.process_time() - cpu))


def _fetch_task(bootstrap: str, ranges: list[OffsetRange], pack_chunks: bool, out: mp.Queue) -> None:
    from streaming.job.packed import pack_partitions

    started, cpu = time.perf_counter(), time.process_time()
    rows = 0
    for chunk in fetch_ranges({"bootstrap.servers": bootstrap}, ranges):
        rows += chunk[2].num_rows
        if pack_chunks:
            pack_partitions([chunk])
    out.put((rows, time.perf_counter() - started, time.process_time() - cpu))


def _reference_task(bootstrap: str, highs: dict[int, int], out: mp.Queue) -> None:
    cpu = time.process_time()
    seconds, rows, _ = read_all(bootstrap, highs, tuned=True)
    out.put((rows, seconds, time.process_time() - cpu))


def run_tasks(target, argument_sets: list[tuple]) -> tuple[float, list[tuple[int, float, float]]]:
    """Wall-clock seconds for all of ``argument_sets`` run at once, one process each, and what each reported."""
    out: mp.Queue = mp.Queue()
    processes = [mp.Process(target=target, args=(*args, out)) for args in argument_sets]
    started = time.perf_counter()
    for p in processes:
        p.start()
    results = [out.get() for _ in processes]
    for p in processes:
        p.join()
    return time.perf_counter() - started, results


def broker_cpu_seconds() -> float:
    """CPU seconds so far of the mock broker's thread (librdkafka names it ``rdk:mock``) in this process."""
    ticks = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.index("(") + 1:stat.rindex(")")].startswith("rdk:mock"):
            fields = stat[stat.rindex(")") + 2:].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def read_in_slices(bootstrap: str, highs: dict[int, int]) -> None:
    print("\n| slice of each partition (2 tasks, read and pack) | records | wall clock | broker's thread, CPU s |"
          "\n|---|---|---|---|")
    for lo, hi in ((0.0, 0.4), (0.4, 0.8), (0.8, 1.0)):
        ranges = [OffsetRange(OFFSETS_TOPIC, p, int(h * lo), int(h * hi)) for p, h in sorted(highs.items()) if h]
        before = broker_cpu_seconds()
        wall, results = run_tasks(_fetch_task, [(bootstrap, ranges[0::2], True), (bootstrap, ranges[1::2], True)])
        print(f"| {lo:.0%}-{hi:.0%} | {sum(r[0] for r in results):,} | {wall:.2f} s | "
              f"{broker_cpu_seconds() - before:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--offsets-partitions", type=int, default=80)
    ap.add_argument("--slices", action="store_true", help="also read in the catch-up batches' slices of depth")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {mp.cpu_count()} cores, Python {platform.python_version()}")
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS_TOPIC, args.offsets_partitions)
        bootstrap = mc.bootstrap_servers
        loaded = load_backlog(bootstrap, args.records, 5000, 10, args.offsets_partitions)
        highs = check_backlog(bootstrap, args.offsets_partitions, args.records)
        print(f"backlog: {args.records:,} offset commits over {args.offsets_partitions} partitions, produced in "
              f"{loaded:.1f} s; load average {loadavg()}")
        ranges = [OffsetRange(OFFSETS_TOPIC, p, 0, h) for p, h in sorted(highs.items()) if h > 0]
        runs = [("reference: plain consumer, job's fetch settings", _reference_task, [(bootstrap, highs)])]
        for name, task in (("fetch_ranges", _fetch_task), ("read_ranges", _read_task)):
            for pack_chunks in (False, True):
                what = "read and pack" if pack_chunks else "read"
                runs.append((f"{name}, 1 task, {what}", task, [(bootstrap, ranges, pack_chunks)]))
                runs.append((f"{name}, 2 tasks, {what}", task,
                             [(bootstrap, ranges[0::2], pack_chunks), (bootstrap, ranges[1::2], pack_chunks)]))
        print("\n| reader | wall clock | records/s | CPU seconds per process |\n|---|---|---|---|")
        for name, target, argument_sets in runs:
            wall, results = run_tasks(target, argument_sets)
            rows = sum(r[0] for r in results)
            if rows != args.records:
                raise SystemExit(f"{name} read {rows:,} records, not {args.records:,}")
            cpu = ", ".join(f"{r[2]:.2f}" for r in results)
            print(f"| {name} | {wall:.2f} s | {rows / wall:,.0f} | {cpu} |", flush=True)
        if args.slices:
            read_in_slices(bootstrap, highs)
        print(f"\nload average at the end: {loadavg()}")


if __name__ == "__main__":
    main()
