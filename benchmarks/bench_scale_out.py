"""Does the job's throughput grow with executors? ``groupscope backfill`` over the 5M-commit corpus on a Spark
standalone cluster started here (from the pyspark installation: a master and one-core workers on loopback), with
one executor and then with two, same files, same run.

Backfill rather than a live catch-up: with no broker in the way, what changes between the two runs is only how many
executors read, step and write (the driver only plans and commits). On a 2-core machine the driver, the JVMs and
the Python workers share the cores, so two executors cannot double the rate; on a cluster each executor brings its
own cores. ``--worker-cpu`` gives each worker (its executor JVM and Python workers) a CPU quota of its own from
Linux cgroups, smaller than the machine divided among them (``cpu_quota.py``): each executor then brings a fixed
capacity, as a node of a cluster does, and the driver, outside the quotas, is what could stop the rate from
doubling. Usage::

    python benchmarks/bench_scale_out.py                     # the 5M corpus, unpacked to a temp dir
    python benchmarks/bench_scale_out.py DIR                 # or a log directory of __consumer_offsets-N folders
    python benchmarks/bench_scale_out.py --worker-cpu 0.5    # each worker held to half a core (needs root)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_backfill import run_backfill  # noqa: E402
from bench_catchup import loadavg, warm_batches  # noqa: E402
from bench_decode import unpack_default  # noqa: E402
from cpu_quota import QuotaUnavailable, quota_groups, throttled_share  # noqa: E402

from tests.spark.standalone import standalone_cluster  # noqa: E402  (the tests' own launcher of a cluster)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


BATCH_RECORDS = 1_000_000  # five batches of the 5M corpus: the first carries the executors' start-up


def backfill(root: Path, work: Path, master: str, executors: int) -> dict:
    conf = {"spark.cores.max": str(executors), "spark.executor.cores": "1", "spark.executor.memory": "1g",
            # start only once every executor is there, so the first batch already has them all
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
    # One read task and one stateful task per executor and batch: each task has a fixed cost (its Python worker's
    # round trip, the state store's load and commit, its files), so more tasks than executors add work that
    # grows with the executors instead of sharing it.
    env = {"GROUPSCOPE_SPARK__CONF": json.dumps(conf), "GROUPSCOPE_SPARK__SHUFFLE_PARTITIONS": str(executors),
           "GROUPSCOPE_SOURCE__READ_TASKS": str(executors),
           "GROUPSCOPE_SOURCE__MAX_OFFSETS_PER_TRIGGER": str(BATCH_RECORDS)}
    busy0, total0 = cpu_times()
    result = run_backfill(root, work, "--master", master, env=env)
    busy1, total1 = cpu_times()
    result["machine_busy"] = (busy1 - busy0) / (total1 - total0)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", help="log directory (default: the 5M corpus, unpacked)")
    parser.add_argument("--worker-cpu", type=float, metavar="CORES",
                        help="hold each worker and what it launches to this many cores (a cgroup CPU quota)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-out-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        root = Path(args.root) if args.root else unpack_default(work) / "segments"
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}")
        cgroups = None
        if args.worker_cpu:
            try:
                cgroups = stack.enter_context(quota_groups(2, args.worker_cpu))
            except QuotaUnavailable as exc:
                sys.exit(f"bench_scale_out: --worker-cpu: {exc}")
            print(f"each worker, its executor and its Python workers held to {args.worker_cpu:g} core(s) "
                  f"(a cgroup CPU quota); the driver is not")
        with standalone_cluster(work / "cluster", workers=2, worker_cgroups=cgroups) as master:
            results = {}
            for executors in (1, 2):
                result = backfill(root, work / f"run-{executors}", master, executors)
                results[executors] = result
                records, seconds = warm_batches(result["batches"])
                print(f"{executors} executor(s): {result['seconds']:.1f} s, process start to exit; after the first "
                      f"batch {records:,} records in {seconds:.1f} s = {records / seconds / 1e3:,.0f}k records/s; "
                      f"commits table {result['commits']:,} rows; machine CPU busy "
                      f"{100 * result['machine_busy']:.0f}% of {os.cpu_count()} cores (load {loadavg()})")
                print("  batches: " + ", ".join(f"{b['records'] / 1e6:.1f}M in {b['done'] - b['planned']:.1f} s"
                                              for b in result["batches"]))
                print(f"  {result['line']}")
                if cgroups:
                    print("  held back by its quota in " + ", ".join(
                        f"{100 * throttled_share(c):.0f}%" for c in cgroups) + " of the scheduler periods so far "
                        "(per worker)")
        (r1, s1), (r2, s2) = (warm_batches(results[n]["batches"]) for n in (1, 2))
        print(f"two executors / one: {(r2 / s2) / (r1 / s1):.2f}x the throughput after the first batch, "
              f"{results[1]['seconds'] / results[2]['seconds']:.2f}x from process start to exit")


if __name__ == "__main__":
    main()
