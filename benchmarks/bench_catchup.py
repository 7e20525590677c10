"""Cold catch-up of a ``__consumer_offsets`` backlog: ``groupscope run`` against a plain consumer, in one run.

A broker is loaded with N offset commits (default 5,000,000). By default it is a real Apache Kafka broker (one KRaft
node from ``tests/realkafka``, the newest Kafka version whose jars are cached, on free loopback ports in a temporary
directory, stopped at the end); ``--bootstrap`` names an existing, empty one instead, and ``--kafka mock`` uses a
librdkafka mock cluster in this process as earlier versions of this script did. Kafka accepts produce requests to
``__consumer_offsets`` only from the client id ``__admin_client``, which the loader uses, so the backlog is written
at producer speed rather than one commit request at a time. Then, against the same broker and in the same run:

(a) the reference: a plain ``confluent_kafka.Consumer`` (``isolation.level=read_committed``) assigned every
    ``__consumer_offsets`` partition from offset 0 reads until each partition reaches its high watermark, touching
    the key and value of every message. It runs twice: with librdkafka's defaults and with the fetch settings the
    job's own reader uses (``fetch.queue.backoff.ms=0``, a larger fetch queue); the faster of the two is the
    reference, so the job is compared against the best a single consumer did;
(b) ``groupscope run`` as its own process with its default settings (only the broker, the checkpoint, the Delta
    path and the metrics port are given), timed from process start until ``/ready`` answers 200. The checkpoint's
    offset and commit logs say when each micro-batch was planned and when it finished; the resident memory of the
    process tree (driver Python, the JVM, Spark's Python workers) is sampled every 0.25 s from ``/proc``, and so is
    the broker's CPU time (the broker's JVM, or the mock broker's thread), per micro-batch.

At the end the ``commits`` Delta table must hold exactly N rows. Usage::

    python benchmarks/bench_catchup.py                       # 5M records, real Kafka, reference and job
    python benchmarks/bench_catchup.py --records 1000000 --job-only
    python benchmarks/bench_catchup.py --bootstrap HOST:PORT  # an existing, empty broker
    python benchmarks/bench_catchup.py --kafka mock           # librdkafka's mock cluster
    GROUPSCOPE_SOURCE__READ_TASKS=4 python benchmarks/bench_catchup.py   # settings reach the job's environment

The backlog is 5,000 groups of 10 partitions, spread evenly over the ``__consumer_offsets`` partitions (50 on a
real broker, Kafka's default; 80 on the mock broker, which keeps a bounded log per partition and drops the oldest
message sets past a few MB). Before anything is timed the script checks that every partition still starts at
offset 0 and that the high watermarks add up to N.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

from bench_job import load_backlog  # noqa: E402
from proctree import (PAGE, MemorySampler, ProcessCpuSampler, ThreadCpuSampler, TreeCpuSampler,  # noqa: E402
                      process_cpu_seconds, thread_cpu_seconds)
from streaming.kafka.mock_cluster import MockCluster  # noqa: E402

OFFSETS_TOPIC = "__consumer_offsets"
HEARTBEAT_TOPIC = "groupscope-heartbeat"  # the default heartbeat.topic: the job refuses to start without it
BROKER_THREAD = "rdk:mock"  # librdkafka's name for the mock cluster's one thread (it runs in this process)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ---- the backlog ---------------------------------------------------------------------------------------------


def check_backlog(bootstrap: str, partitions: int, records: int) -> dict[int, int]:
    """High watermark per ``__consumer_offsets`` partition; raises if the broker dropped any record (the mock
    broker trims its log silently, which would make every figure below meaningless)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check", "log_level": 3})
    try:
        highs, dropped = {}, []
        for p in range(partitions):
            low, high = c.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=30)
            if low != 0:
                dropped.append((p, low))
            highs[p] = high
    finally:
        c.close()
    if dropped:
        raise SystemExit(f"the mock broker dropped records: earliest offsets {dropped[:5]}... (use more "
                         "--offsets-partitions or fewer --records)")
    if sum(highs.values()) != records:
        raise SystemExit(f"backlog holds {sum(highs.values()):,} records, expected {records:,}")
    return highs


# ---- (a) the reference ---------------------------------------------------------------------------------------


class Broker:
    """Where the backlog lives: its bootstrap address, what it is, and how its CPU time is read."""

    def __init__(self, bootstrap: str, description: str, *, pid: int | None = None, mock: bool = False) -> None:
        self.bootstrap, self.description, self.pid, self.mock = bootstrap, description, pid, mock

    def cpu_seconds(self) -> float | None:
        if self.mock:
            return thread_cpu_seconds(BROKER_THREAD)
        return None if self.pid is None else process_cpu_seconds(self.pid)

    def cpu_sampler(self):
        if self.mock:
            return ThreadCpuSampler(BROKER_THREAD).start()
        return None if self.pid is None else ProcessCpuSampler(pid=self.pid).start()


