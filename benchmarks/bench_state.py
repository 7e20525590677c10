"""Size and (de)serialization time of one shard's checkpointed state (what Spark stores per shard each batch).

Builds one shard with the public API only (``protocol.builders``, ``GroupCoordinatorShard.replay``,
``apply_heartbeat``, ``ShardStep``): ``--groups`` classic groups of 3 members that rebalanced once (so the
rebalance judge holds members and an open episode; the groups of ``bench_model.py``), 2 topics x 6 partitions committed 3 times each, and
``--heartbeats`` end-offset samples. Then measures, best of ``--repeat``:

* ``state_bytes``: ``ShardStep.state()``, the bytes the job checkpoints;
* ``encode_ms``: ``ShardStep.state()``;
* ``decode_ms``: ``ShardStep(shard, state=...)``;
* ``resave_ms``: a batch's round trip for a shard it does not touch: ``ShardStep(shard, state=...).state()``
  (groups, judgements and offsets restored on first use are saved as they were read).

Times are the process's CPU time (``time.process_time``), so other work on shared cores changes them less than
wall-clock time would.

``--against REV`` runs the same measurement on the code of git revision ``REV`` (extracted with ``git archive``
into a temporary folder, run in a subprocess) and prints both side by side, plus the time this code takes to read
(migrate) the state that revision wrote. Prints one line per figure; no asserts.

    .venv/bin/python benchmarks/bench_state.py --against 315ca1b
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_800_000_000_000


def build_step(groups: int, heartbeats: int):
    """One shard step holding ``groups`` classic groups (see the module docstring)."""
    from bench_model import _classic_generation as generation
    from protocol.codec import decode_record, encode_record
    from streaming.job.step import ShardStep

    step = ShardStep(0)
    shard = step.model
    off = 0
    for g in range(groups):
        gid = f"group-{g:05d}"
        for gen in (1, 2):  # the second generation replaces the members: the judge keeps an open episode
            shard.replay(off, T0 + gen * 30_000, decode_record(*encode_record(generation(gid, gen, T0))))
            off += 1
        for k in range(3):
            for topic in ("topic-a", "topic-b"):
                for p in range(6):
                    shard.replay_offset_commit(off, gid, topic, p, 1000 + p + 10 * k, 5, "", T0 + k * 20_000,
                                               T0 + k * 20_000)
                    off += 1
    for i in range(heartbeats):
        shard.apply_heartbeat(T0 + i * 10_000, {(t, p): 2000 + 100 * i for t in ("topic-a", "topic-b")
                                                for p in range(6)})
    return step


def measure(groups: int, heartbeats: int, repeat: int, dump: str | None = None) -> dict:
    from streaming.job.step import ShardStep

    step = build_step(groups, heartbeats)
    blob = step.state()
    # Out of the collector's sight, as a task worker's inherited heap is (streaming/spark/worker_daemon.py): a
    # worker's collections walk only what its task allocates, not a built shard beside the one being restored.
    gc.collect()
    gc.freeze()
    encode = decode = resave = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        blob = step.state()
        encode = min(encode, time.process_time() - t)
        t = time.process_time()
        ShardStep(0, state=blob)
        decode = min(decode, time.process_time() - t)
        t = time.process_time()
        ShardStep(0, state=blob).state()
        resave = min(resave, time.process_time() - t)
    if dump:
        Path(dump).write_bytes(blob)
    return {"state_bytes": len(blob), "encode_ms": encode * 1000, "decode_ms": decode * 1000,
            "resave_ms": resave * 1000}


def run_revision(rev: str, args: argparse.Namespace, dump: str) -> dict:
    """The same measurement on the code of ``rev`` (this script copied in, since ``rev`` may not have it)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "protocol", "streaming"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for name in ("bench_state.py", "bench_model.py"):
            (Path(tmp) / name).write_text((Path(__file__).parent / name).read_text())
        out = subprocess.run([sys.executable, str(Path(tmp) / "bench_state.py"), "--json", "--dump", dump,
                              "--groups", str(args.groups), "--heartbeats", str(args.heartbeats),
                              "--repeat", str(args.repeat)],
                             check=True, capture_output=True, text=True, cwd=tmp,
                             env={**os.environ, "PYTHONPATH": tmp})
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--heartbeats", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", metavar="REV", help="also measure the state format of git revision REV")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--dump", help="write the state to this file")
    args = ap.parse_args()
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
    mine = measure(args.groups, args.heartbeats, args.repeat, args.dump)
    if args.json:
        print(json.dumps(mine))
        return
    rows = [("this code", mine)]
    if args.against:
        from streaming.job.step import ShardStep

        with tempfile.TemporaryDirectory() as tmp:
            old_blob = Path(tmp) / "state.bin"
            rows.insert(0, (args.against, run_revision(args.against, args, str(old_blob))))
            data = old_blob.read_bytes()
            best = float("inf")
            for _ in range(args.repeat):
                t = time.process_time()
                ShardStep(0, state=data)
                best = min(best, time.process_time() - t)
            rows.append((f"this code reading {args.against}'s state", {"decode_ms": best * 1000}))
    print(f"shard state: {args.groups} classic groups x 12 partitions, {args.heartbeats} heartbeats, "
          f"best of {args.repeat}")
    for name, r in rows:
        size = f"{r['state_bytes']:>10,} B" if "state_bytes" in r else " " * 12
        enc = f"encode {r['encode_ms']:7.1f} ms" if "encode_ms" in r else " " * 17
        resave = f"  restore + save {r['resave_ms']:7.1f} ms" if "resave_ms" in r else ""
        print(f"  {name:<40} {size}  {enc}  decode {r['decode_ms']:7.1f} ms{resave}")


if __name__ == "__main__":
    main()
