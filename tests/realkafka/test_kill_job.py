"""``groupscope run`` killed with SIGKILL three times under load, on a real Kafka broker.

Real clients keep committing while the job runs: subscribed consumers of both group protocols (auto-commit, with
members joining and leaving, so the groups rebalance), standalone committers (``Consumer.commit(offsets=...)``) and a
transactional producer that commits offsets through ``send_offsets_to_transaction`` and aborts every third
transaction. The job's whole process group (driver, JVM, Spark's Python workers) is killed at a random moment after
a micro-batch finished, three times, and restarted on its checkpoint each time. Once the load stops and the last
start has caught up:

* the ``commits`` table holds exactly the offset commits a ``read_committed`` consumer of ``__consumer_offsets``
  sees: none missing, none extra, none twice, and none of the aborted transactions' offsets;
* every group's rebalance and verdict counters, in the ``groups`` table and on ``/metrics``, equal those of the
  model replayed from the same committed records, a run that was never killed;
* nothing of a killed job outlives it (no orphaned JVM or Python worker).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import yaml
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable

from tests.spark.harness import HEARTBEAT, oracle_model, read_committed
from tests.spark.test_restart import stable_counters

REPO = Path(__file__).resolve().parents[2]
EVENTS = "kill-events"
TXN_OUT = "kill-txn-out"
DIRECT_GROUPS = [f"kill-direct-{i}" for i in range(6)]
TXN_GROUP = "kill-txn"
COORDINATOR_BUSY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                    KafkaError.COORDINATOR_NOT_AVAILABLE}
#: Seconds after the last record by which every verdict of this workload is taken (the model's settle time is
#: 20 s), with a margin for the job's heartbeat clock.
SETTLE_S = 25.0
#: Counters the groups table and /metrics carry per group, by the groups table's column name.
COUNTER_COLUMNS = {"rebalances": "kafka_consumergroup_rebalances_total",
                   "storms": "kafka_consumergroup_rebalance_storms_total",
                   "rolling_restarts": "kafka_consumergroup_rolling_restarts_total",
                   "scale_outs": "kafka_consumergroup_scale_outs_total",
                   "scale_ins": "kafka_consumergroup_scale_ins_total",
                   "partitions_moved": "kafka_consumergroup_rebalance_partitions_moved_total"}


class Load:
    """The clients committing offsets, each on its own thread, until :meth:`stop`."""

    def __init__(self, bootstrap: str, rng: random.Random) -> None:
        self.bootstrap = bootstrap
        self.rng = rng
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self.threads: list[threading.Thread] = []
        self.aborted = self.committed_txns = 0

    def start(self) -> "Load":
        self._spawn(self._produce)
        # A classic and a KIP-848 group: one member from the start, a second joins later (the group scales out),
        # both leave when the load stops (the group empties). No member leaves a group that stays non-empty: that
        # verdict waits minutes for the member to come back, longer than this test.
        self._spawn(self._member, "kill-classic", "classic", 0.0)
        self._spawn(self._member, "kill-classic", "classic", 12.0)
        self._spawn(self._member, "kill-848", "consumer", 0.0)
        self._spawn(self._member, "kill-848", "consumer", 8.0)
        for group in DIRECT_GROUPS:
            self._spawn(self._direct, group)
        self._spawn(self._transactional)
        return self

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads), "a load thread did not stop"

    def _spawn(self, fn, *args) -> None:
        def guarded() -> None:
            try:
                fn(*args)
            except Exception as exc:  # noqa: BLE001 - reported by the test
                self.errors.append(f"{fn.__name__}{args}: {type(exc).__name__}: {exc}")

        t = threading.Thread(target=guarded, daemon=True)
        t.start()
        self.threads.append(t)

    def _produce(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20, "log_level": 3})
        i = 0
        while not self.stopping.wait(0.05):
            for _ in range(40):
                p.produce(EVENTS, value=b"e%d" % i, partition=i % 4)
                i += 1
            p.poll(0)
        p.flush(30)

    def _member(self, group: str, protocol: str, join_after: float) -> None:
        if self.stopping.wait(join_after):
            return
        conf = {"bootstrap.servers": self.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                "enable.auto.commit": True, "auto.commit.interval.ms": 300, "log_level": 3}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update({"session.timeout.ms": 10000, "heartbeat.interval.ms": 1000})
        c = Consumer(conf)
        c.subscribe([EVENTS])
        while not self.stopping.is_set():
            c.poll(0.2)
        c.close()

    def _direct(self, group: str) -> None:
        """A standalone committer: offsets of all four partitions, about 20 commits a second."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False,
                      "log_level": 3})
        position = 0
        while not self.stopping.wait(0.05):
            position += self.rng.randint(1, 50)
            try:
                c.commit(offsets=[TopicPartition(EVENTS, p, position + p) for p in range(4)], asynchronous=False)
            except KafkaException as exc:
                # The coordinator moves or loads while __consumer_offsets is created: a client retries.
                if exc.args[0].code() not in COORDINATOR_BUSY and not exc.args[0].retriable():
                    raise
                time.sleep(0.2)
        c.close()

    def _transactional(self) -> None:
        """Offsets committed inside transactions; every third one is aborted."""
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "kill-txn-producer", "log_level": 3})
        p.init_transactions(60)
        metadata = Consumer({"bootstrap.servers": self.bootstrap, "group.id": TXN_GROUP,
                             "enable.auto.commit": False, "log_level": 3})
        n = 0
        while not self.stopping.wait(0.1):
            n += 1
            p.begin_transaction()
            p.produce(TXN_OUT, value=b"t%d" % n)
            # Aborted offsets are far above the committed ones, so one that leaked into a table would show.
            base = 1_000_000_000 + n if n % 3 == 0 else n * 10
            p.send_offsets_to_transaction([TopicPartition(EVENTS, q, base + q) for q in range(4)],
                                          metadata.consumer_group_metadata(), 30)
            if n % 3 == 0:
                p.abort_transaction(30)
                self.aborted += 1
            else:
                p.commit_transaction(30)
                self.committed_txns += 1
        metadata.close()


