"""Decode throughput on real ``__consumer_offsets`` segments (5M offset commits written by Kafka 4.0.0).

Prints records/s for each layer: batch framing, typed decode (``decode_record``), the vectorized Arrow decode used
by Spark, and the whole ``groupscope decode --format kafka`` command two ways in the same run: the per-record path
(``decode_paths(..., exact=True)``, one ``LogRecord`` and one rendered line at a time) and the vectorized renderer
the command uses (``protocol.kafka_dump.KafkaDump``). Both write the same bytes to the same sink (``/dev/null`` by
default, or ``--out FILE``), in one process on one core. Usage::

    python benchmarks/bench_decode.py [SEGMENTS_DIR] [--out FILE] [--kafka-version V]
    python benchmarks/bench_decode.py --broker-records 5000000    # segments a real broker writes in this run

Without a directory it unpacks ``benchmarks/data/consumer-offsets-5M.tar.zst`` (described in
``benchmarks/data/README.md``: segments Kafka 4.0.0 wrote) into a temporary directory (needs the ``zstd`` and
``tar`` commands). With ``--broker-records N`` a real Kafka broker of ``--kafka-version`` (``tests/realkafka``) is
started in a temporary directory, N offset commits are produced into its ``__consumer_offsets`` and the broker is
shut down cleanly, and its own segment files are the input.

Kafka's own ``kafka-dump-log --offsets-decoder`` is the reference the command is compared with, in the same run: its
class (``DumpLogSegments``) runs from the jars ``tests/realkafka/install.py`` fetches with Maven (the newest cached
version unless ``--kafka-version``), with the JVM options Kafka's ``bin/kafka-run-class.sh`` gives it by default.
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

import pyarrow as pa  # noqa: E402

from protocol.arrow import decode_arrow  # noqa: E402
from protocol.batch import CorruptBatch, iter_batches  # noqa: E402
from protocol.codec import decode_record  # noqa: E402
from streaming.commands.decode import decode_paths  # noqa: E402

#: What ``bin/kafka-run-class.sh`` gives a tool's JVM when no KAFKA_HEAP_OPTS or KAFKA_JVM_PERFORMANCE_OPTS are set.
KAFKA_TOOL_JVM_OPTIONS = ("-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                          "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                          "-Djava.awt.headless=true")


def unpack_default(target: Path) -> Path:
    archive = REPO / "benchmarks" / "data" / "consumer-offsets-5M.tar.zst"
    if not archive.exists():
        sys.exit(f"bench_decode: {archive} not found; pass a segments directory")
    subprocess.run(f"zstd -q -d -c '{archive}' | tar xf - -C '{target}'", shell=True, check=True)
    return target


def rate(n: int, seconds: float) -> str:
    return f"{n:>10,} records in {seconds:6.2f} s = {n / seconds / 1e3:8.0f}k records/s"


def timed_decode(root: Path, sink: str, *, exact: bool) -> tuple[int, float, float]:
    """Records, wall seconds and CPU seconds of one ``--format kafka`` run into ``sink``."""
    with open(sink, "w", encoding="utf-8") as out:
        cpu, wall = time.process_time(), time.perf_counter()
        report = decode_paths([str(root)], "kafka", out, sys.stderr, exact=exact)
        out.flush()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if report.problems:
        sys.exit(f"bench_decode: {len(report.problems)} problems decoding {root}")
    return report.records, wall, cpu


def kafka_dump_log_command(install, files: list[Path]) -> list[str]:
    """``kafka-dump-log --offsets-decoder --files ...`` as Kafka's script runs it, from the Maven jars."""
    from tests.realkafka.install import java_binary

    return [java_binary(), *KAFKA_TOOL_JVM_OPTIONS, "-cp", f"{install.lib}/*", install.dump_log_class,
            "--offsets-decoder", "--files", ",".join(map(str, files))]


