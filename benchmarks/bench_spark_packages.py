"""groupscope's own Kafka source and Delta writer against Spark's (``kafka`` source, delta-spark), side by side.

Runs ``bench_catchup.py --job-only`` (a real broker loaded with N offset commits, ``groupscope run`` timed from
process start to ``/ready``, its process tree's memory sampled) once per variant, the variant's settings handed to
the job through the environment:

* ``own``: groupscope's source (``groupscope_kafka``) and the delta-rs writer, the defaults;
* ``builtin-source``: ``source.builtin_kafka_source: true`` (Spark's ``kafka`` source, a row per record);
* ``delta-spark``: ``delta.writer: delta-spark``.

Spark's jars (Delta's, the Kafka connector's) are fetched with Maven into the tests' cache
(``tests/spark/spark_jars.py``) and passed as ``spark.jars``. Prints bench_catchup's table for each variant, then
one summary table.

``--steady N``: the steady state instead, writer against writer in one local[2] session with Delta's jar: N
micro-batches of the size a quiet cluster gives (every table, rows of the Kafka 4.0 captures replayed through the
model, ``tests/sinks/replay_rows.py``) written by each writer alternately to its own tables; prints the median and
the 90th percentile of the seconds per batch, and the CPU seconds the driver's Python and its JVM spent. Usage::

    python benchmarks/bench_spark_packages.py --records 200000
    python benchmarks/bench_spark_packages.py --records 5000000 --variant own --variant delta-spark
    python benchmarks/bench_spark_packages.py --steady 30
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.spark.spark_jars import spark_jars  # noqa: E402

VARIANTS = {
    "own": {},
    "builtin-source": {"GROUPSCOPE_SOURCE__BUILTIN_KAFKA_SOURCE": "true"},
    "delta-spark": {"GROUPSCOPE_DELTA__WRITER": "delta-spark"},
}
#: bench_catchup's table rows this summary keeps, by a short name
ROWS = {"ready": "`groupscope run`: process start to `/ready` 200", "warm": "after the first batch (warm)",
        "memory": "peak PSS, process tree"}


def run(variant: str, records: int, jars: str) -> dict[str, str]:
    env = {**os.environ, **VARIANTS[variant], "GROUPSCOPE_SPARK__CONF": json.dumps({"spark.jars": jars})}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_catchup.py"), "--job-only",
                           "--records", str(records)], env=env, capture_output=True, text=True, cwd=REPO)
    print(f"## {variant}\n{done.stdout}{done.stderr[-2000:] if done.returncode else ''}", flush=True)
    figures = {}
    for key, label in ROWS.items():
        line = next((row for row in done.stdout.splitlines() if row.startswith(f"| {label}")), None)
        figures[key] = line.split("|")[2].strip() if line else "-"
    return figures


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steady(batches: int) -> None:
    """Seconds per steady-state batch, delta-rs writer against delta-spark writer, in one session."""
    import statistics
    import tempfile
    import time

    from pyspark import SparkContext

    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.delta_spark import DeltaSparkSink
    from streaming.spark.packages import needed_packages, session_conf
    from tests.sinks.test_delta_spark import _batches
    from tests.spark.spark_jars import end_own_jvm, own_jvm_session

    conf = session_conf(needed_packages(delta_spark=True, builtin_kafka=False), spark_jars().conf(kafka=False),
                        shuffle_partitions=2)
    spark = own_jvm_session(conf, master="local[2]")
    jvm_pid = SparkContext._gateway.proc.pid
    sample = _batches()[1]
    rows = sum(t.num_rows for t in sample.values())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{batches} batches of {rows} rows over {len(sample)} tables per writer")
    with tempfile.TemporaryDirectory(prefix="bench-writers-") as tmp:
        sinks = {"deltalake": DeltaSink(Path(tmp) / "rs", app_id="b"),
                 "delta-spark": DeltaSparkSink(spark, str(Path(tmp) / "spark"), app_id="b")}
        times: dict[str, list[float]] = {name: [] for name in sinks}
        cpu = {name: [0.0, 0.0] for name in sinks}
        for batch_id in range(batches):
            for name, sink in sinks.items():
                py0, jvm0 = time.process_time(), _cpu_seconds(jvm_pid)
                started = time.perf_counter()
                sink.write_batch(batch_id, sample)
                times[name].append(time.perf_counter() - started)
                cpu[name][0] += time.process_time() - py0
                cpu[name][1] += _cpu_seconds(jvm_pid) - jvm0
    end_own_jvm(spark)
    print("| writer | seconds per batch, median | 90th percentile | driver Python CPU s | JVM CPU s |")
    print("|---|---|---|---|---|")
    for name, values in times.items():
        warm = values[2:] or values  # the first batches load classes and create the tables
        p90 = sorted(warm)[int(0.9 * (len(warm) - 1))]
        print(f"| {name} | {statistics.median(warm):.3f} | {p90:.3f} | {cpu[name][0]:.1f} | {cpu[name][1]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--steady", type=int, metavar="N", help="N steady-state batches per writer instead")
    ap.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                    help="run only these (repeatable; default: all)")
    args = ap.parse_args()
    if args.steady:
        steady(args.steady)
        return
    jars = ",".join(str(j) for j in (*spark_jars().delta, *spark_jars().kafka))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; {args.records:,} offset commits")
    results = {v: run(v, args.records, jars) for v in args.variant or VARIANTS}
    print("| variant | start to /ready | warm rate | peak PSS |")
    print("|---|---|---|---|")
    for variant, f in results.items():
        memory = re.sub(r" \(.*", "", f["memory"])
        print(f"| {variant} | {f['ready']} | {f['warm']} | {memory} |")


if __name__ == "__main__":
    main()
