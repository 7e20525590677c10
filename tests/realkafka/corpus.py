"""Plays consumer-group shapes with real clients on a real broker and records each with ``groupscope record``.

Why: the verdicts must be right on what real clients make Kafka write, and a shape an SRE pages on (a crash loop,
a deploy, a stuck consumer) is best kept as a recording that replays on any machine. This driver starts one KRaft
broker, then for each shape: a topic and a producer, ``groupscope record`` watching the shape's groups, the
scripted clients (``corpus_member.py`` processes with librdkafka, or Kafka's Java ``VerifiableConsumer``), and
it logs every client action to ``client_events.jsonl``. ``labels.json`` is then derived from that log alone
(``corpus_shapes.py`` says how for each shape), before anything replays the recording.

    python -m tests.realkafka.corpus SHAPE[,SHAPE...]|all OUT_DIR [--version 4.4.0] [--lanes 2] [--relabel]

Each shape lands in ``OUT_DIR/SHAPE/`` (``records.jsonl``, ``end_offsets.jsonl``, ``client_events.jsonl``,
``labels.json``). ``--lanes`` plays that many shapes at once on the one broker (their names never meet).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.realkafka.broker import KafkaBroker
from tests.realkafka.corpus_labels import ClientLog, labels_file
from tests.realkafka.install import kafka_install
from tests.realkafka.tools import consumer_groups

REPO = Path(__file__).resolve().parents[2]

#: Short sessions keep each shape to a minute or two: a killed member is gone after seconds, not 45 s.
BROKER_SETTINGS = {
    "group.min.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.session.timeout.ms": "8000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def now_ms() -> int:
    return int(time.time() * 1000)


class EventLog:
    """The client log of one shape: appended from the driver and from every member's output thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[dict] = []

    def add(self, event: str, **fields) -> dict:
        e = {"t_ms": fields.pop("t_ms", None) or now_ms(), "event": event, **fields}
        with self._lock:
            self.events.append(e)
        return e

    def write(self, path: Path) -> None:
        with self._lock:
            events = sorted(self.events, key=lambda e: e["t_ms"])
        path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events), encoding="utf-8")


class Proc:
    """One client process and the thread that copies its output into the log."""

    def __init__(self, name: str, group: str, popen: subprocess.Popen, log: EventLog, java: bool) -> None:
        self.name, self.group, self.popen, self.log = name, group, popen, log
        self.commits = 0
        self._thread = threading.Thread(target=self._read, args=(java,), daemon=True)
        self._thread.start()

    def _read(self, java: bool) -> None:
        for line in self.popen.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if java:
                self._java_event(e)
            else:
                e.setdefault("member", self.name)
                self.log.add(e.pop("event"), source="member", group=self.group, **e)

    def _java_event(self, e: dict) -> None:
        name = e.get("name")
        if name in ("records_consumed",):
            return
        if name == "offsets_committed":
            self.commits += 1
            if self.commits % 20:
                return  # one in twenty: the log says it commits, without a line per batch
        parts = [f"{p['topic']}:{p['partition']}" for p in e.get("partitions", []) if "topic" in p]
        kind = {"partitions_assigned": "assigned", "partitions_revoked": "revoked"}.get(name, f"java_{name}")
        t_ms = int(e["timestamp"]) if "timestamp" in e else None
        self.log.add(kind, source="member", group=self.group, member=self.name, partitions=parts, t_ms=t_ms)

    def alive(self) -> bool:
        return self.popen.poll() is None


