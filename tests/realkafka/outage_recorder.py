"""Records broker outages on a real Kafka broker with real clients, in the recording layout ``groupscope replay``
reads, and labels them from what the clients did.

Why: a broker outage (stopped, restarted, frozen, cut off) makes every consumer of every group lose its
coordinator at once. Whether the monitor tells that cluster event from consumers crashing can only be checked on
what a real broker and real clients write, so these recordings are kept in ``tests/data/outages.tar.zst``.

A run (``python -m tests.realkafka.outage_recorder PLAN OUT``) starts one KRaft broker, a producer, healthy groups
(classic eager and cooperative, a static member, a consumer-protocol group, a group restarted one member at a
time as a deploy does) and one crash-looping group as the control, then performs the plan's broker actions. It
writes:

* ``segments/__consumer_offsets-N/``: the non-empty offsets partitions, copied from the broker's disk at the end;
* ``end_offsets.jsonl``: once a second, high watermark, last stable offset and log start of every workload and
  offsets partition -- while the broker answers (an outage is a gap in the samples, as in a heartbeat topic);
* ``client_events.jsonl``: every client and broker action with wall-clock milliseconds (process start and close,
  assignments with the member id Kafka gave, commits, the broker stopped, started, frozen, resumed);
* ``labels.json``: the verdicts expected, derived from ``client_events.jsonl`` only (:func:`labels_from_events`).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tests.realkafka.broker import KafkaBroker
from tests.realkafka.install import kafka_install

SESSION_TIMEOUT_MS = 10_000  # short sessions keep the recordings short: outages of 25-60 s expire every member
# A group that commits every second and goes this long without a commit while Kafka answers has stopped consuming
# (its consumers hung, or the workload is ending); after an outage its members get this long again to rejoin.
SILENT_MS = 10_000
REJOIN_GRACE_MS = 20_000
PRODUCE_PER_SECOND = 5  # per partition
PARTITIONS = 4


@dataclass(frozen=True, slots=True)
class Member:
    """One consumer process: its group, name and how it runs."""

    group: str
    name: str
    protocol: str = "classic"
    assignor: str = "range"
    instance_id: str | None = None


HEALTHY = (
    Member("ok-eager", "eager-1"), Member("ok-eager", "eager-2"),
    Member("ok-coop", "coop-1", assignor="cooperative-sticky"), Member("ok-coop", "coop-2", assignor="cooperative-sticky"),
    Member("ok-static", "static-1", instance_id="static-instance-1"),
    Member("ok-static", "static-2", instance_id="static-instance-2"),
    Member("ok-kip848", "kip848-1", protocol="consumer"), Member("ok-kip848", "kip848-2", protocol="consumer"),
    Member("ok-rolling", "rolling-1"), Member("ok-rolling", "rolling-2"), Member("ok-rolling", "rolling-3"),
)
CRASH = (Member("crashloop", "crash-1"), Member("crashloop", "crash-2"))
GROUPS = sorted({m.group for m in HEALTHY + CRASH})


def topic_of(group: str) -> str:
    return f"{group}-in"


class ClientLog:
    """``client_events.jsonl``: one JSON object per action, stamped with wall-clock milliseconds."""

    def __init__(self, path: Path) -> None:
        self._fh = open(path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self.events: list[dict] = []

    def write(self, kind: str, **fields) -> None:
        e = {"t_ms": int(time.time() * 1000), "kind": kind, **fields}
        with self._lock:
            self.events.append(e)
            self._fh.write(json.dumps(e, separators=(",", ":")) + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class Consumer:
    """One consumer process in a thread: subscribes, polls, commits every second, and closes cleanly on
    :meth:`stop` (a deploy, or a crash-looping process whose exception handler closes it)."""

    def __init__(self, member: Member, bootstrap: str, log: ClientLog) -> None:
        self.member, self.bootstrap, self.log = member, bootstrap, log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Consumer":
        self._thread.start()
        return self

    def stop(self, reason: str) -> None:
        self._stop.set()
        self._thread.join(30)
        self.log.write("process_exit", group=self.member.group, member=self.member.name, how=reason)

    def _config(self) -> dict:
        m = self.member
        conf = {"bootstrap.servers": self.bootstrap, "group.id": m.group, "client.id": m.name,
                "enable.auto.commit": "false", "auto.offset.reset": "earliest", "log_level": "0"}
        if m.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"partition.assignment.strategy": m.assignor, "session.timeout.ms": str(SESSION_TIMEOUT_MS),
                         "heartbeat.interval.ms": "1000"})
        if m.instance_id:
            conf["group.instance.id"] = m.instance_id
        return conf

    def _run(self) -> None:
        from confluent_kafka import Consumer as KafkaConsumer
        from confluent_kafka import KafkaException

        m = self.member
        c = KafkaConsumer(self._config())
        self.log.write("process_start", group=m.group, member=m.name)

        def assigned(consumer, partitions):
            self.log.write("assigned", group=m.group, member=m.name, member_id=consumer.memberid(),
                           partitions=[p.partition for p in partitions])

        def revoked(consumer, partitions):
            self.log.write("revoked", group=m.group, member=m.name, partitions=[p.partition for p in partitions])

        c.subscribe([topic_of(m.group)], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        last_commit = time.monotonic()
        while not self._stop.is_set():
            msg = c.poll(0.2)
            if time.monotonic() - last_commit >= 1.0 and c.assignment():
                last_commit = time.monotonic()
                try:
                    c.commit(asynchronous=False)
                    self.log.write("commit", group=m.group, member=m.name)
                except KafkaException as exc:  # nothing consumed since the last commit, or the coordinator is away
                    self.log.write("commit_failed", group=m.group, member=m.name, error=exc.args[0].name())
            if msg is not None and msg.error():
                continue
        c.close()


def produce(bootstrap: str, stop: threading.Event) -> None:
    """A steady producer: PRODUCE_PER_SECOND records a second to every partition of every group's topic."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": "50", "log_level": "0",
                  "message.timeout.ms": "300000"})
    while not stop.wait(1.0 / PRODUCE_PER_SECOND):
        for g in GROUPS:
            for part in range(PARTITIONS):
                try:
                    p.produce(topic_of(g), b"x", partition=part)
                except BufferError:
                    pass
        p.poll(0)
    p.flush(10)


