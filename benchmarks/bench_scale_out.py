"""Does the job's throughput grow with executors? ``groupscope backfill`` over the 5M-commit corpus on a Spark
standalone cluster started here (from the pyspark installation: a master and one-core workers on loopback), with
one executor and then with two, same files, same run.

Backfill rather than a live catch-up: with no broker in the way, what changes between the two runs is only how many
executors read, step and write (the driver only plans and commits). On a 2-core machine the driver, the JVMs and
the Python workers share the cores, so two executors cannot double the rate; on a cluster each executor brings its
own cores. Usage::

    python benchmarks/bench_scale_out.py             # the 5M corpus, unpacked to a temp dir
    python benchmarks/bench_scale_out.py DIR         # or a log directory of __consumer_offsets-N folders
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_backfill import run_backfill  # noqa: E402
from bench_catchup import loadavg  # noqa: E402
from bench_decode import unpack_default  # noqa: E402

from tests.spark.standalone import standalone_cluster  # noqa: E402  (the tests' own launcher of a cluster)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def backfill(root: Path, work: Path, master: str, executors: int) -> tuple[float, str]:
    conf = {"spark.cores.max": str(executors), "spark.executor.cores": "1", "spark.executor.memory": "1g",
            # start only once every executor is there, so the first batch already has them all
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s"}
    env = {"GROUPSCOPE_SPARK__CONF": json.dumps(conf), "GROUPSCOPE_SPARK__SHUFFLE_PARTITIONS": str(2 * executors),
           "GROUPSCOPE_SOURCE__READ_TASKS": str(executors)}
    busy0, total0 = cpu_times()
    result = run_backfill(root, work, "--master", master, env=env)
    busy1, total1 = cpu_times()
    print(f"  machine CPU busy during the run: {100 * (busy1 - busy0) / (total1 - total0):.0f}% of "
          f"{os.cpu_count()} cores")
    return result["seconds"], result["line"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", help="log directory (default: the 5M corpus, unpacked)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-scale-out-") as tmp:
        work = Path(tmp)
        root = Path(args.root) if args.root else unpack_default(work) / "segments"
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}")
        with standalone_cluster(work / "cluster", workers=2) as master:
            results = {}
            for executors in (1, 2):
                seconds, line = backfill(root, work / f"run-{executors}", master, executors)
                results[executors] = seconds
                print(f"{executors} executor(s): {seconds:.1f} s, process start to exit (load {loadavg()})\n  {line}")
        print(f"two executors / one: {results[1] / results[2]:.2f}x the throughput")


if __name__ == "__main__":
    main()