def is_offset_commit(key: bytes | None) -> bool:
    """Key versions 0 and 1 of ``__consumer_offsets`` are offset commits (2 is group metadata, 3+ KIP-848)."""
    return key is not None and len(key) >= 2 and struct.unpack(">h", key[:2])[0] in (0, 1)


def process_tree(root: int) -> set[int]:
    """``root`` and every live process below it, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        tree |= below
        grew = bool(below)
    return tree


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_job_config(root: Path, cluster: str, bootstrap: str, port: int, *, heartbeat_s: float,
                     **sections: dict) -> Path:
    """``root/groupscope.yaml`` for a job watching a test broker: checkpoint and Delta tables under ``root``,
    a half-second trigger, snapshots every second and lag every two (``sections`` add to or replace a section)."""
    settings = {
        "cluster": cluster,
        "kafka": {"bootstrap.servers": bootstrap},
        "spark": {"checkpoint": str(root / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
        "delta": {"path": str(root / "delta")},
        "metrics": {"host": "127.0.0.1", "port": port},
        "heartbeat": {"interval_seconds": heartbeat_s},
        "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 2.0},
        **sections,
    }
    config = root / "groupscope.yaml"
    config.write_text(yaml.safe_dump(settings))
    return config


def start_job(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--config", str(config)],
                            cwd=REPO, stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


def kill_tree(job: subprocess.Popen) -> set[int]:
    """SIGKILL to the job's process group; returns the processes that were in its tree (all must end)."""
    tree = process_tree(job.pid)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait(30)
    return tree


def finished_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.is_dir() else 0