class Run:
    """The actions a shape's script takes, each logged: topics, producer rates, member processes and signals."""

    def __init__(self, broker: KafkaBroker, shape: str, log: EventLog) -> None:
        self.broker, self.shape, self.log = broker, shape, log
        self.procs: list[Proc] = []
        self.topics: dict[str, int] = {}
        self._rate = 0.0
        self._stop = threading.Event()
        self._producer_thread: threading.Thread | None = None
        self._burst = 0

    def topic(self, name: str, partitions: int = 4) -> str:
        topic = f"{self.shape}-{name}"
        admin = AdminClient({"bootstrap.servers": self.broker.bootstrap, "log_level": 3})
        for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            f.result(30)
        self.topics[topic] = partitions
        self.log.add("topic_created", source="driver", topic=topic, partitions=partitions)
        return topic

    def produce(self, rate: float) -> None:
        """Messages per second over every partition of the shape's topics (round robin)."""
        self._rate = rate
        self.log.add("producer_rate", source="driver", rate_msgs_per_s=rate)
        if self._producer_thread is None:
            self._producer_thread = threading.Thread(target=self._produce, daemon=True)
            self._producer_thread.start()

    def burst(self, messages: int) -> None:
        self._burst += messages
        self.log.add("producer_burst", source="driver", messages=messages)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self.broker.bootstrap, "linger.ms": 20, "log_level": 3})
        targets = [(t, p) for t, n in self.topics.items() for p in range(n)]
        i, sent_until = 0, time.monotonic()
        while not self._stop.is_set():
            sent_until = max(sent_until, time.monotonic() - 1)
            due = int((time.monotonic() - sent_until) * self._rate) + self._burst
            self._burst = 0
            for _ in range(due):
                t, p = targets[i % len(targets)]
                i += 1
                try:
                    producer.produce(t, b"x" * 64, partition=p)
                except BufferError:
                    producer.poll(0.1)
            if due:
                sent_until = time.monotonic()
            producer.poll(0.05)
        producer.flush(5)

    def member(self, name: str, group: str, topic: str, **opts) -> Proc:
        args = [sys.executable, "-m", "tests.realkafka.corpus_member", "--bootstrap", self.broker.bootstrap,
                "--group", f"{self.shape}-{group}", "--topic", topic, "--name", name]
        for k, v in opts.items():
            flag = "--" + k.replace("_", "-")
            args += [flag] if v is True else [flag, str(v)]
        return self._start(name, f"{self.shape}-{group}", args, java=False, how="confluent-kafka " + json.dumps(opts))

    def java(self, name: str, group: str, topic: str, assignor: str = "RangeAssignor",
             protocol: str = "classic") -> Proc:
        extra = ["--group-protocol", "consumer"] if protocol == "consumer" else [
            "--assignment-strategy", f"org.apache.kafka.clients.consumer.{assignor}", "--session-timeout", "6000"]
        args = self.broker.install.java_command(
            "org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server", self.broker.bootstrap,
            "--topic", topic, "--group-id", f"{self.shape}-{group}", "--reset-policy", "earliest", *extra,
            heap="128m")
        return self._start(name, f"{self.shape}-{group}", args, java=True,
                           how=f"Java VerifiableConsumer {protocol} {assignor}")

    def _start(self, name: str, group: str, args: list[str], *, java: bool, how: str) -> Proc:
        popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                 text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                                 start_new_session=True)
        self.log.add("process_start", source="driver", group=group, member=name, pid=popen.pid, how=how)
        proc = Proc(name, group, popen, self.log, java)
        self.procs.append(proc)
        return proc

    def signal(self, proc: Proc, sig: int, wait: bool = True) -> None:
        """Sends ``sig`` (SIGKILL: kill -9; SIGUSR1: crash exit without close; SIGTERM: clean close)."""
        self.log.add("signal", source="driver", group=proc.group, member=proc.name,
                     signal=signal.Signals(sig).name)
        try:
            os.killpg(proc.popen.pid, sig)
        except ProcessLookupError:
            pass
        if wait:
            self.reap(proc)

    def reap(self, proc: Proc, timeout: float = 20) -> None:
        try:
            code = proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.popen.pid, signal.SIGKILL)
            code = proc.popen.wait(10)
            self.log.add("signal", source="driver", group=proc.group, member=proc.name, signal="SIGKILL",
                         why="did not exit in time")
        self.log.add("process_exit", source="driver", group=proc.group, member=proc.name, returncode=code)

    def wait_assigned(self, proc: Proc, timeout: float = 30) -> None:
        """Until the member reported a non-empty assignment after it started (a deploy waits for readiness)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e.get("member") == proc.name and e["event"] == "assigned" and e.get("partitions")
                   for e in list(self.log.events)):
                return
            time.sleep(0.2)

    def reset_offsets(self, group: str, topic: str) -> None:
        gid = f"{self.shape}-{group}"
        self.log.add("reset_offsets_start", source="operator", group=gid, topic=topic, to="earliest")
        out = consumer_groups(self.broker, "--reset-offsets", "--group", gid, "--topic", topic, "--to-earliest",
                              "--execute")
        self.log.add("reset_offsets_end", source="operator", group=gid, topic=topic, output=out.strip()[-300:])

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        self._stop.set()
        for proc in self.procs:
            if proc.alive():
                try:
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.popen.wait(10)
        if self._producer_thread is not None:
            self._producer_thread.join(10)


def play(broker: KafkaBroker, shape: str, out: Path) -> Path:
    """Plays one shape on ``broker`` into ``out/shape``; returns that folder."""
    from tests.realkafka.corpus_shapes import SHAPES

    spec = SHAPES[shape]
    folder = out / shape
    log = EventLog()
    run = Run(broker, spec.prefix, log)
    recorder = subprocess.Popen(
        [sys.executable, "-m", "streaming.commands.cli", "record", "--bootstrap", broker.bootstrap,
         "--group", f"{spec.prefix}-.*", str(folder)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    log.add("recorder_started", source="driver", pid=recorder.pid, kafka=broker.version)
    time.sleep(3)  # the recorder is reading before the first client acts
    log.add("scenario_t0", source="driver", shape=shape)
    try:
        spec.script(run)
    finally:
        log.add("recorder_stopping", source="driver")
        os.killpg(recorder.pid, signal.SIGINT)
        stdout, stderr = recorder.communicate(timeout=30)
        log.add("recorder_stopped", source="driver", summary=stdout.strip().replace(f"{out}/", ""),
                returncode=recorder.returncode)  # the folder's name, not where this machine kept it
        run.close()
    log.write(folder / "client_events.jsonl")
    write_labels(folder, shape)
    print(f"{shape}: {stdout.strip()}", flush=True)
    return folder


def write_labels(folder: Path, shape: str) -> None:
    """``labels.json`` from the folder's ``client_events.jsonl`` alone (run again with ``--relabel``)."""
    from tests.realkafka.corpus_shapes import SHAPES

    events = [json.loads(line) for line in (folder / "client_events.jsonl").read_text().splitlines() if line]
    client_log = ClientLog.of(events)
    labels, notes = SHAPES[shape].labels(client_log)
    (folder / "labels.json").write_text(json.dumps(labels_file(shape, client_log, labels, notes), indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    from tests.realkafka.corpus_shapes import SHAPES

    p = argparse.ArgumentParser(description="Record corpus shapes with real clients on a real broker.")
    p.add_argument("shapes", help=f"comma-separated, or 'all': {', '.join(SHAPES)}")
    p.add_argument("out", type=Path)
    p.add_argument("--version", default="4.4.0")
    p.add_argument("--lanes", type=int, default=1)
    p.add_argument("--relabel", action="store_true", help="only derive labels.json again from the client logs in OUT")
    a = p.parse_args(argv)
    names = list(SHAPES) if a.shapes == "all" else a.shapes.split(",")
    if a.relabel:
        for name in names:
            if (a.out / name / "client_events.jsonl").is_file():
                write_labels(a.out / name, name)
        return
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        sys.exit(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
    a.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="corpus-kafka-") as tmp:
        broker = KafkaBroker(kafka_install(a.version), Path(tmp), settings=BROKER_SETTINGS)
        broker.start()
        try:
            queue = list(names)
            lock = threading.Lock()

            def lane() -> None:
                while True:
                    with lock:
                        if not queue:
                            return
                        shape = queue.pop(0)
                    try:
                        play(broker, shape, a.out)
                    except Exception as exc:  # noqa: BLE001 - one failed shape must not lose the others
                        print(f"{shape}: FAILED {type(exc).__name__}: {exc}", flush=True)

            lanes = [threading.Thread(target=lane) for _ in range(max(1, a.lanes))]
            for t in lanes:
                t.start()
            for t in lanes:
                t.join()
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
