"""A broker outage against ``groupscope run``, live: a real Kafka broker stopped for longer than the consumers'
session timeout, then started again, while real consumers of every kind keep working.

Why live: the replayed recordings (``tests/verdicts/test_outages.py``) feed the model one heartbeat per sample. The
job meets the outage differently: its heartbeat emitter and its streaming query both lose Kafka, its micro-batches
group records and heartbeats as they arrive, and its readiness and metrics are served while Kafka is away. This
test runs the whole job as a subprocess and watches it from outside, as an operator's probes would.

The workload (``outage_recorder``): healthy groups (classic eager, cooperative-sticky, two static members, a KIP-848
consumer group; sessions of 10 s, a commit every second) and one group crash-looping as the control. The broker is
stopped (SIGTERM, its log directory kept) for ``OUTAGE_S`` and started. Then:

* no healthy group gets a ``RebalanceStorm`` event, a storm verdict or ``storm_active``; the crash loop does;
* exactly one ``KafkaUnavailable`` row, naming every group the client log shows rejoining under a new member id,
  and as long as the outage the clients saw (give or take the heartbeat interval);
* ``/ready`` turns 503 and ``groupscope_kafka_up`` 0 within ``ready_max_kafka_silence_seconds`` (30 s) of the
  stop, and ``/ready`` is 200 again within a heartbeat interval (plus slack) of the broker answering;
* ``groupscope_kafka_outages_total`` goes from 0 to 1;
* no healthy partition is STOP or STALL once the job is ready, the outage included, unless the client log shows
  a member of its group that committed nothing for the STOP time after Kafka was back;
* from its first 200, ``/metrics`` has every group the clients made.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable
from prometheus_client.parser import text_string_to_metric_families

from tests.realkafka.clients import wait_until
from tests.realkafka.outage_recorder import CRASH, HEALTHY, ClientLog, Workload, _rejoined, background, \
    outages_from_events
from tests.realkafka.test_kill_job import alive, free_port, kill_tree, start_job, write_job_config
from tests.spark.harness import HEARTBEAT

OUTAGE_S = 27.0  # the broker stays stopped this long: well past the 10 s session timeout
HEARTBEAT_S = 2.0  # the job's heartbeat interval
SILENCE_LIMIT_S = 30.0  # metrics.ready_max_kafka_silence_seconds (the default)
PROBE_S = 0.5  # how often the probe reads /ready and /metrics
READY_SLACK_S = 4.0  # after the broker answers: a heartbeat interval, a micro-batch and the probe's period
# Groups of the live test: every healthy shape but the deploy (a rolling restart needs minutes of its own).
MEMBERS = tuple(m for m in HEALTHY if m.group != "ok-rolling")
HEALTHY_GROUPS = sorted({m.group for m in MEMBERS})
CONTROL = CRASH[0].group
STOP_AFTER_S = 30.0  # thresholds.stop_after_ms (the default): commits every second are far under its floor
STOP_SLACK_MS = 3000  # a micro-batch and the probe's period between a commit and the job's view of it
STOP_CODES = {2.0: "STALL", 3.0: "STOP"}  # kafka_consumergroup_partition_status values no healthy group may show


@dataclass
class Sample:
    """One look at the job from outside."""

    t: float  # wall clock, seconds
    ready: int  # HTTP status of /ready (0: not serving)
    reason: str
    kafka_up: float | None
    outages: float | None = None  # groupscope_kafka_outages_total
    groups: set[str] = field(default_factory=set)
    bad_partitions: list[str] = field(default_factory=list)  # watched (healthy) partitions STOP or STALL
    storm_active: set[str] = field(default_factory=set)
    storm_verdict: set[str] = field(default_factory=set)


def look(port: int, watched: Collection[str] = HEALTHY_GROUPS) -> Sample:
    """``/ready`` and ``/metrics`` now; partitions STOP or STALL are gathered for the ``watched`` groups only."""
    t = time.time()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=3) as resp:
            status, reason = resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        status, reason = exc.code, exc.read().decode()
    except OSError:
        return Sample(t, 0, "not serving", None)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as resp:
            text = resp.read().decode()
    except OSError:
        return Sample(t, status, reason, None)
    s = Sample(t, status, reason.strip(), None)
    for family in text_string_to_metric_families(text):
        for m in family.samples:
            g = m.labels.get("group")
            if m.name == "groupscope_kafka_up":
                s.kafka_up = m.value
            elif m.name == "groupscope_kafka_outages_total":
                s.outages = m.value
            elif m.name == "kafka_consumergroup_info":
                s.groups.add(g)
            elif m.name == "kafka_consumergroup_partition_status" and g in watched and m.value in STOP_CODES:
                s.bad_partitions.append(f"{g} {m.labels['topic']}:{m.labels['partition']} {STOP_CODES[m.value]}")
            elif m.name == "kafka_consumergroup_rebalance_storm_active" and m.value == 1:
                s.storm_active.add(g)
            elif m.name == "kafka_consumergroup_rebalance_verdict" and m.labels.get("verdict") == "storm" \
                    and m.value == 1:
                s.storm_verdict.add(g)
    return s


class Probe:
    """Reads ``/ready`` and ``/metrics`` every ``PROBE_S`` on its own thread: the timeline the assertions read."""

    def __init__(self, port: int, watched: Collection[str] = HEALTHY_GROUPS) -> None:
        self.port = port
        self.watched = tuple(watched)
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(PROBE_S):
            self.samples.append(look(self.port, self.watched))

    def first(self, after: float, pred) -> Sample | None:
        return next((s for s in list(self.samples) if s.t >= after and pred(s)), None)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def stops_and_stalls(events: list[dict], lag: list[dict], groups, *, since: float) -> tuple[list, list]:
    """The STOP or STALL statuses of ``groups`` from ``since`` (epoch seconds) on: the ``group_events`` rows that
    changed a partition to one, and the ``lag`` table's rows that show one."""
    changed = [(r["group_id"], r["topic"], r["partition"], r["new"], r["event_time"]) for r in events
               if r["kind"] == "StatusChanged" and r["group_id"] in groups
               and r["new"] in STOP_CODES.values() and r["event_time"].timestamp() >= since]
    shown = [(r["group_id"], r["partition"], r["status"], r["status_reason"]) for r in lag
             if r["group_id"] in groups and r["status"] in STOP_CODES.values()
             and r["snapshot_time"].timestamp() >= since]
    return changed, shown


