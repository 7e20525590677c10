"""What measuring time lag costs the heartbeat emitter (``streaming.kafka.oldest_probe``).

Against librdkafka's mock cluster over TCP: ``--topics`` topics of ``--partitions`` partitions each, every partition
holding ``--records`` records, and one lagging group committed in the middle of every partition (the list the job's
steps would hand the emitter). Two emitters tick against the same broker in the same run, one with the oldest-record
probe off (the reference) and one with it on (tail probe off in both, to see this probe alone); each tick is timed.
With the probe on, each tick reads the oldest offsets first, at most ``heartbeat.oldest_record_partitions`` (100)
and ``heartbeat.oldest_record_budget_seconds`` (1 s) of reading, until every lagging partition is measured; after
that nothing is read and the answers only travel in the heartbeat. Prints per tick: the time, the partitions
measured so far and the heartbeat's bytes. Usage::

    python benchmarks/bench_oldest_probe.py [--topics 10] [--partitions 100] [--records 100]
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
from streaming.kafka.oldest_probe import Lagging  # noqa: E402
from streaming.schema.heartbeat_format import encode_heartbeats  # noqa: E402


def fill(bootstrap: str, topics: int, partitions: int, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    now = int(time.time() * 1000)
    for t in range(topics):
        for p in range(partitions):
            for i in range(records):
                producer.produce(f"topic-{t}", b"x" * 100, partition=p, timestamp=now - (records - i) * 1000)
        producer.poll(0)
    producer.flush(60)


def run(bootstrap: str, probe: bool, ticks: int, lagging: list[Lagging]) -> list[tuple[float, int, int]]:
    emitter = HeartbeatEmitter({"bootstrap.servers": bootstrap}, topic=f"hb-{'on' if probe else 'off'}",
                               include="^topic-", check_topic_config=False, probe_tails=False, probe_oldest=probe)
    emitter.want_oldest(0, lagging)
    out = []
    for _ in range(ticks):
        elapsed = timed_tick(emitter)
        oldest = emitter.oldest.oldest() if emitter.oldest is not None else []
        ends = [(x.topic, x.partition, 0, 0, 0) for x in lagging]
        size = sum(len(m) for m in encode_heartbeats(0, emitter.emitter_id, 1, ends, oldest=oldest))
        out.append((elapsed, len(oldest), size))
    emitter.stop()
    return out


def main() -> None:
    ap = arguments(__doc__, topics=10, records=100, ticks_help="default: enough to measure every partition, plus 3")
    a = ap.parse_args()
    total = a.topics * a.partitions
    ticks = a.ticks or total // 100 + 3
    lagging = [Lagging(f"topic-{t}", p, a.records // 2, a.records // 2, float(t * a.partitions + p))
               for t in range(a.topics) for p in range(a.partitions)]
    with cluster(a.topics, a.partitions) as mc:
        started = time.perf_counter()
        fill(mc.bootstrap_servers, a.topics, a.partitions, a.records)
        print(f"{a.topics} topics x {a.partitions} partitions ({total} partitions, each lagging), {a.records} "
              f"records each, written in {time.perf_counter() - started:.1f} s")
        off = run(mc.bootstrap_servers, False, ticks, lagging)
        on = run(mc.bootstrap_servers, True, ticks, lagging)
    print(f"{'tick':>4} {'probe off':>10} {'probe on':>10} {'measured':>9} {'heartbeat':>10}")
    for i, ((t_off, _, size_off), (t_on, measured, size_on)) in enumerate(zip(off, on), 1):
        print(f"{i:>4} {t_off * 1000:>8.0f} ms {t_on * 1000:>7.0f} ms {measured:>9} {size_on / 1000:>7.1f} kB")
    done = [t for t, m, _ in on if m == total]
    print(f"median tick: probe off {statistics.median(t for t, _, _ in off) * 1000:.0f} ms, probe on "
          f"{statistics.median(t for t, _, _ in on) * 1000:.0f} ms; once all were measured: "
          f"{statistics.median(done) * 1000 if done else float('nan'):.0f} ms")


if __name__ == "__main__":
    main()
