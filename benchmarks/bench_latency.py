"""Commit-to-metric latency of the running job at a 1 s trigger.

A broker and the real job (heartbeat emitter, Spark, Delta, metrics endpoint) run; every second each of ``--groups``
background groups commits one partition (with ``--commit-every S``, a 1/S share of them in turn: each group every S
seconds), produced to ``__consumer_offsets`` by a process of its own, spread evenly over the second. For each sample,
after a random pause of up to a second, a probe group commits a new offset and ``/metrics`` is polled the way a Prometheus server asks for it (OpenMetrics, gzip) until
the probe's group series (``kafka_consumergroup_last_commit_timestamp_seconds``) shows it, and with
``--partition-metrics`` (the opt-in per-partition series) its partition's series too
(``kafka_consumergroup_current_offset{topic="bench-events",partition="0"}``). Prints p50/p99/max of each, the job's
batch times (the last 100) and Spark's parts of them, and the driver's parts (the outputs' hand-over, its Delta
commits and the batch's rows into the state ``/metrics`` reads).

The broker is a real Apache Kafka broker by default (one KRaft node from ``tests/realkafka``, started and stopped by
the script, as ``bench_catchup.py`` does; the commits are produced under the client id ``__admin_client``, which
Kafka lets write to its internal topics); ``--kafka mock`` uses librdkafka's mock cluster in this process. Usage::

    python benchmarks/bench_latency.py [--samples 60] [--groups 10000] [--partition-metrics]
    python benchmarks/bench_latency.py --kafka mock
    python benchmarks/bench_latency.py --groups 10000 --commit-every 5   # the clients' auto-commit cadence
    python benchmarks/bench_latency.py --groups 10000 --spark-conf spark.python.worker.reuse=true --trigger 0.5
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402

from protocol import partition_for  # noqa: E402
from protocol.builders import new_offset_commit  # noqa: E402
from protocol.codec import encode_record  # noqa: E402
from streaming.config import load_settings  # noqa: E402
from streaming.driver.metrics_feed import ClusterFeed  # noqa: E402
from streaming.driver.runner import GroupscopeJob  # noqa: E402
from streaming.job.batch_sink import BatchSink  # noqa: E402
from streaming.sinks.delta import DeltaSink  # noqa: E402

from bench_catchup import OFFSETS_TOPIC, newest_cached_kafka, open_broker  # noqa: E402
from proctree import machine_busy_seconds  # noqa: E402

EVENTS = "bench-events"
SLICES = 20  # the background load's sends per second


def probe_and_scrape(producer: dict, url: str, samples: int, warm_up: float, scrape_interval: float,
                     partition_metrics: bool, results) -> None:
    """The probe group commits a new offset and ``/metrics`` is scraped until it shows it, ``samples`` times after
    ``warm_up`` seconds of a commit a second; puts (group latencies, partition latencies, scrape times) on
    ``results``."""
    p = Producer(producer)
    # The page writes labels sorted by name: a plain substring search finds the probe's lines.
    group_line = b'\nkafka_consumergroup_last_commit_timestamp_seconds{cluster="latency",group="probe"} '
    partition_line = (b'\nkafka_consumergroup_current_offset{cluster="latency",group="probe",partition="0",'
                      b'topic="bench-events"} ')
    # What a Prometheus server asks for: OpenMetrics, gzipped.
    headers = {"Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
               "Accept-Encoding": "gzip"}
    probe_partition = partition_for("probe", 50)

    def figure(page: bytes, line: bytes) -> float | None:
        at = page.find(line)
        if at < 0:
            return None
        start = at + len(line)
        return float(page[start:page.index(b"\n", start)])

    def commit(offset: int) -> int:
        now_ms = int(time.time() * 1000)
        k, v = encode_record(new_offset_commit("probe", EVENTS, 0, offset, commit_timestamp=now_ms))
        p.produce(OFFSETS_TOPIC, key=k, value=v, partition=probe_partition)
        p.flush(10)
        return now_ms

    offset = 0
    warm_until = time.time() + warm_up  # Spark session, first batches, every group known
    while time.time() < warm_until:
        offset += 1
        commit(offset)
        time.sleep(1.0)
    latencies, partition_latencies, scrapes = [], [], []
    phase = random.Random(7)
    for _ in range(samples):
        # a random pause first, so the samples fall at every point of the job's trigger cycle alike
        time.sleep(phase.uniform(0.0, 1.0))
        offset += 1
        now_ms = commit(offset)
        sent = time.time()
        group_seen = partition_seen = None
        while time.time() - sent < 30 and (group_seen is None or (partition_metrics and partition_seen is None)):
            asked = time.time()
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as resp:
                page = resp.read()
                if resp.headers.get("Content-Encoding") == "gzip":
                    page = zlib.decompress(page, wbits=31)
            scrapes.append(time.time() - asked)
            now = time.time()
            seen_ms = figure(page, group_line)
            if group_seen is None and seen_ms is not None and abs(seen_ms * 1000 - now_ms) < 1:
                group_seen = now - sent
            if partition_seen is None and figure(page, partition_line) == offset:
                partition_seen = now - sent
            time.sleep(scrape_interval)
        if group_seen is not None:
            latencies.append(group_seen)
        if partition_seen is not None:
            partition_latencies.append(partition_seen)
    p.flush(10)
    results.put((latencies, partition_latencies, scrapes))


def background_load(producer: dict, groups: int, commit_every: int, stop) -> None:
    """Every second, the round's share of ``groups`` background groups commit one partition each (each group every
    ``commit_every`` s), in ``SLICES`` even slices over the second, until ``stop`` is set."""
    p = Producer(producer)
    parent = multiprocessing.parent_process()
    names = [(f"bg-{g}", partition_for(f"bg-{g}", 50)) for g in range(groups)]
    started = time.time()
    tick = 0
    while not stop.is_set() and parent.is_alive():  # not past a bench that was killed
        second, slice_ = divmod(tick, SLICES)
        now_ms = int(time.time() * 1000)
        for g in range(slice_, groups, SLICES):
            if g % commit_every != second % commit_every:
                continue
            group, partition = names[g]
            k, v = encode_record(new_offset_commit(group, EVENTS, g % 10, second, commit_timestamp=now_ms))
            p.produce(OFFSETS_TOPIC, key=k, value=v, partition=partition)
        p.poll(0)
        tick += 1
        time.sleep(max(0.0, started + tick / SLICES - time.time()))
    p.flush(10)


def _timed(method, times: list[float], spans: list[tuple[float, float]] | None = None):
    """``method`` appending each call's duration to ``times`` (and its start and end, epoch seconds, to ``spans``)."""
    def timed(*args, **kwargs):
        started, wall = time.perf_counter(), time.time()
        try:
            return method(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - started)
            if spans is not None:
                spans.append((wall, time.time()))
    return timed