def table(delta: Path, name: str) -> list[dict]:
    path = delta / name
    return DeltaTable(str(path)).to_pyarrow_table().to_pylist() if (path / "_delta_log").is_dir() else []


def test_a_broker_stopped_past_the_session_timeout_is_one_cluster_event(own_kafka, tmp_path):
    began = time.monotonic()
    bootstrap = own_kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(HEARTBEAT, 1, 1)]).values():
        f.result(30)
    log = ClientLog(tmp_path / "client_events.jsonl")
    w = Workload(own_kafka, tmp_path, log)
    w.start(members=MEMBERS, sample=False)
    crash = background(lambda: w.crash_loop(time.monotonic() + 600))  # until the workload stops
    wait_until(lambda: {e["group"] for e in list(log.events) if e["kind"] == "commit"} >= set(HEALTHY_GROUPS),
               60, "a commit of every healthy group")

    port = free_port()
    delta = tmp_path / "delta"
    config = write_job_config(tmp_path, "outage-live", bootstrap, port, heartbeat_s=HEARTBEAT_S)
    job_log = tmp_path / "job.log"
    job = start_job(config, job_log)
    probe = Probe(port)
    tree: set[int] = set()

    def job_tail() -> str:
        return f"; job log ends:\n{job_log.read_text(errors='replace')[-3000:]}"

    try:
        made = {e["group"] for e in list(log.events) if e["kind"] == "commit"}  # the groups Kafka has by now
        first_ready = wait_until(lambda: probe.first(0, lambda s: s.ready == 200), 150, "the job's first /ready 200",
                                 job_tail)
        # Settled before the outage: the model has applied a few heartbeats since it was ready.
        wait_until(lambda: any(s.t > first_ready.t + 3 * HEARTBEAT_S and s.ready == 200 for s in probe.samples),
                   60, "the job to stay ready", job_tail)

        w.broker_action("stop", outage="long")
        time.sleep(OUTAGE_S)
        w.broker_action("start", outage="long")
        outage = outages_from_events(log.events)[-1]
        stop_s, back_s = outage["from_ms"] / 1000, outage["to_ms"] / 1000

        def reported() -> list[dict]:
            return [r for r in table(delta, "group_events") if r["kind"] == "KafkaUnavailable"]

        # The event is written when the rejoin window (60 s) after Kafka's return is over.
        wait_until(reported, 120, "the KafkaUnavailable row", job_tail)
        # The batch writes its tables first and updates the metrics after: the counter follows within a batch.
        seen = time.time()
        wait_until(lambda: probe.first(seen, lambda s: s.ready == 200 and s.outages == 1), 30,
                   "groupscope_kafka_outages_total at 1 after the row", job_tail)
        rejoined = sorted(_rejoined(list(log.events), outage) - {CONTROL})  # new member ids, by now
        events = table(delta, "group_events")
        groups = {r["group_id"]: r for r in table(delta, "groups")}
        lag = table(delta, "lag")
    finally:
        probe.stop()
        w.stop_event.set()
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
            try:
                job.wait(90)
            except Exception:  # noqa: BLE001 - it did not stop in time: its whole process group goes
                tree = kill_tree(job)
        crash.join(30)
        w.stop()
        log.close()
    assert not [p for p in tree if alive(p)], "processes of the job outlived it"
    samples = probe.samples
    print(f"outage {back_s - stop_s:.1f} s (stop {outage['from_ms']}, back {outage['to_ms']}); "
          f"rejoined: {rejoined}; whole test {time.monotonic() - began:.0f} s")

    # Every group the clients made is on /metrics from the first 200.
    assert made <= first_ready.groups, f"missing from /metrics at the first 200: {sorted(made - first_ready.groups)}"
    for s in samples:
        if s.ready == 200 and s.t >= first_ready.t:
            assert made <= s.groups, f"at {s.t - stop_s:+.1f} s groups {sorted(made - s.groups)} left /metrics"

    # /ready and kafka_up while Kafka is away, and back.
    down = next((s for s in samples if s.t >= stop_s and s.ready == 503 and "Kafka unreachable" in s.reason), None)
    assert down is not None and down.t - stop_s <= SILENCE_LIMIT_S + PROBE_S + 0.5, \
        f"/ready not 503 for Kafka within {SILENCE_LIMIT_S:.0f} s of the stop: {down}"
    gauge_down = next((s for s in samples if s.t >= stop_s and s.kafka_up == 0), None)
    assert gauge_down is not None and gauge_down.t - stop_s <= SILENCE_LIMIT_S + PROBE_S + 0.5, gauge_down
    up = next((s for s in samples if s.t >= back_s and s.ready == 200), None)
    assert up is not None and up.t - back_s <= HEARTBEAT_S + READY_SLACK_S, \
        f"/ready 200 {None if up is None else round(up.t - back_s, 1)} s after the broker answered (limit " \
        f"{HEARTBEAT_S + READY_SLACK_S} s); samples after it: " \
        f"{[(round(s.t - back_s, 1), s.ready, s.reason[:90]) for s in samples if s.t >= back_s][:20]}"
    assert up.kafka_up == 1, up

    # No storm for the healthy groups, anywhere; the crash loop is one.
    storms = [r for r in events if r["kind"] == "RebalanceStorm"]
    assert not [r for r in storms if r["group_id"] in HEALTHY_GROUPS], \
        [(r["group_id"], r["event_time"], r["detail"]) for r in storms if r["group_id"] in HEALTHY_GROUPS]
    assert any(r["group_id"] == CONTROL for r in storms), "the crash loop is not a storm: the test proves nothing"
    for g in HEALTHY_GROUPS:
        assert groups[g]["storms"] == 0, groups[g]
        assert not any(g in s.storm_active or g in s.storm_verdict for s in samples), f"{g} shown as a storm"
    assert any(CONTROL in s.storm_active for s in samples), "the crash loop was never storm_active"

    # Exactly one cluster event, naming the groups Kafka made rejoin, as long as the outage.
    outages = [r for r in events if r["kind"] == "KafkaUnavailable"]
    assert len(outages) == 1, outages
    detail = json.loads(outages[0]["detail"])
    assert outages[0]["shard"] == -1 and outages[0]["group_id"] == ""
    counted = [s.outages for s in samples if s.ready == 200]
    assert counted[0] == 0 and counted[-1] == 1 and counted == sorted(counted), \
        f"groupscope_kafka_outages_total went {sorted(set(counted))}"
    assert rejoined, "no healthy group rejoined under a new member id: the outage did not do what it is for"
    assert set(rejoined) <= set(detail["groups"]) <= set(made), (rejoined, detail)
    seen_s = back_s - stop_s
    print(f"reported: {detail['seconds']:.1f} s, groups {detail['groups']}; /ready 503 {down.t - stop_s:.1f} s "
          f"after the stop, 200 {up.t - back_s:.1f} s after the broker answered")
    # From the last heartbeat before the stop (at most an interval before it) to the first after the broker answered
    # (within an interval: the next tick, or the one waiting on a reconnection, 1 s apart at most), plus a tick's
    # own time. Measured: +2.4 to +3.0 s; librdkafka's default 10 s back-off made it +6.3 s.
    assert seen_s - HEARTBEAT_S <= detail["seconds"] <= seen_s + 2 * HEARTBEAT_S + 1.0, (seen_s, detail)

    # No healthy partition STOP or STALL once the job was ready: not in the events, the lag table or /metrics;
    # unless the client log shows a member of the group that really committed nothing for the STOP time (a
    # consumer that takes that long to come back after the outage is one an operator must hear of).
    client_events = list(log.events)
    bad_events, bad_lag = stops_and_stalls(events, lag, HEALTHY_GROUPS, since=first_ready.t)
    back_ms = outage["to_ms"]
    bad_events = [e for e in bad_events if not silent_member(client_events, e[0], e[4].timestamp(), back_ms)]
    assert not bad_events, (bad_events, commit_gaps(client_events, {e[0] for e in bad_events}, back_s))
    bad_lag = [r for r in bad_lag if not silent_member(client_events, r[0], None, back_ms)]
    assert not bad_lag, bad_lag[:10]
    bad_seen = [(round(s.t - back_s, 1), s.bad_partitions) for s in samples
                if [b for b in s.bad_partitions if not silent_member(client_events, b.split()[0], s.t, back_ms)]]
    assert not bad_seen, bad_seen[:10]


