"""Throughput, memory and state size of the group model (``streaming.model``).

Measures, on inputs built from a fixed seed with ``protocol.builders`` and the codec:

* ``commits_fast``: offset commits/s through ``GroupCoordinatorShard.replay_offset_commit`` (plain values, the
  Spark path after vectorised decode). Target: >= 500,000 commits/s/core.
* ``commits_typed``: offset commits/s through ``replay`` with already-decoded ``CoordinatorRecord`` objects.
* ``mixed_typed``: records/s through ``replay`` for a mixed stream (commits plus classic and KIP-848 group records).
* ``memory``: bytes per tracked group-partition (tracemalloc) and the extrapolation to one million.
  Target: <= 200 B per group-partition.
* ``snapshot``: group-partitions/s evaluated by a full shard snapshot (lag, time lag, membership facts, status
  rules), on the groups of ``state`` below.
* ``state``: ``to_bytes()`` size per 1,000 groups (each group: 1 classic generation with 3 members, 2 topics x 6
  partitions committed, end offsets with history).

Prints ``name value unit (n, repeats, python, cpu)``. Warms up, best of ``--repeat`` runs. No asserts.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import random
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run as a script from anywhere

from protocol import builders as b  # noqa: E402
from protocol.codec import decode_record, encode_record  # noqa: E402
from streaming.model.shard import GroupCoordinatorShard  # noqa: E402

T0 = 1_800_000_000_000


def _env(n: int, repeat: int) -> str:
    return f"({n}, {repeat}, python {platform.python_version()}, {platform.processor() or platform.machine()})"


def _commit_rows(n: int, groups: int = 20, partitions: int = 100, seed: int = 7):
    rnd = random.Random(seed)
    rows = []
    offs = {}
    for i in range(n):
        g, p = rnd.randrange(groups), rnd.randrange(partitions)
        offs[(g, p)] = offs.get((g, p), 0) + rnd.randrange(1, 50)
        rows.append((i, f"group-{g}", "topic-a", p, offs[(g, p)], -1, "", T0 + i))
    return rows


def bench_fast(rows, repeat: int) -> float:
    best = 0.0
    for _ in range(repeat + 1):
        shard = GroupCoordinatorShard(0)
        f = shard.replay_offset_commit
        t = time.perf_counter()
        for off, g, topic, p, o, e, md, ts in rows:
            f(off, g, topic, p, o, e, md, ts, ts)
        best = max(best, len(rows) / (time.perf_counter() - t))
    return best


def bench_typed(records, repeat: int) -> float:
    best = 0.0
    for _ in range(repeat + 1):
        shard = GroupCoordinatorShard(0)
        f = shard.replay
        t = time.perf_counter()
        for off, ts, rec in records:
            f(off, ts, rec)
        best = max(best, len(records) / (time.perf_counter() - t))
    return best


def _typed_commits(rows):
    return [(off, ts, decode_record(*encode_record(b.new_offset_commit(g, topic, p, o, commit_timestamp=ts))))
            for off, g, topic, p, o, e, md, ts in rows]


def _classic_generation(g: str, gen: int, ts: int):
    members = [b.new_classic_member(f"{g}-m{i}-{gen}", client_id=f"{g}-m{i}",
                                    subscription=b.new_consumer_subscription(["topic-a", "topic-b"]),
                                    assignment=b.new_consumer_assignment({"topic-a": [2 * i, 2 * i + 1],
                                                                          "topic-b": [2 * i, 2 * i + 1]}))
               for i in range(3)]
    return b.new_group_metadata(g, generation=gen, protocol_type="consumer", protocol="range",
                                leader=members[0].member_id, members=members, current_state_timestamp=ts)


def _mixed(n: int):
    rows = _commit_rows(n)
    out = []
    for i, (off, g, topic, p, o, e, md, ts) in enumerate(rows):
        if i % 100 == 0:
            rec = _classic_generation(g, i // 100 + 1, ts)
        else:
            rec = b.new_offset_commit(g, topic, p, o, commit_timestamp=ts)
        out.append((off, ts, decode_record(*encode_record(rec))))
    return out


def bench_memory(groups: int = 1000, topics: int = 2, partitions: int = 100) -> float:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    shard = GroupCoordinatorShard(0)
    off = 0
    for k in range(3):  # three commits per partition fill part of the window
        for g in range(groups):
            gid = f"group-{g:05d}"
            for t in range(topics):
                for p in range(partitions):
                    shard.replay_offset_commit(off, gid, f"topic-{t}", p, 1000 + k, -1, "", T0 + k * 60_000,
                                               T0 + k * 60_000)
                    off += 1
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / (groups * topics * partitions)


def _state_shard(groups: int = 1000, heartbeats: int = 10) -> GroupCoordinatorShard:
    """``groups`` classic groups (3 members), 2 topics x 6 partitions committed, ``heartbeats`` of history."""
    shard = GroupCoordinatorShard(0)
    off = 0
    for g in range(groups):
        gid = f"group-{g:05d}"
        shard.replay(off, T0, decode_record(*encode_record(_classic_generation(gid, 1, T0))))
        off += 1
        for topic in ("topic-a", "topic-b"):
            for p in range(6):
                shard.replay_offset_commit(off, gid, topic, p, 1000 + p, 5, "", T0, T0)
                off += 1
    for i in range(heartbeats):
        shard.apply_heartbeat(T0 + i * 10_000, {(t, p): 2000 + 100 * i for t in ("topic-a", "topic-b")
                                                for p in range(6)})
    return shard


def bench_state(groups: int = 1000) -> tuple[int, int]:
    shard = _state_shard(groups)
    blob = shard.to_bytes()
    assert GroupCoordinatorShard.from_bytes(blob).offsets.partition_count() == groups * 12
    return len(blob), groups * 12


def bench_snapshot(repeat: int, groups: int = 1000, heartbeats: int = 10, caught_up: bool = True) -> float:
    """Group-partitions evaluated per second by a full ``snapshot`` (lag, time lag, membership, status rules).
    ``heartbeats``: samples in each partition's end-offset history (a live job's fill up to 64 in ~5 minutes).
    ``caught_up=False``: a snapshot while the job replays history, as every batch of a catch-up takes."""
    shard = _state_shard(groups, heartbeats)
    now = T0 + heartbeats * 10_000
    shard.snapshot(now, caught_up)
    best = float("inf")
    for i in range(repeat):
        t = time.perf_counter()
        shard.snapshot(now + i, caught_up)
        best = min(best, time.perf_counter() - t)
    return groups * 12 / best


def bench_heartbeat(repeat: int, groups: int = 10_000, per_run: int = 50) -> float:
    """Milliseconds to apply one heartbeat (12 end offsets) to a shard of ``groups`` groups: the verdicts that time
    decides (settled episodes, ended storms, members whose silence became certain) are looked for at each."""
    shard = _state_shard(groups, 1)
    ends = {(t, p): 5000 for t in ("topic-a", "topic-b") for p in range(6)}
    best = float("inf")
    for r in range(repeat):
        t = time.perf_counter()
        for i in range(per_run):
            shard.apply_heartbeat(T0 + 1_000_000 + (r * per_run + i) * 5000, ends)
        best = min(best, (time.perf_counter() - t) / per_run)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = _commit_rows(a.records)
    print(f"commits_fast {bench_fast(rows, a.repeat):,.0f} commits/s {_env(a.records, a.repeat)}")
    typed = _typed_commits(rows[: a.records // 5])
    print(f"commits_typed {bench_typed(typed, a.repeat):,.0f} records/s {_env(len(typed), a.repeat)}")
    mixed = _mixed(a.records // 5)
    print(f"mixed_typed {bench_typed(mixed, a.repeat):,.0f} records/s {_env(len(mixed), a.repeat)}")
    per = bench_memory()
    print(f"memory {per:,.0f} bytes/group-partition = {per * 1e6 / 2**20:,.0f} MiB per million group-partitions "
          f"{_env(200_000, 1)}")
    print(f"snapshot {bench_snapshot(a.repeat):,.0f} group-partitions/s evaluated {_env(12_000, a.repeat)}")
    print(f"snapshot_full_history {bench_snapshot(a.repeat, heartbeats=64):,.0f} group-partitions/s evaluated, "
          f"64 end-offset samples each {_env(12_000, a.repeat)}")
    print(f"snapshot_replaying {bench_snapshot(a.repeat, caught_up=False):,.0f} group-partitions/s while replaying "
          f"history (statuses held) {_env(12_000, a.repeat)}")
    print(f"heartbeat {bench_heartbeat(a.repeat):.2f} ms per heartbeat applied at 10,000 groups "
          f"{_env(50, a.repeat)}")
    size, gps = bench_state()
    print(f"state {size:,} bytes per 1,000 groups ({size / gps:.1f} bytes/group-partition, 12 per group) "
          f"{_env(1000, 1)}")


if __name__ == "__main__":
    main()