def _with_settings(given: list[str], base: dict) -> dict:
    """``base`` with each ``SECTION.KEY=VALUE`` of ``given`` set (the value read as YAML)."""
    import yaml

    for item in given:
        path, _, value = item.partition("=")
        section, _, key = path.partition(".")
        if not key:
            raise SystemExit(f"--setting {item!r}: expected SECTION.KEY=VALUE")
        base.setdefault(section, {})[key] = yaml.safe_load(value)
    return base


class _JobCpu:
    """CPU seconds the job used: this process's own threads (the job's driver), Spark's JVM (with the processes it
    forked and reaped), and the rest: the machine's busy time less the broker's and the bench's load and probe
    processes, which is PySpark's Python processes (a task worker's time cannot be read once it has exited: the
    daemon that forked it does not wait for it) and the kernel's work for them. Busy seconds per batch tell two
    builds apart where wall times, on two cores shared with the broker and the load, vary run to run."""

    _TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self, jvm_pid: int) -> None:
        self.jvm_pid = jvm_pid

    @classmethod
    def _cpu(cls, pid: int | str, *, children: bool = True) -> float:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15 if children else 13]) / cls._TICK

    def _others(self) -> float:
        """The broker's and the bench's own processes (the load, the probe)."""
        total = 0.0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
                if b"kafka.Kafka" in cmdline or b"multiprocessing.spawn" in cmdline:
                    total += self._cpu(entry)
            except OSError:
                continue
        return total

    def snapshot(self) -> dict[str, float]:
        busy = machine_busy_seconds()
        driver, jvm = self._cpu("self", children=False), self._cpu(self.jvm_pid)
        return {"driver": driver, "JVM": jvm, "Python workers": busy - self._others() - driver - jvm}


