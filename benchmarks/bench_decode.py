"""Decode throughput on real ``__consumer_offsets`` segments (5M offset commits written by Kafka 4.0.0).

Prints records/s for each layer: batch framing, typed decode (``decode_record``), the vectorized Arrow decode used
by Spark, and the whole ``groupscope decode --format kafka`` command. Usage::

    python benchmarks/bench_decode.py [SEGMENTS_DIR]

Without an argument it unpacks ``benchmarks/data/consumer-offsets-5M.tar.zst`` (described in
``benchmarks/data/README.md``) into a temporary directory (needs the ``zstd`` and ``tar`` commands).
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from protocol.arrow import decode_arrow  # noqa: E402
from protocol.batch import CorruptBatch, iter_batches  # noqa: E402
from protocol.codec import decode_record  # noqa: E402
from streaming.commands.decode import decode_paths  # noqa: E402


def unpack_default(target: Path) -> Path:
    archive = REPO / "benchmarks" / "data" / "consumer-offsets-5M.tar.zst"
    if not archive.exists():
        sys.exit(f"bench_decode: {archive} not found; pass a segments directory")
    subprocess.run(f"zstd -q -d -c '{archive}' | tar xf - -C '{target}'", shell=True, check=True)
    return target


def rate(n: int, seconds: float) -> str:
    return f"{n:>10,} records in {seconds:6.2f} s = {n / seconds / 1e3:8.0f}k records/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("segments", nargs="?", help="directory holding __consumer_offsets-N folders")
    parser.add_argument("--limit-files", type=int, default=0, help="use only the first N segment files")
    args = parser.parse_args()
    tmp = None
    if args.segments:
        root = Path(args.segments)
    else:
        tmp = tempfile.TemporaryDirectory()
        root = unpack_default(Path(tmp.name))
    files = sorted(root.rglob("__consumer_offsets-*/*.log"))
    if args.limit_files:
        files = files[: args.limit_files]
    datas = [f.read_bytes() for f in files]
    size = sum(map(len, datas))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"input: {len(files)} segment files, {size / 1e6:.0f} MB")

    t = time.perf_counter()
    keys, values, n = [], [], 0
    for data in datas:
        for batch in iter_batches(data):
            if isinstance(batch, CorruptBatch):
                sys.exit(f"corrupt batch: {batch}")
            for rec in batch.records:
                keys.append(rec.key)
                values.append(rec.value)
    n = len(keys)
    print("framing (iter_batches, CRC checked):  ", rate(n, time.perf_counter() - t))

    t = time.perf_counter()
    for k, v in zip(keys, values):
        decode_record(k, v)
    print("typed decode (decode_record):         ", rate(n, time.perf_counter() - t))

    # Spark hands the decoder Arrow binary columns; build them outside the timed part.
    chunk = 100_000
    columns = [(pa.array(keys[i : i + chunk], pa.binary()), pa.array(values[i : i + chunk], pa.binary()))
               for i in range(0, n, chunk)]
    t = time.perf_counter()
    rows = 0
    for key_column, value_column in columns:
        rows += decode_arrow(key_column, value_column).num_rows
    print("Arrow batch decode (decode_arrow):    ", rate(rows, time.perf_counter() - t))

    t = time.perf_counter()
    sink = io.StringIO()
    report = decode_paths([str(root)], "kafka", sink, sys.stderr)
    print("groupscope decode --format kafka:     ", rate(report.records, time.perf_counter() - t))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
