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

from streaming.kafka.mock_cluster import MockCluster  # noqa: E402
from streaming.simulator import ConsumerConfig, SimConsumer, Simulation, SimulationRunner  # noqa: E402
from streaming.simulator.kafka_sink import KafkaSink  # noqa: E402
from streaming.simulator.topics import TopicSpec  # noqa: E402

ROLLING_GROUP = "soak-rolling"
ROLLING_TOPIC = "soak-payments"


# ---- processes ---------------------------------------------------------------------------------------------------
# Read from /proc directly (Linux): three fields of two files, not worth a dependency for a benchmark.

def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _pss_mb(pid: int) -> float:
    """Proportional set size: shared pages divided among the processes sharing them (sums fairly)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def sample_memory(driver: int) -> dict[str, float]:
    """RSS in MB of the driver, the JVM(s) below it and every Python process below the JVM (Spark's workers)."""
    kids = _children()
    jvm = workers = workers_pss = 0.0
    n_workers = 0
    stack = list(kids.get(driver, []))
    while stack:
        pid = stack.pop()
        stack.extend(kids.get(pid, []))
        name = _name(pid)
        if name == "java":
            jvm += _rss_mb(pid)
        elif name.startswith("python"):
            workers += _rss_mb(pid)
            workers_pss += _pss_mb(pid)
            n_workers += 1
    return {"driver": _rss_mb(driver), "jvm": jvm, "workers": workers, "workers_pss": workers_pss,
            "n_workers": n_workers}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="how long to sample after the warm-up")
    ap.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--rebalance-every", type=float, default=300.0, help="seconds between rolling restarts")
    ap.add_argument("--keep", metavar="DIR", help="keep the job's folder (log, checkpoint, tables) here")
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
        rows: list[tuple[float, dict[str, float], float, float, float]] = []
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
                mem = sample_memory(job.pid)
                text = scrape(port)
                row = (i * args.interval / 60, mem, metric_sum(text, "groupscope_batches_total"),
                       metric_sum(text, "groupscope_records_decoded_total"),
                       metric_sum(text, "kafka_consumergroup_rebalances_total"))
                rows.append(row)
                print(f"  {row[0]:5.1f} min  driver {mem['driver']:7.1f} MB  JVM {mem['jvm']:7.1f} MB  "
                      f"workers {mem['workers']:7.1f} MB ({mem['n_workers']:.0f}; PSS {mem['workers_pss']:.0f} MB)  "
                      f"batches {row[2]:,.0f}  "
                      f"records {row[3]:,.0f}  rebalances {row[4]:,.0f}", flush=True)
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
    log_lines = log_path.read_text(errors="replace").splitlines()
    print()
    print("| minute | driver RSS (MB) | JVM RSS (MB) | Python workers RSS (MB, count) | workers PSS (MB) | batches | "
          "records decoded | rebalances |")
    print("|---|---|---|---|---|---|---|---|")
    for minute, mem, batches, records, rebalances in rows:
        print(f"| {minute:g} | {mem['driver']:.0f} | {mem['jvm']:.0f} | {mem['workers']:.0f} ({mem['n_workers']:.0f}) "
              f"| {mem['workers_pss']:.0f} | {batches:,.0f} | {records:,.0f} | {rebalances:,.0f} |")
    print()
    print("| process | first half (MB/min) | second half (MB/min) | verdict |")
    print("|---|---|---|---|")
    for key, label in (("driver", "driver (Python)"), ("jvm", "JVM"), ("workers", "Python workers (RSS)"),
                       ("workers_pss", "Python workers (PSS)")):
        first, second, verdict = levels_off([(minute, mem[key]) for minute, mem, *_ in rows])
        print(f"| {label} | {first:+.2f} | {second:+.2f} | {verdict} |")
    print()
    print(f"job log: {len(log_lines)} lines over the run" + (f" ({log_path})" if args.keep else ""))
    if not args.keep:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