def sample_end_offsets(bootstrap: str, out: Path, stop: threading.Event) -> None:
    """``end_offsets.jsonl``: one sample a second while the broker answers (high, stable and low ends of every
    workload partition and of the 50 ``__consumer_offsets`` partitions). A failed sample is left out: an outage
    shows as a gap, as it does in the heartbeat topic."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    def client() -> AdminClient:
        return AdminClient({"bootstrap.servers": bootstrap, "log_level": "0", "socket.timeout.ms": "2000"})

    admin = client()
    parts = [TopicPartition("__consumer_offsets", p) for p in range(50)]
    parts += [TopicPartition(topic_of(g), p) for g in GROUPS for p in range(PARTITIONS)]
    with open(out, "w", encoding="utf-8") as fh:
        while not stop.wait(max(0.0, 1.0 - time.time() % 1.0)):
            try:
                ends = {}
                for name, spec, level in (("high", OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
                                          ("stable", OffsetSpec.latest(), IsolationLevel.READ_COMMITTED),
                                          ("low", OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED)):
                    futures = admin.list_offsets({tp: spec for tp in parts}, isolation_level=level,
                                                 request_timeout=2)
                    for tp, f in futures.items():
                        offset = f.result(3).offset
                        if offset < 0:
                            raise ValueError(f"no offset for {tp}")
                        ends.setdefault(f"{tp.topic}:{tp.partition}", {})[name] = offset
            except Exception:  # noqa: BLE001 - the broker is away: no sample, and a fresh client for the next
                admin = client()
                continue
            fh.write(json.dumps({"t_ms": int(time.time() * 1000), "offsets": ends}, separators=(",", ":")) + "\n")
            fh.flush()


class Workload:
    """The producer, the sampler and every consumer, with the actions a plan performs on them."""

    def __init__(self, broker: KafkaBroker, out: Path, log: ClientLog) -> None:
        self.broker, self.out, self.log = broker, out, log
        self.stop_event = threading.Event()
        self.consumers: dict[str, Consumer] = {}
        self._threads: list[threading.Thread] = []

    def start(self, members: tuple[Member, ...] = HEALTHY, sample: bool = True) -> None:
        """Topics, the producer, ``members`` and (for a recording, not for a live job that has its own heartbeats)
        the end-offset sampler."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": "0"})
        for f in admin.create_topics([NewTopic(topic_of(g), PARTITIONS, 1) for g in GROUPS]).values():
            f.result(30)
        jobs: list[tuple[Callable, tuple]] = [(produce, (self.broker.bootstrap, self.stop_event))]
        if sample:
            jobs.append((sample_end_offsets, (self.broker.bootstrap, self.out / "end_offsets.jsonl",
                                              self.stop_event)))
        for target, args in jobs:
            t = threading.Thread(target=target, args=args, daemon=True)
            t.start()
            self._threads.append(t)
        for m in members:
            self.start_member(m)

    def start_member(self, m: Member) -> None:
        self.consumers[m.name] = Consumer(m, self.broker.bootstrap, self.log).start()

    def stop_member(self, name: str, how: str) -> None:
        c = self.consumers.pop(name, None)
        if c is not None:
            c.stop(how)

    def rolling_restart(self, group: str, gap_s: float = 12.0) -> None:
        """A deploy: each member of ``group`` closed and started again, one at a time, ``gap_s`` apart."""
        members = [m for m in HEALTHY if m.group == group]
        self.log.write("deploy_begin", group=group, members=len(members))
        for m in members:
            self.stop_member(m.name, "deploy")
            time.sleep(2)
            self.start_member(m)
            time.sleep(gap_s - 2)
        self.log.write("deploy_end", group=group)

    def crash_loop(self, until: float, lifetime_s: float = 5.0) -> None:
        """The control: each crash-loop member runs ``lifetime_s`` and exits, restarted a second later."""
        self.log.write("crashloop_begin", group=CRASH[0].group)
        while time.monotonic() < until and not self.stop_event.is_set():
            for m in CRASH:
                self.start_member(m)
            time.sleep(lifetime_s)
            for m in CRASH:
                self.stop_member(m.name, "crash")
            time.sleep(1.0)
        self.log.write("crashloop_end", group=CRASH[0].group)

    def broker_action(self, action: str, **fields) -> None:
        self.log.write(f"broker_{action}_begin", **fields)
        getattr(self.broker, action)()
        self.log.write(f"broker_{action}_done", **fields)

    def stop(self) -> None:
        for name in list(self.consumers):
            self.stop_member(name, "end")
        self.stop_event.set()
        for t in self._threads:
            t.join(15)