def newest_cached_kafka() -> str:
    """The newest Kafka version whose jars are in the cache (else the newest version the tests run against)."""
    from tests.realkafka.install import DEFAULT_VERSIONS, cache_root

    def version(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    cached = [p.name for p in cache_root().glob("*") if (p / "lib").is_dir() and p.name[:1].isdigit()]
    return max(cached or DEFAULT_VERSIONS, key=version)


@contextlib.contextmanager
def open_broker(args, workdir: Path):
    """The broker of this run, with the heartbeat and events topics created and ``__consumer_offsets`` ready."""
    if args.kafka == "mock":
        with MockCluster(1) as mc:
            mc.create_topic(OFFSETS_TOPIC, args.offsets_partitions)
            mc.create_topic(HEARTBEAT_TOPIC, 1)
            mc.create_topic("bench-events", args.partitions)
            yield Broker(mc.bootstrap_servers, "librdkafka mock cluster (in this process)", mock=True)
        return
    broker = None
    if args.bootstrap:
        bootstrap, description = args.bootstrap, f"existing broker at {args.bootstrap}"
    else:
        from tests.realkafka.broker import KafkaBroker
        from tests.realkafka.install import kafka_install

        broker = KafkaBroker(kafka_install(args.kafka_version), workdir / "kafka", heap=args.broker_heap)
        broker.start()
        bootstrap = broker.bootstrap
        description = (f"Apache Kafka {broker.version}, one KRaft node (broker and controller), heap "
                       f"{args.broker_heap}, log directory on {workdir}")
    try:
        prepare_real_broker(bootstrap, args.partitions, args.offsets_partitions)
        yield Broker(bootstrap, description, pid=None if broker is None else broker._proc.pid)
    finally:
        if broker is not None:
            broker.stop()


def prepare_real_broker(bootstrap: str, partitions: int, offsets_partitions: int) -> None:
    """Creates the topics the job and the backlog need, and has Kafka create ``__consumer_offsets`` (a coordinator
    lookup does; nothing is written to it) with every partition led."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for future in admin.create_topics([NewTopic(HEARTBEAT_TOPIC, 1, 1),
                                       NewTopic("bench-events", partitions, 1)]).values():
        try:
            future.result(60)
        except Exception as exc:  # noqa: BLE001 - an existing broker may have them
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    deadline = time.monotonic() + 120
    while True:
        with contextlib.suppress(Exception):
            admin.describe_consumer_groups(["bench-coordinator-lookup"])["bench-coordinator-lookup"].result(10)
        topic = admin.list_topics(OFFSETS_TOPIC, timeout=10).topics.get(OFFSETS_TOPIC)
        if topic is not None and topic.error is None and len(topic.partitions) == offsets_partitions and all(
                p.leader >= 0 for p in topic.partitions.values()):
            return
        if time.monotonic() > deadline:
            have = None if topic is None or topic.error else len(topic.partitions)
            raise SystemExit(f"{OFFSETS_TOPIC} has {have} partitions, expected {offsets_partitions} "
                             "(--offsets-partitions must match the broker's offsets.topic.num.partitions)")
        time.sleep(0.5)


def read_all(bootstrap: str, highs: dict[int, int], *, tuned: bool, broker: Broker) -> tuple[float, int, float]:
    """Seconds a single consumer takes to read every record up to the high watermarks, touching key and value; the
    count it read; the CPU seconds the broker spent meanwhile (nan if unknown)."""
    broker_cpu = broker.cpu_seconds()
    conf = {"bootstrap.servers": bootstrap, "group.id": "bench-reference", "enable.auto.commit": False,
            "isolation.level": "read_committed", "log_level": 3}
    if tuned:  # what streaming.kafka.client.consumer_config adds for the job's range reads
        conf.update({"fetch.queue.backoff.ms": 0, "queued.max.messages.kbytes": 65536})
    started = time.perf_counter()
    c = Consumer(conf)
    remaining = {p for p, h in highs.items() if h > 0}
    c.assign([TopicPartition(OFFSETS_TOPIC, p, 0) for p in sorted(remaining)])
    count = touched = 0
    try:
        while remaining:
            msgs = c.consume(num_messages=10_000, timeout=1.0)
            for m in msgs:
                if m.error() is not None:
                    continue
                key, value = m.key(), m.value()
                touched += len(key) + len(value)
                count += 1
                p = m.partition()
                if m.offset() >= highs[p] - 1:
                    remaining.discard(p)
    finally:
        c.close()
    seconds = time.perf_counter() - started
    return seconds, count, float("nan") if broker_cpu is None else broker.cpu_seconds() - broker_cpu


# ---- (b) the job -------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


def batch_log(checkpoint: Path) -> list[dict]:
    """Per micro-batch: when Spark planned it (its offset log entry) and finished it (its commit log entry), and
    how many ``__consumer_offsets`` records it covered."""
    out, previous = [], None
    for f in sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda f: int(f.name)):
        lines = f.read_text().splitlines()
        ends = json.loads(lines[-1]).get(OFFSETS_TOPIC, {})
        total = sum(ends.values())
        done = checkpoint / "commits" / f.name
        out.append({"batch": int(f.name), "planned": f.stat().st_mtime,
                    "done": done.stat().st_mtime if done.exists() else None,
                    "records": total - (previous if previous is not None else 0)})
        previous = total
    return out


def run_job(bootstrap: str, tmp: Path, records: int, timeout_s: float, log_path: Path, broker_cpu: Broker,
            env_over: dict[str, str] | None = None) -> dict:
    port = _free_port()
    cp, delta = tmp / "checkpoint", tmp / "delta"
    cmd = [str(Path(sys.executable).parent / "groupscope"), "run", "--bootstrap", bootstrap, "--checkpoint", str(cp),
           "--delta-path", str(delta), "--metrics-port", str(port)]
    env = {**os.environ, **(env_over or {})}
    with open(log_path, "w") as log:
        started_wall, started = time.time(), time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
        sampler = MemorySampler(proc.pid).start()
        cpu = TreeCpuSampler(proc.pid).start()
        broker = broker_cpu.cpu_sampler()
        ready_s = None
        loads = [loadavg()]
        try:
            while time.perf_counter() - started < timeout_s:
                if proc.poll() is not None:
                    raise SystemExit(f"groupscope run exited with {proc.returncode}; see {log_path}")
                status, _ = _get(f"http://127.0.0.1:{port}/ready")
                if status == 200:
                    ready_s = time.perf_counter() - started
                    break
                time.sleep(0.1)
            loads.append(loadavg())
            _, metrics = _get(f"http://127.0.0.1:{port}/metrics")
        finally:
            sampler.stop()
            cpu.stop()
            if broker is not None:
                broker.stop()
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if ready_s is None:
        raise SystemExit(f"not ready after {timeout_s:.0f} s; see {log_path}")
    batches = batch_log(cp)
    for b in batches:
        if b["done"] is not None:
            b["broker_cpu"] = float("nan") if broker is None else broker.between(b["planned"], b["done"])
        b["planned"] -= started_wall
        b["done"] = None if b["done"] is None else b["done"] - started_wall
    from deltalake import DeltaTable

    rows = DeltaTable(str(delta / "commits")).to_pyarrow_dataset().count_rows()
    decoded = next((float(line.split()[-1]) for line in metrics.splitlines()
                    if line.startswith("groupscope_records_decoded_total")), None)
    return {"ready_s": ready_s, "batches": batches, "commit_rows": rows, "memory": sampler, "loads": loads,
            "decoded": decoded, "cpu": cpu.by_kind()}


def warm_batches(batches: list[dict]) -> tuple[int, float]:
    """``(records, seconds of batches)`` of the finished batches after the first one with records: the first
    carries the start-up (Python workers, the tables' first commits), which a long-running job pays once."""
    warm = [b for b in batches if b["records"] > 0][1:]
    warm = [b for b in warm if b["done"] is not None]
    return sum(b["records"] for b in warm), sum(b["done"] - b["planned"] for b in warm)


def warm_rate(batches: list[dict]) -> str:
    """:func:`warm_batches` in words: records, seconds of batches, records/s ("" if none finished)."""
    records, seconds = warm_batches(batches)
    if not records:
        return ""
    return f"{records:,} records in {seconds:.1f} s of batches = {records / seconds:,.0f} records/s"


def class_archive_state() -> str:
    """Whether the job's JVM will start from a class archive an earlier run recorded (see
    streaming.spark.class_archive): a first run on a machine records it and starts ~2.5 s slower."""
    from streaming.spark.class_archive import ClassArchive

    if os.environ.get("GROUPSCOPE_SPARK__CLASS_ARCHIVE", "").lower() in ("false", "0", "no"):
        return "off (GROUPSCOPE_SPARK__CLASS_ARCHIVE)"
    archive = ClassArchive.for_driver()
    if archive is None:
        return "not available for this Java"
    return "mapped (recorded by an earlier run)" if archive.recording is None else "none yet: this run records it"


def compare_variants(args, broker, tmp: Path, ref: float | None) -> None:
    """The default job and each ``--variant`` in turn, ``--rounds`` times, on the same backlog: one line each."""
    variants = [("default", {})]
    for spec in args.variant:
        name, _, assignments = spec.partition(":")
        variants.append((name, dict(a.split("=", 1) for a in assignments.split(",") if a)))
    print("| run | variant | start to /ready | / reference | first batch planned | warm batches | peak PSS | "
          "CPU of the process tree | commits rows |")
    print("|---|---|---|---|---|---|---|---|---|")
    for round_ in range(args.rounds):
        for name, env_over in variants:
            where = tmp / f"run-{round_}-{name}"
            where.mkdir()
            job = run_job(broker.bootstrap, where, args.records, args.timeout, where / "job.log", broker, env_over)
            data = [b for b in job["batches"] if b["records"] > 0]
            records, seconds = warm_batches(data)
            cpu = job["cpu"]
            ratio = "-" if ref is None else f"{job['ready_s'] / ref:.2f}x"
            print(f"| {round_ + 1} | {name} | {job['ready_s']:.1f} s | {ratio} | "
                  f"{data[0]['planned']:.1f} s | {records / seconds if seconds else float('nan'):,.0f}/s | "
                  f"{job['memory'].peak_pss_total / 2**20:,.0f} MB | {sum(cpu.values()):.1f} s "
                  f"({', '.join(f'{k} {v:.1f}' for k, v in sorted(cpu.items()))}) | "
                  f"{'= backlog' if job['commit_rows'] == args.records else job['commit_rows']} |", flush=True)


# ---- report ----------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--groups", type=int, default=5000)
    ap.add_argument("--partitions", type=int, default=10, help="partitions per group (of topic bench-events)")
    ap.add_argument("--kafka", choices=("real", "mock"), default="real",
                    help="real: an Apache Kafka broker (started here unless --bootstrap); mock: librdkafka's mock")
    ap.add_argument("--bootstrap", help="an existing, empty Kafka broker to use instead of starting one (its CPU "
                    "time is not read: the broker figures print as nan)")
    ap.add_argument("--kafka-version", help="the Kafka version to start (default: the newest cached)")
    ap.add_argument("--broker-heap", default="1g", help="the started broker's JVM heap")
    ap.add_argument("--offsets-partitions", type=int,
                    help="partitions of __consumer_offsets (default: 50 on a real broker, 80 on the mock)")
    ap.add_argument("--reference-only", action="store_true")
    ap.add_argument("--job-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800.0, help="give up on /ready after this many seconds")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                    help="compare the default job with jobs run under these environment settings, on the same "
                         "backlog, in turn, --rounds times; one summary line per run")
    ap.add_argument("--rounds", type=int, default=1, help="with --variant: how many times each job runs")
    ap.add_argument("--log", help="keep the job's log in this file (default: a temporary file, printed on failure)")
    args = ap.parse_args()
    if args.offsets_partitions is None:
        args.offsets_partitions = 80 if args.kafka == "mock" else 50
    if args.kafka == "real" and not args.bootstrap and not args.kafka_version:
        args.kafka_version = newest_cached_kafka()
    overrides = {k: v for k, v in os.environ.items() if k.startswith("GROUPSCOPE_")}
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{os.sysconf('SC_PHYS_PAGES') * PAGE / 2**30:.0f} GB, Python {platform.python_version()}; "
          f"settings from the environment: {overrides or 'none (defaults)'}")
    with tempfile.TemporaryDirectory(prefix="bench-catchup-") as tmp_name, \
            open_broker(args, Path(tmp_name)) as broker:
        tmp = Path(tmp_name)
        print(f"broker: {broker.description}; load average {loadavg()}")
        secs = load_backlog(broker.bootstrap, args.records, args.groups, args.partitions, args.offsets_partitions,
                            producer=None if broker.mock else {"client.id": "__admin_client"})
        highs = check_backlog(broker.bootstrap, args.offsets_partitions, args.records)
        print(f"backlog: {args.records:,} offset commits ({args.groups} groups x {args.partitions} partitions) over "
              f"{args.offsets_partitions} partitions of {OFFSETS_TOPIC} ({min(highs.values()):,}-"
              f"{max(highs.values()):,} each, all from offset 0), produced in {secs:.1f} s")
        ref = None
        if not args.job_only:
            runs = {}
            for tuned in (False, True):
                load = loadavg()
                seconds, count, broker_cpu = read_all(broker.bootstrap, highs, tuned=tuned, broker=broker)
                if count != args.records:
                    raise SystemExit(f"reference read {count:,} records, expected {args.records:,}")
                runs["job's fetch settings" if tuned else "librdkafka defaults"] = (seconds, load, broker_cpu)
            for name, (seconds, load, broker_cpu) in runs.items():
                print(f"reference ({name}): {seconds:.2f} s = {args.records / seconds:,.0f} records/s "
                      f"(load average {load}); the broker {broker_cpu:.1f} CPU s "
                      f"({broker_cpu / seconds:.0%} of a core)")
            ref = min(s for s, _, _ in runs.values())
        if args.reference_only:
            return
        if args.variant:
            compare_variants(args, broker, tmp, ref)
            return
        log_path = Path(args.log) if args.log else tmp / "job.log"
        archive = class_archive_state()
        job = run_job(broker.bootstrap, tmp, args.records, args.timeout, log_path, broker)
        n = args.records
        ready = job["ready_s"]
        print(f"load average at job start / at ready: {job['loads'][0]} / {job['loads'][1]}")
        print(f"JVM class archive: {archive}")
        print()
        print("| measure | figure |")
        print("|---|---|")
        if ref is not None:
            print(f"| reference: plain consumer, read_committed, key and value touched | {ref:.1f} s = "
                  f"{n / ref:,.0f} records/s |")
        print(f"| `groupscope run`: process start to `/ready` 200 | {ready:.1f} s = {n / ready:,.0f} records/s |")
        if ref is not None:
            print(f"| ratio job / reference | {ready / ref:.2f}x (target <= 2x) |")
        data = [b for b in job["batches"] if b["records"] > 0]
        if data:
            first = data[0]
            print(f"| first batch planned / finished after start | {first['planned']:.1f} s / "
                  f"{(first['done'] or float('nan')):.1f} s (target: planned <= 5 s) |")
            last_done = max(b["done"] for b in data if b["done"] is not None)
            span = last_done - first["planned"]
            print(f"| batches with records | {len(data)}: first planned to last finished {span:.1f} s = "
                  f"{n / span:,.0f} records/s |")
            warm = warm_rate(data)
            if warm:
                print(f"| after the first batch (warm) | {warm} (target >= 500k) |")
        mem = job["memory"]
        kinds = sorted(mem.peak_by_kind)
        print(f"| peak PSS, process tree (one sample, summed: the physical memory it holds) | "
              f"{mem.peak_pss_total / 2**20:,.0f} MB "
              f"({', '.join(f'{k} {mem.peak_pss_sample.get(k, 0) / 2**20:,.0f}' for k in kinds)}) "
              f"(target <= 1.2 GB) |")
        print(f"| peak RSS, process tree (one sample, summed; counts shared pages once per process) | "
              f"{mem.peak_total / 2**20:,.0f} MB "
              f"({', '.join(f'{k} {mem.peak_sample.get(k, 0) / 2**20:,.0f}' for k in kinds)}) |")
        print(f"| peak RSS per process kind (each its own peak) | "
              f"{', '.join(f'{k} {mem.peak_by_kind[k] / 2**20:,.0f} MB' for k in kinds)}; "
              f"up to {mem.peak_workers} Python workers; {mem.samples} samples |")
        cpu = job["cpu"]
        print(f"| CPU of the job's process tree, start to `/ready` (sampled from /proc: a lower bound) | "
              f"{sum(cpu.values()):.1f} s = {sum(cpu.values()) / ready:.2f} cores on average "
              f"({', '.join(f'{k} {v:.1f}' for k, v in sorted(cpu.items()))}) |")
        print(f"| `commits` Delta table rows | {job['commit_rows']:,} "
              f"({'equal to' if job['commit_rows'] == n else 'NOT equal to'} the backlog) |")
        print()
        print("batches (seconds after process start; the broker: CPU seconds during the batch, share of "
              "one core):")
        for b in job["batches"]:
            done = b["done"]
            print(f"  batch {b['batch']}: {b['records']:>9,} records, planned {b['planned']:6.1f}, "
                  + (f"done {done:6.1f} ({done - b['planned']:.1f} s); broker {b['broker_cpu']:.1f} CPU s "
                     f"({b['broker_cpu'] / max(done - b['planned'], 1e-9):.0%})"
                     if done is not None else "not finished"))
        if job["commit_rows"] != n:
            raise SystemExit("the commits table does not hold every record")


if __name__ == "__main__":
    main()
