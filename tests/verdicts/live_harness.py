"""Plays a recording into the *live* job, one end-offset sample per micro-batch, exactly as the offline replay
(:func:`streaming.offline.recording.replay.replay_events`) feeds the job's step.

The broker is librdkafka's mock cluster (a Kafka-protocol broker over TCP); the job is the real
:class:`streaming.driver.runner.GroupscopeJob` (groupscope_kafka source, local Spark, ``applyInPandasWithState``,
Delta sink), with its own heartbeat emitter disabled so the only heartbeats are the recording's samples.

Pacing. The replay hands the step one micro-batch per sample: the records with ``timestamp <= t_ms`` not yet given,
plus one heartbeat carrying the sample. To give the live job the very same batches, nothing is produced while the
job could plan a batch: sample 0 is produced before the job starts, and every later sample is produced while the
job is held inside the ``on_batch`` hook of the batch before it (the hook runs in this process, inside Spark's
``foreachBatch``, after the batch's Delta commit and before Spark plans the next batch; micro-batches are
sequential). When the hook returns, the next batch's planning sees the whole next sample and nothing more. Every
batch is checked (each of the 50 shards saw exactly one heartbeat, the sample's, and exactly the sample's records of
its partition), so a pacing slip fails loudly instead of producing a subtly different timeline.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

from streaming.job.batch_sink import BatchResult
from streaming.config import Settings, load_settings
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.kafka.mock_cluster import MockCluster
from streaming.offline.recording.load import EndOffsetSample, OffsetsRecord, Recording
from streaming.driver.runner import GroupscopeJob

__all__ = ["OFFSETS_PARTITIONS", "LiveRun", "live_settings", "play_live", "sample_batches"]

OFFSETS_PARTITIONS = 50
BATCH_TIMEOUT_S = 180.0  # one micro-batch (the first starts Spark's Python workers) must finish within this


def live_settings(bootstrap: str, root: Path) -> Settings:
    """The job's settings for the live run: every model and step setting left at its default (so the job's
    StepConfig is the replay's ``StepConfig()``; the test asserts it), no heartbeat emitter, no metrics endpoint,
    Delta (deltalake writer) and the checkpoint under ``root``. Only Spark's pacing knobs are changed: no pause
    between triggers (the batches are paced by the feed) and two shuffle partitions (two cores, 50 small shards)."""
    return load_settings(None, {
        "cluster": "live-path",
        "kafka": {"bootstrap.servers": bootstrap},
        "heartbeat": {"enabled": False},
        "metrics": {"enabled": False},
        "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 0, "shuffle_partitions": 2},
        "delta": {"path": str(root / "delta")},
    })


def sample_batches(recording: Recording, samples: list[EndOffsetSample] | None = None
                   ) -> list[tuple[EndOffsetSample, list[OffsetsRecord]]]:
    """``(sample, records)`` per micro-batch, as ``replay_events`` cuts them: per partition, the records (in offset
    order) up to the first one stamped after the sample's time."""
    samples = list(recording.samples) if samples is None else samples
    queues: dict[int, list[OffsetsRecord]] = {}
    for r in recording.records:
        queues.setdefault(r.partition, []).append(r)
    cursor = dict.fromkeys(queues, 0)
    out = []
    for sample in samples:
        batch: list[OffsetsRecord] = []
        for p, q in queues.items():
            i = j = cursor[p]
            while j < len(q) and q[j].timestamp <= sample.t_ms:
                j += 1
            cursor[p] = j
            batch.extend(q[i:j])
        out.append((sample, batch))
    return out


