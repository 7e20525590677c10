"""What reading partition ends costs the heartbeat emitter (``streaming.kafka.tail_probe``).

Against librdkafka's mock cluster over TCP: ``--topics`` topics of ``--partitions`` partitions each, every partition
holding ``--records`` plain records, and ``--transactional`` of the topics written by a transactional producer
(each partition ending on a COMMIT marker). Two emitters tick against the same broker in the same run, one with
the probe off (the reference) and one with it on; each tick is timed. With the probe on, the first ticks look at
every partition's last offset, at most ``heartbeat.tail_probe_partitions`` (200) and 2 s of reading a tick, until
all have been seen; after that only transactional partitions whose end moved are read. Prints per tick: the time,
the partitions read so far and the quiet rows the heartbeat carried. Usage::

    python benchmarks/bench_tail_probe.py [--topics 20] [--partitions 100] [--records 50] [--transactional 2]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Producer  # noqa: E402

from emitter_bench import arguments, cluster, timed_tick  # noqa: E402 - beside this file
from streaming.kafka.heartbeat import HeartbeatEmitter  # noqa: E402


def fill(bootstrap: str, topics: int, partitions: int, records: int, transactional: int) -> None:
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    for t in range(transactional, topics):
        for p in range(partitions):
            for i in range(records):
                plain.produce(f"topic-{t}", b"x" * 100, partition=p)
        plain.poll(0)
    plain.flush(60)
    for t in range(transactional):
        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{t}", "log_level": 3})
        txn.init_transactions(30)
        txn.begin_transaction()
        for p in range(partitions):
            for i in range(records):
                txn.produce(f"topic-{t}", b"x" * 100, partition=p)
        txn.commit_transaction(60)


def run(bootstrap: str, probe: bool, ticks: int) -> list[tuple[float, int, int]]:
    emitter = HeartbeatEmitter({"bootstrap.servers": bootstrap}, topic=f"hb-{'on' if probe else 'off'}",
                               include="^topic-", check_topic_config=False, probe_tails=probe)
    out = []
    for _ in range(ticks):
        elapsed = timed_tick(emitter)
        tails = emitter.tails
        seen = 0 if tails is None else len(tails._kind)  # noqa: SLF001 - a benchmark may look inside
        quiet = 0 if tails is None else len(tails.quiet({k: (e.end, e.end, 0) for k, e in tails._tails.items()}))  # noqa: SLF001
        out.append((elapsed, seen, quiet))
    emitter.stop()
    return out


def main() -> None:
    ap = arguments(__doc__, topics=20, records=50, ticks_help="default: enough to look at every partition, plus 2")
    ap.add_argument("--transactional", type=int, default=2)
    a = ap.parse_args()
    total = a.topics * a.partitions
    ticks = a.ticks or total // 200 + 4
    with cluster(a.topics, a.partitions) as mc:
        started = time.perf_counter()
        fill(mc.bootstrap_servers, a.topics, a.partitions, a.records, a.transactional)
        print(f"{a.topics} topics x {a.partitions} partitions ({total} partitions, {a.transactional} topics "
              f"transactional), {a.records} records each, written in {time.perf_counter() - started:.1f} s")
        off = run(mc.bootstrap_servers, False, ticks)
        on = run(mc.bootstrap_servers, True, ticks)
    print(f"{'tick':>4} {'probe off':>10} {'probe on':>10} {'looked at':>10} {'quiet rows':>10}")
    for i, ((t_off, _, _), (t_on, seen, quiet)) in enumerate(zip(off, on), 1):
        print(f"{i:>4} {t_off * 1000:>8.0f} ms {t_on * 1000:>7.0f} ms {seen:>10} {quiet:>10}")
    print(f"median tick: probe off {statistics.median(t for t, _, _ in off) * 1000:.0f} ms, "
          f"probe on {statistics.median(t for t, _, _ in on) * 1000:.0f} ms; after every partition was seen: "
          f"{statistics.median(t for t, s, _ in on if s == total) * 1000 if any(s == total for _, s, _ in on) else float('nan'):.0f} ms")


if __name__ == "__main__":
    main()