def background(fn: Callable[[], None]) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def plan_stop(w: Workload, t0: float) -> None:
    """A deploy, then a long outage (stopped 25 s, then started: about 45 s without a coordinator), then a short
    one (frozen 5 s), ending a minute after Kafka is back so the rejoins of every group are seen."""
    def at(s: float) -> None:
        time.sleep(max(0.0, t0 + s - time.monotonic()))

    crash = background(lambda: w.crash_loop(t0 + 150))
    at(15)
    w.rolling_restart("ok-rolling")
    at(55)
    w.broker_action("stop", outage="long")
    time.sleep(25)
    w.broker_action("start", outage="long")
    at(130)
    w.broker_action("freeze", outage="short")
    time.sleep(5)
    w.broker_action("resume", outage="short")
    at(172)
    crash.join(30)


def plan_freeze(w: Workload, t0: float) -> None:
    """A long freeze (25 s, as a hung broker or a network partition), then a broker restart in the middle of a
    deploy's rebalance."""
    def at(s: float) -> None:
        time.sleep(max(0.0, t0 + s - time.monotonic()))

    crash = background(lambda: w.crash_loop(t0 + 150))
    at(40)
    w.broker_action("freeze", outage="long")
    time.sleep(25)
    w.broker_action("resume", outage="long")
    at(95)
    deploy = background(lambda: w.rolling_restart("ok-rolling", gap_s=8.0))
    time.sleep(5)  # the first member's replacement is joining
    w.broker_action("restart", outage="restart")
    back = time.monotonic()
    deploy.join(60)
    # Until the restart's rejoin window (60 s after Kafka is back) is over: its event is written only then. A
    # restart takes 15-25 s on two busy cores, so a fixed end cut the window off.
    at(max(175.0, back - t0 + 70.0))
    crash.join(30)