def test_kill_9_under_load_on_a_real_broker(own_kafka, tmp_path):
    rng = random.Random(int(os.environ.get("REALKAFKA_SEED", "11")))
    bootstrap = own_kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(EVENTS, 4, 1), NewTopic(HEARTBEAT, 1, 1),
                                  NewTopic(TXN_OUT, 1, 1)]).values():
        f.result(30)
    port = free_port()
    checkpoint = tmp_path / "cp"
    config = write_job_config(tmp_path, "kill9-real", bootstrap, port, heartbeat_s=1.0,
                              source={"max_offsets_per_trigger": 2000})
    log = tmp_path / "job.log"
    load = Load(bootstrap, rng).start()
    killed: set[int] = set()
    batches_at_kill = []
    job = None
    try:
        for _ in range(3):
            before = finished_batches(checkpoint)
            job = start_job(config, log)
            deadline = time.monotonic() + 120
            while finished_batches(checkpoint) <= before:
                assert job.poll() is None, f"the job exited; log: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no batch finished; log: {log.read_text()[-3000:]}"
                time.sleep(0.2)
            # A random moment of the batch cycle, while the clients keep committing.
            time.sleep(rng.uniform(0.5, 4.0))
            killed |= kill_tree(job)
            batches_at_kill.append(finished_batches(checkpoint))
        load.stop()
        assert not load.errors, load.errors
        committed = read_committed(bootstrap)
        uncommitted = read_committed(bootstrap, isolation="read_uncommitted")
        job = start_job(config, log)
        # Verdicts are taken once a group has been quiet for a while (20 s after the last members left): the
        # counters are read past that, so the job and the replayed model below judge the same, settled history.
        settled = max(ts for _, _, ts, _, _ in committed) / 1000 + SETTLE_S
        time.sleep(max(0.0, settled - time.time()))
        # Caught up: /ready, and the counters on /metrics settled (three equal scrapes 3 s apart).
        metrics = stable_counters(port, job, log, 150)
        now_ms = int(time.time() * 1000)
        want = Counter((p, o) for p, o, _, key, _ in committed if is_offset_commit(key))
        deadline = time.monotonic() + 60
        while True:
            table = DeltaTable(str(tmp_path / "delta" / "commits")).to_pyarrow_table(
                columns=["shard", "offset", "committed_offset"])
            got = Counter(zip(table.column("shard").to_pylist(), table.column("offset").to_pylist()))
            if set(got) >= set(want) or time.monotonic() > deadline:
                break
            time.sleep(1)
        events = DeltaTable(str(tmp_path / "delta" / "group_events")).to_pyarrow_table(
            columns=["shard", "offset", "kind", "detail"])
        group_rows = DeltaTable(str(tmp_path / "delta" / "groups")).to_pyarrow_table().to_pylist()
        groups = {r["group_id"]: r for r in group_rows}
        tail = log.read_text()
        job.send_signal(signal.SIGTERM)
        job.wait(90)
    finally:
        load.stopping.set()
        if job is not None and job.poll() is None:
            killed |= kill_tree(job)
    deadline = time.monotonic() + 15
    while any(alive(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.5)
    survivors = sorted(pid for pid in killed if alive(pid))
    assert not survivors, f"processes of a killed job still run: {survivors}"

    # The kills landed while the job was working, and each restart resumed from the checkpoint.
    assert len(batches_at_kill) == 3 and batches_at_kill == sorted(batches_at_kill), batches_at_kill
    assert tail.count("resumed from checkpoint at batch") == 3, "every restart resumes from the checkpoint"
    assert load.aborted >= 3 and load.committed_txns >= 6, (load.aborted, load.committed_txns)

    # commits table == the offset commits a read_committed consumer sees: nothing missing, extra or twice.
    missing, extra = set(want) - set(got), set(got) - set(want)
    assert not missing, f"{len(missing)} committed offset commits missing from the commits table"
    assert not extra, f"{len(extra)} rows of the commits table are not committed offset commits"
    assert max(got.values()) == 1, f"rows written twice: {[k for k, n in got.items() if n > 1][:5]}"
    event_keys = Counter(zip(*(events.column(c).to_pylist() for c in ("shard", "offset", "kind", "detail"))))
    assert event_keys and max(event_keys.values()) == 1, "a group event was written twice"
    # The aborted transactions' offset commits exist in the log and none reached the table.
    aborted = {(p, o) for p, o, _, key, _ in uncommitted if is_offset_commit(key)} - set(want)
    assert len(aborted) >= 4 * load.aborted, (len(aborted), load.aborted)
    assert not aborted & set(got)
    assert max(table.column("committed_offset").drop_null().to_pylist()) < 1_000_000_000, "an aborted offset"

    # Counters: the groups table and /metrics equal the model replayed from the committed records.
    model = oracle_model(committed)
    model.apply_heartbeat(now_ms, {})  # the job's clock: verdicts that time decides are taken up to now
    expected = {}
    for shard in model.shards.values():
        for gid in shard.groups:
            snap = shard._group_snapshot(gid, shard.now_ms, True)
            v = snap.verdicts
            expected[gid] = {"rebalances": snap.rebalances, "storms": v.storms, "rolling_restarts": v.rolling_restarts,
                             "scale_outs": v.scale_outs, "scale_ins": v.scale_ins,
                             "partitions_moved": v.partitions_moved, "causes": dict(v.causes)}
    live = {"kill-classic", "kill-848"}
    # The workload did what the test is about: otherwise equal counters prove little.
    assert live <= set(expected) and all(expected[g]["rebalances"] >= 2 for g in live), expected
    assert sum(sum(c.values()) for c in (expected[g]["causes"] for g in live)) >= 4, expected
    assert set(groups) == set(expected), set(groups) ^ set(expected)
    for gid, want_counts in expected.items():
        row = groups[gid]
        have = {c: row[c] for c in COUNTER_COLUMNS} | {"causes": {c["cause"]: c["rebalances"]
                                                                  for c in row["rebalance_causes"] or ()}}
        assert have == want_counts, f"{gid}: groups table {have} != replayed model {want_counts}"
        for column, family in COUNTER_COLUMNS.items():
            series = [v for (name, labels), v in metrics.items() if name == family and f'group="{gid}"' in labels]
            assert series == [float(want_counts[column])], f"{gid} {family}: {series} != {want_counts[column]}"
        causes = {labels: v for (name, labels), v in metrics.items()
                  if name == "kafka_consumergroup_rebalance_causes_total" and f'group="{gid}"' in labels}
        assert sorted(causes.values()) == sorted(float(n) for n in want_counts["causes"].values()), (gid, causes)