@dataclass
class LiveRun:
    settings: Settings
    batches: list[BatchResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def delta_path(self) -> Path:
        return Path(self.settings.delta.path)


class _Gate:
    """Holds the job inside ``on_batch`` until the feed has produced the next sample."""

    def __init__(self) -> None:
        self.done: queue.Queue[BatchResult] = queue.Queue()
        self.go = threading.Semaphore(0)
        self.finished = threading.Event()

    def on_batch(self, result: BatchResult) -> None:  # Spark's foreachBatch thread (py4j callback)
        if self.finished.is_set():
            return  # batches after the recording (e.g. Spark's no-data batches while stopping)
        self.done.put(result)
        if not self.go.acquire(timeout=BATCH_TIMEOUT_S):
            raise RuntimeError("live-path feed: the test did not release the job (feed crashed?)")

    def release(self) -> None:
        self.go.release()

    def finish(self) -> None:
        self.finished.set()
        self.go.release()


class _Feed:
    """Produces samples into the mock cluster: records at their original partition and timestamp, then the
    heartbeat encoded exactly as ``replay_events`` encodes it. Checks that the broker gave every record the
    offset it had in the recording (the step's caught-up test compares offsets with the heartbeat's end offsets,
    so the replay's equivalence needs them equal)."""

    def __init__(self, bootstrap: str, offsets_topic: str, heartbeat_topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "all",
                                  "enable.idempotence": True, "log_level": 3})
        self.offsets_topic = offsets_topic
        self.heartbeat_topic = heartbeat_topic
        self.errors: list[str] = []

    def _check(self, want_offset: int | None):
        def report(err, msg):
            if err is not None:
                self.errors.append(f"delivery failed: {err}")
            elif want_offset is not None and msg.offset() != want_offset:
                self.errors.append(f"{msg.topic()}:{msg.partition()} record landed at offset {msg.offset()}, "
                                   f"recorded at {want_offset}")
        return report

    def produce(self, seq: int, sample: EndOffsetSample, records: list[OffsetsRecord]) -> None:
        for r in records:
            self.producer.produce(self.offsets_topic, key=r.key, value=r.value, partition=r.partition,
                                  timestamp=r.timestamp, on_delivery=self._check(r.offset))
        ends = [(t, p, hw, lso, lw) for (t, p), (hw, lso, lw) in sorted(sample.ends.items())]
        heartbeat = encode_heartbeats(sample.t_ms, "replay", seq, ends, chunk_size=max(1, len(ends)))[0]
        self.producer.produce(self.heartbeat_topic, value=heartbeat, partition=0, timestamp=sample.t_ms,
                              on_delivery=self._check(None))
        if self.producer.flush(30) != 0:
            raise AssertionError(f"sample {seq}: not every message was delivered within 30 s")
        if self.errors:
            raise AssertionError(f"sample {seq}: " + "; ".join(self.errors[:5]))


    def close(self) -> None:
        self.producer.flush(10)
        self.producer = None  # librdkafka's handle goes before the broker does (no reconnect noise)


def _check_batch(result: BatchResult, seq: int, sample: EndOffsetSample, records: list[OffsetsRecord]) -> None:
    """The batch is exactly the sample: every shard applied one heartbeat (this sample's) and the sample's records
    of its partition."""
    want = {p: 0 for p in range(OFFSETS_PARTITIONS)}
    for r in records:
        want[r.partition] += 1
    got = {h.shard: h for h in result.health}
    problems = []
    if sorted(got) != sorted(want):
        problems.append(f"shards {sorted(set(want) ^ set(got))} missing or unexpected")
    for shard, h in sorted(got.items()):
        if h.heartbeats != 1 or h.heartbeat_ms != sample.t_ms:
            problems.append(f"shard {shard}: {h.heartbeats} heartbeat(s), clock {h.heartbeat_ms}, want 1 at "
                            f"{sample.t_ms}")
        if h.records != want.get(shard, 0):
            problems.append(f"shard {shard}: {h.records} records, want {want.get(shard, 0)}")
    if problems:
        raise AssertionError(f"micro-batch {result.batch_id} is not sample {seq} (t_ms {sample.t_ms}): "
                             + "; ".join(problems[:6]))