def silent_member(client_events: list[dict], group: str, at_s: float | None, back_ms: int) -> str | None:
    """A member of ``group`` the client log shows with no successful commit for the STOP time (less the slack)
    before ``at_s``, or till within the slack of it (the job sees a commit a batch late); with ``at_s`` None, for
    that long at any time. Silence is counted from ``back_ms`` (Kafka's return) on: nobody can commit while Kafka
    is away. None: every member kept committing."""
    span_ms = STOP_AFTER_S * 1000 - STOP_SLACK_MS
    for member, times in _commit_times(client_events, group).items():
        for before, after in zip(times, times[1:]):
            if before < back_ms < after:
                before = back_ms
            if after - before < span_ms:
                continue
            if at_s is None or (before <= at_s * 1000 - span_ms and after >= at_s * 1000 - STOP_SLACK_MS):
                return member
    return None


def _commit_times(client_events: list[dict], group: str) -> dict[str, list[int]]:
    """Per member of ``group``: its successful commits' times (ms), and last its exit, or the log's end for a
    member still running."""
    times: dict[str, list[int]] = {}
    exited: set[str] = set()
    for e in client_events:
        if e.get("group") == group and e["kind"] in ("commit", "process_exit"):
            times.setdefault(e["member"], []).append(e["t_ms"])
            if e["kind"] == "process_exit":
                exited.add(e["member"])
    end = client_events[-1]["t_ms"] if client_events else 0
    return {m: t if m in exited else [*t, end] for m, t in times.items()}


def commit_gaps(client_events: list[dict], groups: Collection[str], back_s: float) -> dict[str, list]:
    """Per member of ``groups``: the gaps over 3 s between its successful commits (seconds from Kafka's return),
    and its failed commits' errors: what the clients did, for a failure message."""
    out: dict[str, list] = {}
    for g in groups:
        for member, t in _commit_times(client_events, g).items():
            out[member] = [(round(a / 1000 - back_s, 1), round(b / 1000 - back_s, 1)) for a, b in zip(t, t[1:])
                           if b - a > 3000]
        failed = sorted({e["error"] for e in client_events if e.get("group") == g and e["kind"] == "commit_failed"})
        out[f"{g} failed commits"] = failed
    return out
