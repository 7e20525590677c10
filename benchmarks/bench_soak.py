"""Soak: memory of a long-running ``groupscope run`` under a steady workload with periodic rebalances.

A librdkafka mock cluster (a real Kafka-protocol broker over TCP) and the workload simulator run in this process:
the ``steady`` scenario's groups commit every second, and a three-member group is restarted one member at a time
every ``--rebalance-every`` seconds (six rebalances each time). ``groupscope run`` runs as a separate process, as in
production, so the broker's own memory is not counted. Every ``--interval`` seconds the resident memory (RSS) of
the job's processes is sampled: the driver's Python process, the JVM it starts, and Spark's Python workers (the
worker daemon and its forked workers, summed; forked workers share pages with the daemon, so the sum overstates
what they use together). At the end a table and, per process, whether memory levels off: the growth rate (least
squares, MB per minute) over the second half of the samples against the first half. The workers' proportional set
size (PSS, shared pages split among the processes sharing them) is printed beside the sum of their RSS.

Usage::

    python benchmarks/bench_soak.py                 # 60 minutes
    python benchmarks/bench_soak.py --minutes 3     # the short variant
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import threading
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from confluent_kafka import Producer  # noqa: E402

from proctree import kind, pss_bytes, rss_bytes, tree  # noqa: E402
from protocol import partition_for  # noqa: E402
from protocol.builders import new_offset_commit  # noqa: E402
from protocol.codec import encode_record  # noqa: E402
from streaming.kafka.mock_cluster import MockCluster  # noqa: E402
from streaming.simulator import ConsumerConfig, SimConsumer, Simulation, SimulationRunner  # noqa: E402
from streaming.simulator.kafka_sink import KafkaSink  # noqa: E402
from streaming.simulator.topics import TopicSpec  # noqa: E402

ROLLING_GROUP = "soak-rolling"
ROLLING_TOPIC = "soak-payments"
SCALE_TOPIC = "soak-scale"


# ---- processes ---------------------------------------------------------------------------------------------------

def sample_memory(driver: int) -> dict[str, float]:
    """MB of the driver, the JVM below it and Spark's Python processes (workers, daemons): RSS, and PSS (shared
    pages split among the processes sharing them), whose sum over the tree is the memory the job holds."""
    mem = {"driver": 0.0, "jvm": 0.0, "workers": 0.0, "workers_pss": 0.0, "total_pss": 0.0, "n_workers": 0}
    for pid in tree(driver):
        k = kind(pid, driver)
        rss, pss = rss_bytes(pid) / 2**20, pss_bytes(pid) / 2**20
        mem["total_pss"] += pss
        if k == "driver (Python)":
            mem["driver"] += rss
        elif k == "JVM":
            mem["jvm"] += rss
        elif k == "Python workers":
            mem["workers"] += rss
            mem["workers_pss"] += pss
            mem["n_workers"] += 1
    return mem


# ---- metrics -----------------------------------------------------------------------------------------------------

def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            return resp.read().decode()
    except OSError:
        return ""


def metric_sum(text: str, name: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M))


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of ``(minute, MB)`` points, MB per minute."""
    if len(points) < 2:
        return 0.0
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def levels_off(points: list[tuple[float, float]]) -> tuple[float, float, str]:
    """First-half and second-half growth rates, and the verdict: it levels off when the second half grows by less
    than 1 MB per minute or at most half as fast as the first half."""
    half = len(points) // 2
    first, second = slope(points[:half + 1]), slope(points[half:])
    flat = second < 1.0 or (first > 0 and second <= 0.5 * first)
    return first, second, "levels off" if flat else "still growing"


# ---- the run -----------------------------------------------------------------------------------------------------

def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def schedule_rolling_restarts(sim: Simulation, every_s: float, until_s: float) -> None:
    """A three-member group (range assignor, librdkafka's commit() every second) restarted one member at a time
    every ``every_s`` seconds: each member closes and its new process starts 2 s later, 10 s apart."""
    members = [sim.start_client(SimConsumer(sim, ConsumerConfig(
        group=ROLLING_GROUP, client_id=f"{ROLLING_GROUP}-m{i + 1}", topics=(ROLLING_TOPIC,), assignor="range",
        commit="changed")), 0.2 * i) for i in range(3)]
    t = every_s
    while t < until_s:
        for i, m in enumerate(members):
            def restart(m=m):
                m.close()
                sim.sched.after(2000, m.start)
            sim.at(t + 10 * i, restart)
        t += every_s