class _GcTimes:
    """The time this process (the job's driver) spends in Python's cyclic garbage collector, per generation."""

    def __init__(self) -> None:
        import gc

        self.reset()
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def reset(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.count[info["generation"]] += 1
            self.seconds[info["generation"]] += time.perf_counter() - self._started

    def summary(self) -> str:
        return ", ".join(f"generation {g} {n} in {s:.2f} s" for g, (n, s) in enumerate(zip(self.count, self.seconds)))


def _stage_spans(spark) -> list[tuple[str, int, int, int]]:
    """Spark's last stages (as its status store keeps them): name, submission and completion (epoch ms), tasks."""
    if spark is None:
        return []
    sc = spark.sparkContext
    gateway, jvm = sc._gateway, sc._jvm
    # Scala's default arguments are not defaults through py4j: every one is passed.
    stages = sc._jsc.sc().statusStore().stageList(None, False, False, gateway.new_array(jvm.double, 0),
                                                  jvm.java.util.ArrayList())
    spans = []
    for k in range(stages.size()):
        st = stages.apply(k)
        if st.completionTime().isEmpty() or st.submissionTime().isEmpty():
            continue
        spans.append((st.name().split(' at ')[0], st.submissionTime().get().getTime(),
                      st.completionTime().get().getTime(), st.numTasks()))
    return sorted(spans, key=lambda s: s[1])


def _stage_times(spark) -> dict[str, dict[str, list[int]]]:
    """Per stage name (Spark's last stages, as its status store keeps them): wall time from submission to completion,
    and the tasks' summed run and deserialisation times."""
    out: dict[str, dict[str, list[int]]] = {}
    if spark is None:
        return out
    sc = spark.sparkContext
    gateway, jvm = sc._gateway, sc._jvm
    # Scala's default arguments are not defaults through py4j: every one is passed.
    stages = sc._jsc.sc().statusStore().stageList(None, False, False, gateway.new_array(jvm.double, 0),
                                                  jvm.java.util.ArrayList())
    for k in range(stages.size()):
        st = stages.apply(k)
        if st.completionTime().isEmpty() or st.submissionTime().isEmpty():
            continue
        times = out.setdefault(f"{st.name().split(' at ')[0]} ({st.numTasks()} tasks)",
                               {"wall": [], "run": [], "JVM CPU": [], "deserialise": [], "shuffle wait": []})
        times["wall"].append(st.completionTime().get().getTime() - st.submissionTime().get().getTime())
        times["run"].append(st.executorRunTime())
        times["JVM CPU"].append(st.executorCpuTime() // 1_000_000)  # the task threads' own, not the workers'
        times["deserialise"].append(st.executorDeserializeTime())
        times["shuffle wait"].append(st.shuffleFetchWaitTime())
    return out


def _epoch_ms(iso: str) -> int:
    """Spark's progress timestamp (``2026-01-01T00:00:00.000Z``) as epoch milliseconds."""
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--groups", type=int, default=200, help="background groups committing every second")
    ap.add_argument("--commit-every", type=int, default=1, metavar="S",
                    help="each background group commits every S seconds instead, a 1/S share of them each second "
                         "(5: the Java client's and librdkafka's auto-commit interval)")
    ap.add_argument("--kafka", choices=("real", "mock"), default="real",
                    help="a real Kafka broker started by the script (default) or librdkafka's mock cluster")
    ap.add_argument("--kafka-version", help="the Kafka version to start (default: the newest cached)")
    ap.add_argument("--broker-heap", default="1g", help="the started broker's JVM heap")
    ap.add_argument("--scrape-interval", type=float, default=0.05,
                    help="seconds between scrapes of /metrics while a commit is awaited")
    ap.add_argument("--partition-metrics", action="store_true",
                    help="serve the per-partition series too (metrics.partition_metrics, off by default) and time "
                         "the probe's partition series as well")
    ap.add_argument("--warm-up", type=float, default=20.0, help="seconds of commits before sampling starts")
    ap.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the job (spark.conf), repeatable")
    ap.add_argument("--setting", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="a groupscope setting for the job (the value read as YAML), repeatable; e.g. "
                         "source.read_in_steps=false")
    ap.add_argument("--trigger", type=float, default=1.0, help="the job's trigger interval (spark.trigger_seconds)")
    ap.add_argument("--timeline", type=int, default=3, metavar="N",
                    help="print the last N batches as a timeline: Spark's stages and the driver's hand-over")
    ap.add_argument("--shuffle-partitions", type=int, default=2,
                    help="spark.shuffle_partitions: the stateful stage's tasks (the job's default is 4)")
    ap.add_argument("--slowest", type=int, default=0, metavar="N",
                    help="print the N slowest of the last 100 batches as timelines too")
    args = ap.parse_args()
    args.bootstrap, args.partitions, args.offsets_partitions = None, 10, 50
    if args.kafka == "real" and not args.kafka_version:
        args.kafka_version = newest_cached_kafka()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp, open_broker(args, Path(tmp)) as broker:
        print(f"broker: {broker.description}")
        settings = load_settings(None, _with_settings(args.setting, {
            "cluster": "latency", "kafka": {"bootstrap.servers": broker.bootstrap},
            "spark": {"checkpoint": f"{tmp}/cp", "trigger_seconds": args.trigger, "shuffle_partitions": args.shuffle_partitions,
                      "conf": dict(kv.split("=", 1) for kv in args.spark_conf)},
            "delta": {"path": f"{tmp}/delta"},
            "metrics": {"host": "127.0.0.1", "port": 0, "partition_metrics": args.partition_metrics},
            "heartbeat": {"interval_seconds": 5.0},
        }))
        # The driver's parts of a batch (Spark's addBatch is the query's stages, then these): the whole hand-over of
        # the batch's outputs, the Delta commits in it, and the batch's rows into /metrics' state.
        driver_parts: dict[str, list[float]] = {"handle": [], "delta": [], "metrics state": []}
        handle_spans: list[tuple[float, float]] = []
        # The foreachBatch's collect of the stateful stage's outputs: from the driver asking for them (the batch's
        # DataFrame planned, its jobs submitted) to the last output on the driver.
        collect_spans: list[tuple[float, float]] = []
        from pyspark.sql.classic.dataframe import DataFrame as _ClassicFrame

        _ClassicFrame.toArrow = _timed(_ClassicFrame.toArrow, [], collect_spans)
        for cls, name, part in ((BatchSink, "handle", "handle"), (DeltaSink, "write_batch", "delta"),
                                (ClusterFeed, "apply", "metrics state")):
            setattr(cls, name, _timed(getattr(cls, name), driver_parts[part],
                                      handle_spans if part == "handle" else None))
        collections = _GcTimes()
        job = GroupscopeJob(settings, install_signal_handlers=False)
        job.start()
        import threading

        threading.Thread(target=job.run, daemon=True).start()
        url = f"http://127.0.0.1:{job.metrics.port}/metrics"
        producer = {"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "log_level": 3}
        if not broker.mock:
            producer["client.id"] = "__admin_client"  # Kafka accepts produce requests to its internal topics from it
        # The background load and the probe with its scrapes run in processes of their own, as consumers and a
        # Prometheus server do: this process is the job's driver, and a scraper here would hold the GIL it needs.
        spawn = multiprocessing.get_context("spawn")
        stop, results = spawn.Event(), spawn.Queue()
        load = spawn.Process(target=background_load, args=(producer, args.groups, args.commit_every, stop),
                             daemon=True)
        probe = spawn.Process(target=probe_and_scrape, daemon=True,
                              args=(producer, url, args.samples, args.warm_up, args.scrape_interval,
                                    args.partition_metrics, results))
        load.start()
        probe.start()
        warm_until = time.time() + args.warm_up  # Spark session, first batches, every group known
        time.sleep(max(0.0, warm_until - time.time()))
        batches_before = job.status.batches
        for times in driver_parts.values():
            times.clear()
        job_cpu = _JobCpu(job.spark.sparkContext._gateway.proc.pid)
        cpu_before = job_cpu.snapshot()
        sampling_started = time.time()
        collections.reset()
        latencies, partition_latencies, scrapes = results.get(timeout=args.warm_up + args.samples * 32 + 60)
        cpu_after = job_cpu.snapshot()  # while the load and the probe still run: their time is taken out
        batches = job.status.batches - batches_before
        sampled_s = time.time() - sampling_started
        stop.set()
        load.join(10)
        probe.join(10)
        # Spark keeps the progress of the last 100 batches: every batch of the sampling's end, long and short alike
        progress = job.first.query.recentProgress if job.first.query is not None else []
        recent = [p["durationMs"] for p in progress]
        state_ops = [p["stateOperators"][0] for p in progress if p.get("stateOperators")]
        starts = [_epoch_ms(p["timestamp"]) for p in progress]
        stages = _stage_times(job.spark)
        spans = _stage_spans(job.spark)
        job.request_stop()
        job.stop()
    every = "every second" if args.commit_every == 1 else f"every {args.commit_every} s"
    print(f"commit-to-metric latency, {args.groups} background groups committing {every} "
          f"({args.groups // args.commit_every + 1:,} commits/s); {batches} batches in {sampled_s:.0f} s of sampling "
          f"({sampled_s / max(batches, 1):.2f} s a batch); load average {os.getloadavg()[0]:.1f}; a scrape of "
          f"/metrics every {args.scrape_interval} s took {statistics.median(scrapes or [0]):.2f} s (median), "
          f"{max(scrapes or [0]):.2f} s at most:")
    if recent:
        took = sorted(d.get("triggerExecution", 0) for d in recent)
        q = statistics.quantiles(took, n=10, method="inclusive") if len(took) > 1 else took * 9
        print(f"  the last {len(recent)} batches: p50 {q[4]:.0f} ms, p90 {q[8]:.0f} ms, max {took[-1]} ms; "
              "Spark's parts of them, median (ms): " + ", ".join(
                  f"{k} {statistics.median(d.get(k, 0) for d in recent):.0f}" for k in sorted({k for d in recent
                                                                                               for k in d})))
    if state_ops:
        keys = ("allUpdatesTimeMs", "commitTimeMs", "allRemovalsTimeMs", "numRowsUpdated", "memoryUsedBytes")
        print("  the stateful operator per batch, median (summed over its tasks): " + ", ".join(
            f"{k} {statistics.median(o.get(k, 0) for o in state_ops):.0f}" for k in keys))
    print("  the job's CPU per batch while sampling (ms): " + ", ".join(
        f"{part} {(cpu_after[part] - cpu_before[part]) * 1000 / max(batches, 1):.0f}" for part in cpu_before)
        + f", all {(sum(cpu_after.values()) - sum(cpu_before.values())) * 1000 / max(batches, 1):.0f}")
    print(f"  the driver's garbage collections while sampling: {collections.summary()}")
    if driver_parts["handle"]:
        print("  the driver's parts of a batch, median / max (s): " + ", ".join(
            f"{part} {statistics.median(t):.3f} / {max(t):.3f}" for part, t in driver_parts.items() if t))
    for name, times in stages.items():
        print(f"  stage {name}: {len(times['wall'])} runs, median (ms): " + ", ".join(
            f"{k} {statistics.median(v):.0f}" for k, v in times.items()))
    batches_seen = list(zip(starts, recent))[:-1]  # the last one may still run
    slowest = sorted(batches_seen, key=lambda b: b[1].get("triggerExecution", 0))[-args.slowest:] \
        if args.slowest else []
    for label, shown in (("", batches_seen[-args.timeline:] if args.timeline else []), ("slow ", slowest)):
        for start, took in shown:
            end = start + took.get("triggerExecution", 0)
            parts = [f"{name} ({tasks}) {s - start}-{e - start}" for name, s, e, tasks in spans if start <= s < end]
            parts += [f"{what} {h0 * 1000 - start:.0f}-{h1 * 1000 - start:.0f}"
                      for what, spans_of in (("collect", collect_spans), ("hand-over", handle_spans))
                      for h0, h1 in spans_of if start <= h0 * 1000 < end]
            print(f"  a {label}batch of {end - start} ms, from its start (ms): " + ", ".join(parts)
                  + f"; Spark's parts (ms): " + ", ".join(f"{k} {v}" for k, v in sorted(took.items())))
    series = [("group series (last_commit_timestamp_seconds)", latencies)]
    if args.partition_metrics:
        series.append(("partition series (current_offset)", partition_latencies))
    for what, values in series:
        values.sort()
        if len(values) < 2:
            print(f"  {what}: {len(values)} of {args.samples} samples seen")
            continue
        q = statistics.quantiles(values, n=100, method="inclusive")
        print(f"  {what}: {len(values)} of {args.samples} samples, p50 {q[49]:.2f} s, p99 {q[98]:.2f} s, "
              f"max {values[-1]:.2f} s")


if __name__ == "__main__":
    main()
