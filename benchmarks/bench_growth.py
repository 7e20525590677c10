"""Growth: ``groupscope run`` watching many groups for a long time, on a real Kafka broker.

A real Apache Kafka broker (one KRaft node from ``tests/realkafka``, the newest cached version) is loaded with one
commit of every partition of ``--groups`` groups × ``--partitions`` partitions (the groups are known before the job
starts, as on a cluster it joins). ``groupscope run`` starts as its own process with its default settings and
catches up; then, for ``--minutes``, every group commits all its partitions again every ``--commit-every`` seconds,
spread evenly over the interval (``groups × partitions / commit-every`` offset commits a second, written straight to
``__consumer_offsets`` under the client id Kafka lets write there, as ``bench_catchup.py`` does).

Every ``--sample-every`` seconds the script records, from outside the job:

* the micro-batches finished since the last sample and their mean and longest time (the checkpoint's offset and
  commit logs: planned to done);
* the records behind: ``__consumer_offsets``' high watermarks against the job's ``groupscope_offsets_topic_behind_records``;
* the state: the bytes of the model's checkpointed state (``groupscope_state_bytes``) and the size of the
  checkpoint's state directory on disk, and the groups the job knows (``groupscope_groups``);
* memory: the PSS of the job's whole process tree, and the RSS of the driver, the JVM and the Python workers;
* how long one ``/metrics`` scrape takes (gzip, as Prometheus asks) and its size;
* where the machine's CPU went, in cores: the broker, this script (the steady commits: encoding and producing
  them), and the rest (the job: its driver, JVM and Python workers), so a batch time that grows can be told from a
  job that got less of the machine.

At the end: a table of the samples, and for batch time, state bytes and memory whether they stay flat: the mean
of the last quarter of the samples against the first (flat: at most 10% more), and the slope of each half. Usage::

    python benchmarks/bench_growth.py                                    # 100,000 × 20, 30 minutes
    python benchmarks/bench_growth.py --groups 20000 --minutes 5          # the short variant
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from bench_catchup import OFFSETS_TOPIC, _free_port, _get, batch_log, loadavg, newest_cached_kafka, open_broker  # noqa: E402
from bench_job import load_backlog  # noqa: E402
from bench_soak import sample_memory, slope  # noqa: E402
from proctree import machine_busy_seconds, process_cpu_seconds  # noqa: E402
from protocol import partition_for  # noqa: E402
from protocol.builders import new_offset_commit  # noqa: E402
from protocol.codec import encode_record  # noqa: E402

TOPIC = "bench-events"


class SteadyCommits(threading.Thread):
    """Every group commits every partition once per ``every_s``, a slice of the groups each second."""

    def __init__(self, bootstrap: str, groups: int, partitions: int, offsets_partitions: int, every_s: float) -> None:
        super().__init__(name="steady-commits", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "client.id": "__admin_client", "linger.ms": 20,
                                  "batch.num.messages": 10000, "queue.buffering.max.messages": 2_000_000,
                                  "log_level": 3})
        self.groups, self.partitions, self.every_s = groups, partitions, every_s
        self.slots = [partition_for(f"bench-g{g}", offsets_partitions) for g in range(groups)]
        self.stopped = threading.Event()
        self.written = 0
        self.behind_s = 0.0  # how far the producer fell behind its schedule at worst

    def run(self) -> None:
        per_second = self.groups / self.every_s
        started, g, rnd = time.time(), 0, 1
        while not self.stopped.is_set():
            due = int((time.time() - started + 1) * per_second)  # groups due by the end of this second
            now_ms = int(time.time() * 1000)
            while g < due and not self.stopped.is_set():
                group = f"bench-g{g % self.groups}"
                for part in range(self.partitions):
                    k, v = encode_record(new_offset_commit(group, TOPIC, part, rnd * 10 + 1, commit_timestamp=now_ms))
                    while True:
                        try:
                            self.producer.produce(OFFSETS_TOPIC, key=k, value=v, partition=self.slots[g % self.groups])
                            break
                        except BufferError:
                            self.producer.poll(0.05)
                self.written += self.partitions
                g += 1
                if g % self.groups == 0:
                    rnd += 1
            self.producer.poll(0)
            lag = time.time() - started - g / per_second
            self.behind_s = max(self.behind_s, lag)
            time.sleep(max(0.0, g / per_second - (time.time() - started)))
        self.producer.flush(60)
        self.producer.close()  # no reconnect attempts (logged as errors) once the broker is stopped

    def stop(self) -> None:
        self.stopped.set()
        self.join(120)


def high_watermarks(bootstrap: str, partitions: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-growth-watch", "enable.auto.commit": False,
                  "log_level": 3})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=10)[1] for p in range(partitions))
    finally:
        c.close()


def scrape(port: int) -> tuple[float, int, dict[str, float]]:
    """One gzip scrape of ``/metrics``: seconds, bytes on the wire, and the job's own ``groupscope_*`` figures
    summed over their labels (they come after every group's series)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers={"Accept-Encoding": "gzip"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as r:
        raw = r.read()
        body = gzip.decompress(raw) if r.headers.get("Content-Encoding") == "gzip" else raw
    seconds = time.perf_counter() - started
    tail = body[body.find(b"# HELP groupscope_"):].decode()
    figures: dict[str, float] = {}
    for m in re.finditer(r"^(groupscope_\w+)(?:\{[^}]*\})? (\S+)$", tail, re.M):
        figures[m.group(1)] = figures.get(m.group(1), 0.0) + float(m.group(2))
    return seconds, len(raw), figures


class CpuSplit:
    """Cores used since the last :meth:`sample` by the broker, this process and the rest of the machine's busy
    time (the job and anything else running)."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self._last = self._read()

    def _read(self) -> tuple[float, float, float, float]:
        broker = 0.0 if self.broker_pid is None else process_cpu_seconds(self.broker_pid)
        return time.monotonic(), machine_busy_seconds(), broker, sum(os.times()[:2])

    def sample(self) -> dict[str, float]:
        now = self._read()
        (t0, busy0, broker0, own0), (t1, busy1, broker1, own1) = self._last, now
        self._last = now
        span = max(t1 - t0, 1e-9)
        broker, own = (broker1 - broker0) / span, (own1 - own0) / span
        return {"cpu_broker": broker, "cpu_load": own, "cpu_job": (busy1 - busy0) / span - broker - own}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=20, help="partitions each group commits")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--commit-every", type=float, default=60.0, help="seconds between two commits of one group")
    ap.add_argument("--sample-every", type=float, default=60.0)
    ap.add_argument("--kafka-version", help="the Kafka version to start (default: the newest cached)")
    ap.add_argument("--broker-heap", default="1g")
    args = ap.parse_args()
    args.kafka, args.bootstrap, args.offsets_partitions = "real", None, 50
    args.kafka_version = args.kafka_version or newest_cached_kafka()
    rate = args.groups * args.partitions / args.commit_every
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp_name, open_broker(args, Path(tmp_name)) as broker:
        tmp = Path(tmp_name)
        print(f"broker: {broker.description}")
        print(f"workload: {args.groups:,} groups × {args.partitions} partitions, each group committing every "
              f"{args.commit_every:g} s ({rate:,.0f} offset commits/s) for {args.minutes:g} minutes")
        loaded = args.groups * args.partitions
        load_s = load_backlog(broker.bootstrap, loaded, args.groups, args.partitions, args.offsets_partitions,
                              producer={"client.id": "__admin_client"})
        print(f"loaded {loaded:,} commits (one per group-partition) in {load_s:.0f} s")
        port = _free_port()
        cp = tmp / "checkpoint"
        cmd = [str(Path(sys.executable).parent / "groupscope"), "run", "--bootstrap", broker.bootstrap,
               "--checkpoint", str(cp), "--delta-path", str(tmp / "delta"), "--metrics-port", str(port)]
        log_path = tmp / "job.log"
        with open(log_path, "w") as log:
            started = time.perf_counter()
            job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
            try:
                while _get(f"http://127.0.0.1:{port}/ready")[0] != 200:
                    if job.poll() is not None or time.perf_counter() - started > 900:
                        raise SystemExit(f"groupscope run did not get ready:\n{log_path.read_text()[-3000:]}")
                    time.sleep(0.5)
                print(f"caught up ({loaded:,} commits) and ready in {time.perf_counter() - started:.1f} s")
                steady = SteadyCommits(broker.bootstrap, args.groups, args.partitions, args.offsets_partitions,
                                       args.commit_every)
                steady.start()
                samples = run_samples(args, job.pid, port, cp, broker.bootstrap, steady, CpuSplit(broker.pid))
                steady.stop()
            finally:
                job.terminate()
                try:
                    job.wait(60)
                except subprocess.TimeoutExpired:
                    job.kill()
                    job.wait()
        report(args, samples, steady)


def run_samples(args, pid: int, port: int, cp: Path, bootstrap: str, steady: SteadyCommits,
                cpu: CpuSplit) -> list[dict]:
    samples, seen, t0 = [], -1, time.time()
    header = (f"{'min':>5} {'batches':>7} {'mean s':>6} {'max s':>6} {'behind':>9} {'groups':>7} {'state MB':>8} "
              f"{'disk MB':>8} {'PSS MB':>7} {'driver':>6} {'JVM':>6} {'workers':>7} {'scrape s':>8} {'page MB':>7} "
              f"{'load':>5} {'gap':>9} {'job':>5} {'broker':>6} {'writer':>6}")
    print(f"{'':>5} {'':>7} {'':>6} {'':>6} {'':>9} {'':>7} {'':>8} {'':>8} {'':>7} {'':>6} {'':>6} {'':>7} {'':>8} "
          f"{'':>7} {'':>5} {'':>9} {'cores used':>20}")
    print(header)
    while time.time() - t0 < args.minutes * 60:
        time.sleep(args.sample_every)
        batches = [b for b in batch_log(cp) if b["batch"] > seen and b["done"] is not None]
        seen = max([b["batch"] for b in batches], default=seen)
        times = [b["done"] - b["planned"] for b in batches]
        scrape_s, page_bytes, figures = scrape(port)
        mem = sample_memory(pid)
        behind = high_watermarks(bootstrap, args.offsets_partitions) - figures.get("groupscope_records_decoded_total",
                                                                                     0)
        s = {"minute": (time.time() - t0) / 60, "batches": len(times),
             "mean": sum(times) / len(times) if times else float("nan"), "max": max(times, default=float("nan")),
             "behind": figures.get("groupscope_offsets_topic_behind_records", float("nan")), "read_gap": behind,
             "groups": figures.get("groupscope_groups", 0), "state_mb": figures.get("groupscope_state_bytes", 0) / 2**20,
             "disk_mb": du(cp / "state") / 2**20 if (cp / "state").exists() else 0.0,
             "pss": mem["total_pss"], "driver": mem["driver"], "jvm": mem["jvm"], "workers": mem["workers_pss"],
             "scrape_s": scrape_s, "page_mb": page_bytes / 2**20, "load": loadavg().split()[0], **cpu.sample()}
        samples.append(s)
        print(f"{s['minute']:5.1f} {s['batches']:7d} {s['mean']:6.2f} {s['max']:6.2f} {s['behind']:9,.0f} "
              f"{s['groups']:7,.0f} {s['state_mb']:8.1f} {s['disk_mb']:8.1f} {s['pss']:7.0f} {s['driver']:6.0f} "
              f"{s['jvm']:6.0f} {s['workers']:7.0f} {s['scrape_s']:8.2f} {s['page_mb']:7.1f} {s['load']:>5} "
              f"{s['read_gap']:9,.0f} {s['cpu_job']:5.2f} {s['cpu_broker']:6.2f} {s['cpu_load']:6.2f}",
              flush=True)
    return samples


def report(args, samples: list[dict], steady: SteadyCommits) -> None:
    print(f"offset commits written during the run: {steady.written:,}; the writer fell behind its schedule by "
          f"{steady.behind_s:.1f} s at most")
    for name, key, unit in (("batch time (mean per sample)", "mean", "s"), ("state bytes", "state_mb", "MB"),
                            ("state on disk", "disk_mb", "MB"), ("process tree PSS", "pss", "MB"),
                            ("driver RSS", "driver", "MB"), ("JVM RSS", "jvm", "MB"),
                            ("the job's cores", "cpu_job", "cores"), ("the broker's cores", "cpu_broker", "cores")):
        points = [(s["minute"], s[key]) for s in samples if s[key] == s[key]]
        if len(points) < 4:
            print(f"  {name}: too few samples")
            continue
        quarter = max(1, len(points) // 4)
        early = sum(v for _, v in points[:quarter]) / quarter
        late = sum(v for _, v in points[-quarter:]) / quarter
        first, second = slope(points[: len(points) // 2 + 1]), slope(points[len(points) // 2:])
        verdict = "flat" if late <= early * 1.10 else "growing"
        print(f"  {name}: first quarter {early:.2f} {unit}, last quarter {late:.2f} {unit} ({verdict}: at most 10% "
              f"more); slope {first:+.3f} {unit}/min in the first half, {second:+.3f} {unit}/min in the second")

if __name__ == "__main__":
    main()
