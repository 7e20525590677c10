"""Test harness for the streaming job: a librdkafka mock cluster (a real Kafka-protocol broker over TCP) loaded with
real ``__consumer_offsets`` records, and read-backs used as the oracle."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Iterable

from confluent_kafka import Consumer, Producer, TopicPartition

from protocol.codec import decode_record
from streaming.config import Settings, load_settings
from streaming.model.shard import CoordinatorModel

OFFSETS = "__consumer_offsets"
HEARTBEAT = "groupscope-heartbeat"


def capture_rows(captures: Path, scenario: str) -> list[dict]:
    rows = [json.loads(line) for line in open(captures / "conformance" / "kafka-4.0" / scenario / "records.jsonl")]
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


def produce_capture(bootstrap: str, rows: Iterable[dict], *, txn_prefix: str = "cap") -> int:
    """Produces the captured data records in order per partition. Transactional batches go through a real
    transactional producer and end the way the capture's marker says (COMMIT or ABORT); transactions still open in
    the capture are left out. Returns the number of records produced."""
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "log_level": 3})
    txn: dict[int, Producer] = {}
    pending: dict[int, list[dict]] = {}
    produced = 0
    for r in rows:
        b = r["batch"]
        if b["is_control"]:
            pid = b["producer_id"]
            batch = pending.pop(pid, [])
            if not batch:
                continue
            p = txn.get(pid)
            if p is None:
                p = txn[pid] = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{txn_prefix}-{pid}",
                                         "log_level": 3})
                p.init_transactions(30)
            plain.flush(30)
            p.begin_transaction()
            for d in batch:
                p.produce(OFFSETS, key=bytes.fromhex(d["key_hex"]), value=_value(d), partition=d["partition"],
                          timestamp=d["timestamp"])
            if r["control"]["type"] == "COMMIT":
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
            produced += len(batch)
            continue
        if b["is_transactional"]:
            pending.setdefault(b["producer_id"], []).append(r)
            continue
        plain.produce(OFFSETS, key=bytes.fromhex(r["key_hex"]), value=_value(r), partition=r["partition"],
                      timestamp=r["timestamp"])
        produced += 1
    plain.flush(30)
    return produced


def _value(r: dict) -> bytes | None:
    return None if r["value_hex"] is None else bytes.fromhex(r["value_hex"])


def fill_topic(bootstrap: str, topic: str, partition: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    for i in range(count):
        p.produce(topic, value=b"m%d" % i, partition=partition)
    p.flush(30)


def read_committed(bootstrap: str, topic: str = OFFSETS, partitions: int = 50, *,
                   isolation: str = "read_committed") -> list:
    """Every record a read_committed consumer sees, as ``(partition, offset, timestamp, key, value)``
    (``isolation="read_uncommitted"``: aborted transactions' records too)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle", "isolation.level": isolation,
                  "enable.auto.commit": False, "log_level": 3})
    ends = {}
    for p in range(partitions):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
        if hi > lo:
            ends[p] = hi
    c.assign([TopicPartition(topic, p, 0) for p in ends])
    out = []
    deadline = time.time() + 30
    done: set[int] = set()
    while len(done) < len(ends) and time.time() < deadline:
        for m in c.consume(1000, 0.5):
            if m.error():
                continue
            out.append((m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value()))
        for tp in c.position([TopicPartition(topic, p) for p in ends]):
            if tp.offset >= ends[tp.partition]:
                done.add(tp.partition)
    c.close()
    return sorted(out)


def oracle_model(records) -> CoordinatorModel:
    model = CoordinatorModel()
    for partition, offset, ts, key, value in records:
        model.shard(partition).replay(offset, ts, decode_record(key, value))
    return model


def job_settings(bootstrap: str, root: Path, **over) -> Settings:
    base = {
        "cluster": "test",
        "kafka": {"bootstrap.servers": bootstrap},
        "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
        "delta": {"path": str(root / "delta")},
        "metrics": {"port": 0, "host": "127.0.0.1"},
        "heartbeat": {"interval_seconds": 1.0},
        "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 1.0},
    }
    for k, v in over.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return load_settings(None, base)


def worker_daemon_modules(root: int) -> set[str]:
    """The daemon modules Spark's task workers were forked from, among the processes below ``root``: a daemon runs
    as ``python -m DAEMON_MODULE pyspark.worker``."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True, check=True).stdout
    parents, commands = {}, {}
    for line in listing.splitlines():
        pid, ppid, *args = line.split()
        parents[int(pid)], commands[int(pid)] = int(ppid), args

    def below_root(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == root:
                return True
        return False

    return {args[i + 1] for pid, args in commands.items() for i in range(len(args) - 2)
            if args[i] == "-m" and args[i + 2] == "pyspark.worker" and below_root(pid)}