PLANS = {"stop": plan_stop, "freeze": plan_freeze}


def record(plan: str, out: Path, version: str = "4.0.0") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="outage-broker-"))
    broker = KafkaBroker(kafka_install(version), work)
    log = ClientLog(out / "client_events.jsonl")
    broker.start()
    w = Workload(broker, out, log)
    try:
        w.start()
        PLANS[plan](w, time.monotonic())
    finally:
        w.stop()
        log.close()
        broker.stop()
    segments = out / "segments"
    shutil.rmtree(segments, ignore_errors=True)
    for d in sorted(broker.data_dir.glob("__consumer_offsets-*")):
        logs = [f for f in d.glob("*.log") if f.stat().st_size]
        if logs:
            (segments / d.name).mkdir(parents=True)
            for f in logs:
                shutil.copy(f, segments / d.name / f.name)
    events = [json.loads(line) for line in (out / "client_events.jsonl").read_text().splitlines()]
    (out / "labels.json").write_text(json.dumps(labels_from_events(events, plan, version), indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return out


def outages_from_events(events: list[dict]) -> list[dict]:
    """Each broker outage: when the broker stopped answering and when it answered again, from the broker
    actions (a freeze begins at SIGSTOP and ends at SIGCONT; a stop begins at SIGTERM and ends once the started
    broker answers metadata; a restart is both)."""
    out: list[dict] = []
    begin = None
    for e in events:
        kind = e["kind"]
        if kind in ("broker_freeze_begin", "broker_stop_begin", "broker_restart_begin"):
            begin = e
        elif kind in ("broker_resume_done", "broker_start_done", "broker_restart_done") and begin is not None:
            out.append({"from_ms": begin["t_ms"], "to_ms": e["t_ms"], "how": begin["kind"].split("_")[1]})
            begin = None
    return out


def labels_from_events(events: list[dict], plan: str, version: str) -> dict:
    """The verdicts an SRE expects, from the client log alone.

    * Healthy groups (every group but the crash loop): their processes never crashed, so never a storm. Their
      partitions are never STOP or STALL while the group commits (:func:`commit_silence`): from 15 s after its
      first commit until it falls silent while Kafka answers. A silence that begins before the workload ends is
      consumers that hung (librdkafka static members blocked in a commit after a freeze, seen on Kafka 4.0): every
      partition of the group is then expected STOP within a minute, as for any consumer that stopped.
    * The deploy: a rolling restart reported between its first member closing and a minute after its last start,
      when no outage fell inside it (or within 5 s of its end).
    * The crash loop: a storm while it runs.
    * Each outage longer than the session timeout: the groups whose members Kafka gave a new member id across it
      (a member's assignment before and after the outage under different ids, with no process restart between)
      are the groups it touched; one cluster event is expected for it.
    """
    t0, end = events[0]["t_ms"], events[-1]["t_ms"]
    outages = outages_from_events(events)
    labels: list[dict] = []
    healthy = sorted({m.group for m in HEALTHY})
    for g in healthy:
        labels.append({"group": g, "never": ["storm"]})
        first = min(e["t_ms"] for e in events if e["kind"] == "commit" and e["group"] == g)
        silent = commit_silence(events, g, outages)
        labels.append({"group": g, "partition": "*", "from_ms": first + 15_000, "to_ms": silent or end,
                       "not": ["STOP", "STALL"]})
        ending = min((e["t_ms"] for e in events if e["kind"] == "process_exit" and e.get("how") == "end"),
                     default=end)
        if silent is not None and silent + 60_000 <= ending:
            labels.append({"group": g, "partition": "*", "status": "STOP", "mode": "at_least_once",
                           "from_ms": silent, "to_ms": silent + 60_000})
    for begin in (e for e in events if e["kind"] == "deploy_begin"):
        done = next(e for e in events if e["kind"] == "deploy_end" and e["t_ms"] > begin["t_ms"])
        hit = any(o["from_ms"] < done["t_ms"] + 5_000 and o["to_ms"] > begin["t_ms"] for o in outages)
        if not hit:
            labels.append({"group": begin["group"], "expect": "rolling_restart", "from_ms": begin["t_ms"],
                           "to_ms": done["t_ms"] + 60_000})
    crash = [e for e in events if e["kind"] in ("crashloop_begin", "crashloop_end")]
    labels.append({"group": CRASH[0].group, "expect": "storm", "from_ms": crash[0]["t_ms"], "to_ms": crash[-1]["t_ms"]})
    for o in outages:
        o["groups_rejoined"] = sorted(_rejoined(events, o))
        o["expect_cluster_event"] = o["to_ms"] - o["from_ms"] > SESSION_TIMEOUT_MS
    return {
        "scenario": f"outage_{plan}", "kafka_version": version, "t0_ms": t0, "end_ms": end,
        "session_timeout_ms": SESSION_TIMEOUT_MS, "outages": outages, "labels": labels,
        "semantics": {
            "never": "none of these group verdicts is reported",
            "expect": "the verdict is reported at least once inside [from_ms, to_ms]",
            "not": "no partition of the group has one of these statuses inside [from_ms, to_ms]",
            "outages": "broker actions from the client log: [from_ms, to_ms] the broker did not answer; "
                       "groups_rejoined: groups a member of which got a new member id across the outage without "
                       "its process restarting; expect_cluster_event: longer than the session timeout",
        },
    }


def commit_silence(events: list[dict], group: str, outages: list[dict]) -> int | None:
    """When ``group`` stopped committing while Kafka answered (None: it never did before the log ends): the start
    of the first gap between its commits, or after its last, longer than ``SILENT_MS``, unless an outage explains
    it: the gap ends within ``REJOIN_GRACE_MS`` of Kafka answering, and begins before that (during the outage, or
    in the rebalance that follows it)."""
    commits = sorted(e["t_ms"] for e in events if e["kind"] == "commit" and e["group"] == group)
    for a, b in zip(commits, commits[1:] + [events[-1]["t_ms"]]):
        if b - a <= SILENT_MS:
            continue
        if any(o["from_ms"] < b <= o["to_ms"] + REJOIN_GRACE_MS and a < o["to_ms"] + REJOIN_GRACE_MS
               for o in outages):
            continue
        return a
    return None


def _rejoined(events: list[dict], outage: dict) -> set[str]:
    last_id: dict[str, str] = {}
    restarted: set[str] = set()
    groups: set[str] = set()
    for e in events:
        if e["kind"] == "process_start" and e["t_ms"] > outage["from_ms"]:
            restarted.add(e["member"])
        if e["kind"] != "assigned" or not e.get("member_id"):
            continue
        if e["t_ms"] <= outage["from_ms"]:
            last_id[e["member"]] = e["member_id"]
        elif e["member"] not in restarted and e["member"] in last_id and e["member_id"] != last_id[e["member"]] \
                and e["t_ms"] < outage["to_ms"] + 60_000:
            groups.add(e["group"])
    return groups


def relabel(folder: Path) -> None:
    """``labels.json`` derived again from a recording's ``client_events.jsonl`` (its plan and version kept)."""
    old = json.loads((folder / "labels.json").read_text())
    events = [json.loads(line) for line in (folder / "client_events.jsonl").read_text().splitlines()]
    plan = old["scenario"].removeprefix("outage_")
    (folder / "labels.json").write_text(json.dumps(labels_from_events(events, plan, old["kafka_version"]),
                                                   indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "relabel":  # python -m tests.realkafka.outage_recorder relabel FOLDER...
        for arg in sys.argv[2:]:
            relabel(Path(arg))
    else:
        record(sys.argv[1], Path(sys.argv[2]))
