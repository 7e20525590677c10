"""The job's own cost, without a broker: ``groupscope backfill`` over the 5M-commit corpus of real Kafka 4.0 segment
files, side by side in one run with reading the same records from the same files in one process (the segment
reader the backfill's executors use, alone: the bytes turned into records, what any consumer of them pays).

The catch-up benchmark (``bench_catchup.py``) measures the job against a plain consumer of librdkafka's mock broker,
which runs on the same two cores and slows as its partitions fill; here the input is the same files for both sides,
so the difference is what the job adds (Spark, shard steps, Delta). Usage::

    python benchmarks/bench_backfill.py                 # unpacks benchmarks/data/consumer-offsets-5M.tar.zst
    python benchmarks/bench_backfill.py DIR             # or a log directory of __consumer_offsets-N folders
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_catchup import batch_log, class_archive_state, loadavg, warm_rate  # noqa: E402
from bench_decode import unpack_default  # noqa: E402
from proctree import MemorySampler  # noqa: E402

from streaming.offline.committed import CommittedReader, log_end_offset  # noqa: E402
from streaming.offline.segments import find_segments  # noqa: E402


def read_reference(root: Path) -> tuple[int, float]:
    """Every read_committed record of every partition, read in this process: (records, seconds)."""
    by_partition: dict[int, list] = {}
    for segment in find_segments(root):
        by_partition.setdefault(segment.partition, []).append(segment)
    started = time.perf_counter()
    records = 0
    for partition, segments in sorted(by_partition.items()):
        reader = CommittedReader(segments, topic="__consumer_offsets", partition=partition)
        for batch in reader.read(0, log_end_offset(segments)):
            records += batch.num_rows
    return records, time.perf_counter() - started


def run_backfill(root: Path, work: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    """``groupscope backfill`` of ``root`` into ``work`` as its own process (``extra`` arguments, ``env`` added to
    the environment): seconds from start to exit, its summary line, the commits table's rows and peak memory."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "backfill", str(root), "--delta-path",
                             str(work / "delta"), "--checkpoint", str(work / "checkpoint"), *extra], cwd=REPO,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    sampler = MemorySampler(proc.pid).start()
    _, err = proc.communicate()
    seconds = time.monotonic() - started
    sampler.stop()
    if proc.returncode != 0:
        sys.exit(f"bench_backfill: backfill failed ({proc.returncode}): {err.strip()}")
    from deltalake import DeltaTable

    rows = DeltaTable(str(work / "delta" / "commits")).to_pyarrow_dataset().count_rows()
    return {"seconds": seconds, "batches": batch_log(work / "checkpoint"), "line": err.strip().splitlines()[-1],
            "commits": rows,
            "peak_mb": sampler.peak_total / 2**20,
            "by_kind": {k: v / 2**20 for k, v in sorted(sampler.peak_sample.items())},
            "peak_pss_mb": sampler.peak_pss_total / 2**20,
            "pss_by_kind": {k: v / 2**20 for k, v in sorted(sampler.peak_pss_sample.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", help="log directory (default: the 5M corpus, unpacked)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-backfill-") as tmp:
        work = Path(tmp)
        root = Path(args.root) if args.root else unpack_default(work) / "segments"
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; "
              f"load average {loadavg()}")
        records, ref_s = read_reference(root)
        print(f"reference: segment reader alone, one process: {records:,} records in {ref_s:.1f} s = "
              f"{records / ref_s / 1e3:,.0f}k records/s (load {loadavg()})")
        archive = class_archive_state()
        job = run_backfill(root, work)
        print(f"JVM class archive: {archive}")
        print(f"groupscope backfill, process start to exit: {job['seconds']:.1f} s = "
              f"{records / job['seconds'] / 1e3:,.0f}k records/s; ratio {job['seconds'] / ref_s:.1f}x "
              f"(load {loadavg()})")
        print(f"  {job['line']}")
        warm = warm_rate(job["batches"])
        if warm:
            print(f"  after the first batch (warm, no broker): {warm}")
        print(f"  commits table: {job['commits']:,} rows ({'all' if job['commits'] == records else 'NOT all'} "
              f"of {records:,})")
        print(f"  peak PSS (physical memory of the process tree) {job['peak_pss_mb']:,.0f} MB: "
              + ", ".join(f"{k} {v:,.0f} MB" for k, v in job["pss_by_kind"].items()))
        print(f"  peak RSS (shared pages counted per process) {job['peak_mb']:,.0f} MB: "
              + ", ".join(f"{k} {v:,.0f} MB" for k, v in job["by_kind"].items()))
        if job["commits"] != records:
            sys.exit(1)


if __name__ == "__main__":
    main()