def play_live(recording: Recording, root: Path, *, samples: list[EndOffsetSample] | None = None,
              log=print) -> LiveRun:
    """Runs the live job over the recording (or over ``samples`` of it) and returns when every sample's batch is
    in Delta and the job is stopped."""
    plan = sample_batches(recording, samples)
    started = time.monotonic()
    with MockCluster(1) as mc:
        settings = live_settings(mc.bootstrap_servers, root)
        mc.create_topic(settings.source.offsets_topic, OFFSETS_PARTITIONS)
        mc.create_topic(settings.heartbeat.topic, 1)
        run = LiveRun(settings)
        gate = _Gate()
        feed = _Feed(mc.bootstrap_servers, settings.source.offsets_topic, settings.heartbeat.topic)
        feed.produce(0, *plan[0])  # before the job starts: its first batch is sample 0
        job = GroupscopeJob(settings, on_batch=gate.on_batch, install_signal_handlers=False)
        try:
            job.start()
            for seq, (sample, records) in enumerate(plan):
                result = _next_batch(gate, job, seq)
                run.batches.append(result)
                _check_batch(result, seq, sample, records)
                if seq + 1 < len(plan):
                    feed.produce(seq + 1, *plan[seq + 1])  # while the job is held in the batch's on_batch
                    gate.release()
                if log and (seq % 50 == 0 or seq + 1 == len(plan)):
                    log(f"  live: sample {seq + 1}/{len(plan)} processed, {time.monotonic() - started:.0f} s")
        finally:
            gate.finish()
            job.request_stop()
            # Every sample's batch is in Delta. With its stateful processing-time timeout the query now runs
            # "no new data" batches back to back (each longer than the trigger interval), so the job's graceful
            # stop, which waits for a moment between batches, would wait out its whole 60 s grace: stop the query
            # directly, then the job's services.
            q = job.query
            if q is not None:
                try:
                    q.stop()
                except Exception as exc:  # noqa: BLE001 - job.stop() below still stops the rest
                    log and log(f"  live: stopping the query: {exc}")
            job.stop()
            feed.close()
    run.seconds = time.monotonic() - started
    return run


def _next_batch(gate: _Gate, job: GroupscopeJob, seq: int) -> BatchResult:
    deadline = time.monotonic() + BATCH_TIMEOUT_S
    while True:
        try:
            return gate.done.get(timeout=0.5)
        except queue.Empty:
            pass
        q = job.query
        dead = q is None or not q.isActive
        if dead or time.monotonic() > deadline:
            raise AssertionError(f"the job {'stopped' if dead else 'did not finish the batch'} before sample "
                                 f"{seq}'s batch was written (waited {BATCH_TIMEOUT_S:.0f} s at most; last error: "
                                 f"{job.status.last_error}; query exception: {_query_error(job)})")


def _query_error(job: GroupscopeJob) -> str | None:
    try:
        q = job.query
        exc = q.exception() if q is not None else None
        return None if exc is None else str(exc)[:2000]
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        return f"(unavailable: {exc})"


def timeline_diff(want: list, got: list, limit: int = 12) -> str:
    """A readable account of where two timelines part: counts, then the first differing entries side by side."""
    lines = [f"replay has {len(want)} entries, live has {len(got)}"]
    shown = 0
    for i in range(max(len(want), len(got))):
        a = want[i] if i < len(want) else None
        b = got[i] if i < len(got) else None
        if a == b:
            continue
        lines.append(f"  #{i}")
        lines.append(f"    replay: {_fmt(a)}")
        lines.append(f"    live:   {_fmt(b)}")
        shown += 1
        if shown >= limit:
            lines.append("  ...")
            break
    order = lambda e: (e.t_ms, e.group, e.topic or "", e.partition or 0, e.verdict)  # noqa: E731
    only_want = sorted(set(want) - set(got), key=order)
    only_got = sorted(set(got) - set(want), key=order)
    if only_want or only_got:
        lines.append(f"  only in replay ({len(only_want)}):")
        lines += [f"    {_fmt(e)}" for e in only_want[:limit]]
        lines.append(f"  only in live ({len(only_got)}):")
        lines += [f"    {_fmt(e)}" for e in only_got[:limit]]
    return "\n".join(lines)


def _fmt(e) -> str:
    if e is None:
        return "(none)"
    where = f"{e.topic}:{e.partition}" if e.scope == "partition" else "(group)"
    return f"{e.t_ms} {e.group} {where} {e.previous or '-'} -> {e.verdict} ({e.reason})"