class ScaleLoad:
    """``groups`` consumer groups on one ``partitions``-partition topic, each committing every partition every
    ``commit_every_s`` seconds (spread evenly over that interval, a round of groups each second), at the topic's
    end offsets, which move by one record per partition each second. Written straight to ``__consumer_offsets``
    as Kafka's coordinator writes them (groups that commit without a membership, as many monitoring and batch
    consumers do): the simulator's per-client model would need more CPU than the two cores have beside the job."""

    def __init__(self, bootstrap: str, groups: int, partitions: int, commit_every_s: float, offsets_partitions: int,
                 topic: str = SCALE_TOPIC) -> None:
        self.groups, self.partitions, self.every = groups, partitions, commit_every_s
        self.offsets_partitions, self.topic = offsets_partitions, topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10000,
                                  "queue.buffering.max.messages": 2_000_000, "log_level": 3})
        self.commits = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()

    def start(self) -> "ScaleLoad":
        self._thread = threading.Thread(target=self._run, name="scale-load", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.producer.flush(30)

    def _produce(self, topic: str, key: bytes | None, value: bytes, partition: int, ts: int) -> None:
        while True:
            try:
                self.producer.produce(topic, key=key, value=value, partition=partition, timestamp=ts)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _run(self) -> None:
        try:
            per_tick = max(1, round(self.groups / self.every))
            end = 0  # every partition of the topic has the same end offset: one record per partition per second
            next_group = 0
            tick = time.monotonic()
            while not self._stop.is_set():
                now_ms = int(time.time() * 1000)
                for p in range(self.partitions):
                    self._produce(self.topic, None, b"x", p, now_ms)
                end += 1
                for _ in range(per_tick):
                    group = f"scale-g{next_group}"
                    where = partition_for(group, self.offsets_partitions)
                    for p in range(self.partitions):
                        key, value = encode_record(new_offset_commit(group, self.topic, p, end,
                                                                     commit_timestamp=now_ms))
                        self._produce("__consumer_offsets", key, value, where, now_ms)
                    self.commits += self.partitions
                    next_group = (next_group + 1) % self.groups
                self.producer.poll(0)
                tick += 1.0
                self._stop.wait(max(0.0, tick - time.monotonic()))
        except BaseException as exc:  # noqa: BLE001 - reported by the sampling loop
            self.error = exc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="how long to sample after the warm-up")
    ap.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--rebalance-every", type=float, default=300.0, help="seconds between rolling restarts")
    ap.add_argument("--keep", metavar="DIR", help="keep the job's folder (log, checkpoint, tables) here")
    ap.add_argument("--groups", type=int, default=0,
                    help="also run this many commit-only groups on one topic (e.g. 10000; default none)")
    ap.add_argument("--partitions", type=int, default=100, help="partitions of that topic (every group commits all)")
    ap.add_argument("--commit-every", type=float, default=60.0, help="seconds between a group's commits")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB, "
          f"Python {platform.python_version()}", flush=True)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="groupscope-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    total_s = args.minutes * 60 + 120  # the workload outlasts the warm-up and the sampling
    with MockCluster(1) as mc:
        mc.create_topic("__consumer_offsets", 50)
        mc.create_topic("groupscope-heartbeat", 1)
        sim = Simulation(["steady"], seed=11, start_ms=int(time.time() * 1000))
        sim.topic_specs = (lambda specs: lambda: specs() + [(TopicSpec(ROLLING_TOPIC, 6, 20.0), 0)])(sim.topic_specs)
        sink = KafkaSink(mc.bootstrap_servers, create_topic=mc.create_topic)
        sim.bind(sink)
        schedule_rolling_restarts(sim, args.rebalance_every, total_s)
        runner = SimulationRunner(sim, sink, speed=1.0).start()
        load = None
        if args.groups:
            mc.create_topic(SCALE_TOPIC, args.partitions)
            load = ScaleLoad(mc.bootstrap_servers, args.groups, args.partitions, args.commit_every, 50).start()
            print(f"scale load: {args.groups:,} groups x {args.partitions} partitions of {SCALE_TOPIC}, each group "
                  f"committing every {args.commit_every:g} s ({args.groups * args.partitions / args.commit_every:,.0f}"
                  f" commits/s)", flush=True)
        config = root / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "soak",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 1.0, "shuffle_partitions": 2},
            "delta": {"path": str(root / "delta"),
                      # compaction inside the run, as months of running would see it
                      "maintenance": {"every_batches": 600, "every_seconds": 900, "vacuum_retention_hours": 0}},
            "metrics": {"host": "127.0.0.1", "port": port},
            "heartbeat": {"interval_seconds": 5.0},
        }))
        log_path = root / "job.log"
        job = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--config", str(config)],
                               cwd=REPO, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT,
                               start_new_session=True)
        rows: list[tuple[float, dict[str, float], float, float, float, float, float, float, float]] = []
        try:
            deadline = time.monotonic() + 180
            while metric_sum(scrape(port), "groupscope_batches_total") < 5:
                if job.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the job did not start; its log:\n{log_path.read_text()[-3000:]}")
                time.sleep(1)
            print(f"job started (pid {job.pid}); sampling every {args.interval:.0f} s for {args.minutes:g} min",
                  flush=True)
            t0 = time.monotonic()
            n = int(args.minutes * 60 // args.interval)
            for i in range(n + 1):
                wait = t0 + i * args.interval - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if job.poll() is not None:
                    raise SystemExit(f"the job exited ({job.returncode}); its log:\n{log_path.read_text()[-3000:]}")
                if runner.error is not None:
                    raise SystemExit(f"the simulator failed: {runner.error}")
                if load is not None and load.error is not None:
                    raise SystemExit(f"the scale load failed: {load.error!r}")
                mem = sample_memory(job.pid)
                text = scrape(port)
                row = (i * args.interval / 60, mem, metric_sum(text, "groupscope_batches_total"),
                       metric_sum(text, "groupscope_records_decoded_total"),
                       metric_sum(text, "kafka_consumergroup_rebalances_total"),
                       metric_sum(text, "groupscope_groups"), metric_sum(text, "groupscope_state_bytes") / 2**20,
                       # keeping up: records of __consumer_offsets not read yet, and how long the last batch took
                       metric_sum(text, "groupscope_offsets_topic_behind_records"),
                       metric_sum(text, "groupscope_batch_duration_seconds"))
                rows.append(row)
                print(f"  {row[0]:5.1f} min  driver {mem['driver']:7.1f} MB  JVM {mem['jvm']:7.1f} MB  "
                      f"workers {mem['workers']:7.1f} MB ({mem['n_workers']:.0f}; PSS {mem['workers_pss']:.0f} MB)  "
                      f"tree PSS {mem['total_pss']:.0f} MB  batches {row[2]:,.0f}  "
                      f"records {row[3]:,.0f}  rebalances {row[4]:,.0f}  groups {row[5]:,.0f}  "
                      f"state {row[6]:.1f} MB  behind {row[7]:,.0f}  last batch {row[8]:.1f} s", flush=True)
        finally:
            if job.poll() is None:
                job.send_signal(signal.SIGTERM)
                try:
                    job.wait(90)
                except subprocess.TimeoutExpired:
                    os.killpg(job.pid, signal.SIGKILL)
                    job.wait(30)
            runner.stop()
            sink.close()
            if load is not None:
                load.stop()
    log_lines = log_path.read_text(errors="replace").splitlines()
    print()
    print("| minute | driver RSS (MB) | JVM RSS (MB) | Python workers RSS (MB, count) | workers PSS (MB) | "
          "process tree PSS (MB) | batches | records decoded | rebalances | groups | state (MB) | behind (records) "
          "| last batch (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for minute, mem, batches, records, rebalances, groups, state_mb, behind, batch_s in rows:
        print(f"| {minute:g} | {mem['driver']:.0f} | {mem['jvm']:.0f} | {mem['workers']:.0f} ({mem['n_workers']:.0f}) "
              f"| {mem['workers_pss']:.0f} | {mem['total_pss']:.0f} | {batches:,.0f} | {records:,.0f} "
              f"| {rebalances:,.0f} | {groups:,.0f} | {state_mb:.1f} | {behind:,.0f} | {batch_s:.1f} |")
    print()
    print("| measure | first half (MB/min) | second half (MB/min) | verdict |")
    print("|---|---|---|---|")
    series = {"driver": "driver (Python) RSS", "jvm": "JVM RSS", "workers": "Python workers (RSS)",
              "workers_pss": "Python workers (PSS)", "total_pss": "process tree (PSS)"}
    for key, label in series.items():
        first, second, verdict = levels_off([(minute, mem[key]) for minute, mem, *_ in rows])
        print(f"| {label} | {first:+.2f} | {second:+.2f} | {verdict} |")
    first, second, verdict = levels_off([(row[0], row[6]) for row in rows])
    print(f"| job state (`groupscope_state_bytes`) | {first:+.2f} | {second:+.2f} | {verdict} |")
    print()
    print(f"job log: {len(log_lines)} lines over the run" + (f" ({log_path})" if args.keep else ""))
    if not args.keep:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