def broker_segments(install, records: int, target: Path) -> Path:
    """Starts a real broker in ``target``, produces ``records`` offset commits into its ``__consumer_offsets``
    (client id ``__admin_client``, which Kafka lets write to internal topics), stops it cleanly and returns its log
    directory."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_catchup import prepare_real_broker
    from bench_job import load_backlog

    from tests.realkafka.broker import KafkaBroker

    broker = KafkaBroker(install, target, heap="1g")
    broker.start()
    try:
        prepare_real_broker(broker.bootstrap, 10, 50)
        seconds = load_backlog(broker.bootstrap, records, 5000, 10, 50, producer={"client.id": "__admin_client"})
    finally:
        broker.stop()
    print(f"broker: Apache Kafka {install.version}; {records:,} offset commits produced in {seconds:.1f} s, "
          f"then a clean shutdown")
    return broker.data_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("segments", nargs="?", help="directory holding __consumer_offsets-N folders")
    parser.add_argument("--limit-files", type=int, default=0, help="use only the first N segment files")
    parser.add_argument("--out", default=os.devnull, help="where the decode command writes (default: /dev/null)")
    parser.add_argument("--kafka-version", help="the Kafka whose kafka-dump-log is the reference (default: the "
                        "newest cached)")
    parser.add_argument("--broker-records", type=int, default=0,
                        help="decode the segments a real broker writes for this many offset commits, in this run")
    args = parser.parse_args()
    from tests.realkafka.install import kafka_install

    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_catchup import newest_cached_kafka

    install = kafka_install(args.kafka_version or newest_cached_kafka())
    tmp = None
    if args.segments:
        root = Path(args.segments)
    elif args.broker_records:
        tmp = tempfile.TemporaryDirectory(prefix="bench-decode-")
        root = broker_segments(install, args.broker_records, Path(tmp.name) / "kafka")
    else:
        tmp = tempfile.TemporaryDirectory()
        root = unpack_default(Path(tmp.name))
    files = sorted(root.rglob("__consumer_offsets-*/*.log"))
    if not files:
        sys.exit(f"bench_decode: no __consumer_offsets-N/*.log under {root}")
    root = files[0].parent.parent  # the broker log directory (the archive unpacks to segments/)
    if args.limit_files:
        subset = tempfile.TemporaryDirectory()
        for f in [f for f in files if f.stat().st_size][: args.limit_files]:
            (Path(subset.name) / f.parent.name).mkdir(exist_ok=True)
            os.symlink(f, Path(subset.name) / f.parent.name / f.name)
        files = sorted(Path(subset.name).rglob("__consumer_offsets-*/*.log"))
        root = Path(subset.name)
    datas = [f.read_bytes() for f in files]
    size = sum(map(len, datas))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f} at start")
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
    del keys, values, columns, datas

    sink = "/dev/null" if args.out == os.devnull else args.out
    print(f"\ngroupscope decode --format kafka {root} > {sink}  (one process, one core; wall clock, CPU in brackets)")
    runs = {}
    for name, exact in (("per-record path (exact=True)", True), ("vectorized path (the command)", False)):
        records, wall, cpu = timed_decode(root, args.out, exact=exact)
        runs[exact] = (records, wall)
        print(f"  {name:31s}", rate(records, wall), f"  [CPU {records / cpu / 1e3:6.0f}k records/s]")
    (old_n, old_s), (new_n, new_s) = runs[True], runs[False]
    new_rate = new_n / new_s
    print(f"  vectorized / per-record: {new_rate / (old_n / old_s):.1f}x")

    command = kafka_dump_log_command(install, files)
    with open(sink, "w", encoding="utf-8") as out:
        started = os.times()
        t = time.perf_counter()
        subprocess.run(command, check=True, stdout=out)
        kafka_s = time.perf_counter() - t
        ended = os.times()
    kafka_cpu = (ended.children_user - started.children_user) + (ended.children_system - started.children_system)
    kafka_rate = new_n / kafka_s
    print(f"  kafka-dump-log --offsets-decoder (Kafka {install.version}, {install.dump_log_class}, JVM options of "
          f"kafka-run-class.sh):\n  {'':31s}", rate(new_n, kafka_s),
          f"  [CPU {new_n / kafka_cpu / 1e3:6.0f}k records/s, {kafka_cpu / kafka_s:.1f} cores]")
    print(f"  vectorized path / kafka-dump-log, same run, wall clock: {new_rate / kafka_rate:.1f}x")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (other work on the machine slows the wall-clock rates)")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
