"""Replays a recording through the job's own per-shard step and turns its events into a verdict timeline.

Nothing here re-implements the model: every ``__consumer_offsets`` partition gets a :class:`streaming.job.step.ShardStep`
(the code the Spark job runs per shard), fed one micro-batch per end-offset sample: the records written up to the
sample's time and one heartbeat carrying the sample, stamped with the sample's own time. The ``group_events`` rows the
steps return are what the job writes to Delta; :func:`timeline_from_events` reads verdicts out of such rows, so the
replay and a live run are compared on the same rows.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Iterator, Mapping

import pyarrow as pa

from streaming.model.events import VERDICT_OF_KIND
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.schema.cluster_events import merge_cluster_rows
from streaming.job.step import ShardStep, StepConfig
from streaming.schema.tables import SOURCE
from streaming.offline.recording.load import Recording

__all__ = ["TimelineEntry", "replay_batches", "replay_events", "replay_recording", "timeline_from_events",
           "VERDICT_OF_KIND"]

# ``group_events`` kinds of cluster events -> their name in a timeline.
CLUSTER_VERDICT_OF_KIND = {"KafkaUnavailable": "kafka_unavailable"}


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One verdict change, on the recording's own clock (``t_ms``)."""

    t_ms: int
    group: str
    scope: str  # "group" (rebalance verdicts), "partition" (statuses) or "cluster" (Kafka itself: group "")
    topic: str | None
    partition: int | None
    verdict: str
    previous: str | None
    reason: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def _ms(value) -> int:
    """An ``event_time`` cell (datetime or int ms) as epoch ms."""
    if isinstance(value, int):
        return value
    return int(value.timestamp() * 1000)


def timeline_from_events(rows: Iterable[Mapping]) -> list[TimelineEntry]:
    """Verdict changes from ``group_events`` rows (dicts with the table's columns), in time order.

    Status changes keep their ``old`` as ``previous``; a rebalance verdict's ``previous`` is the group's verdict
    before it (None for its first).
    """
    out: list[TimelineEntry] = []
    last_verdict: dict[str, str] = {}
    ordered = sorted(rows, key=lambda r: (_ms(r["event_time"]), r["shard"], r["offset"], r["kind"],
                                          r.get("topic") or "", r.get("partition") or 0))
    for r in ordered:
        kind = r["kind"]
        detail = json.loads(r["detail"]) if r.get("detail") else {}
        if kind == "StatusChanged":
            out.append(TimelineEntry(_ms(r["event_time"]), r["group_id"], "partition", r["topic"], r["partition"],
                                     r["new"], r["old"], detail.get("reason", "")))
        elif kind in CLUSTER_VERDICT_OF_KIND:
            out.append(TimelineEntry(_ms(r["event_time"]), "", "cluster", None, None, CLUSTER_VERDICT_OF_KIND[kind],
                                     None, detail.get("reason", "")))
        elif kind in VERDICT_OF_KIND:
            verdict = VERDICT_OF_KIND[kind]
            gid = r["group_id"]
            out.append(TimelineEntry(_ms(r["event_time"]), gid, "group", None, None, verdict, last_verdict.get(gid),
                                     detail.get("reason", "")))
            last_verdict[gid] = verdict
    return out


def _source_rows(records, heartbeat: bytes, heartbeat_topic: str, t_ms: int) -> pa.Table:
    topics = ["__consumer_offsets"] * len(records) + [heartbeat_topic]
    return pa.Table.from_pydict(
        {
            "key": [r.key for r in records] + [None],
            "value": [r.value for r in records] + [heartbeat],
            "topic": topics,
            "partition": [r.partition for r in records] + [0],
            "offset": [r.offset for r in records] + [0],
            "timestamp": [r.timestamp * 1000 for r in records] + [t_ms * 1000],
        },
        schema=SOURCE,
    )


def replay_batches(recording: Recording, config: StepConfig = StepConfig(),
                   restart_every: int | None = None,
                   after_sample: Callable[[int, dict[int, ShardStep]], None] | None = None,
                   ) -> Iterator[tuple[int, int, dict[str, pa.Table]]]:
    """Yields ``(sample time, shard, output tables)`` for every shard's micro-batch, sample after sample.

    ``restart_every`` rebuilds every step from its saved state each that many samples, as the job does when it
    restarts from its checkpoint (for tests that restarts change nothing). ``after_sample(seq, steps)`` is called
    once every shard has processed sample ``seq``; it may replace steps (a restart from a given checkpoint).
    """
    steps = {p: ShardStep(p, config) for p in recording.partitions}
    queues = {p: [r for r in recording.records if r.partition == p] for p in steps}
    cursor = dict.fromkeys(steps, 0)
    for seq, sample in enumerate(recording.samples):
        if restart_every and seq and seq % restart_every == 0:
            steps = {p: ShardStep(p, config, state=step.state()) for p, step in steps.items()}
        ends = [(t, p, hw, lso, lw) for (t, p), (hw, lso, lw) in sorted(sample.ends.items())]
        heartbeat = encode_heartbeats(sample.t_ms, "replay", seq, ends, chunk_size=max(1, len(ends)))[0]
        for p, step in steps.items():
            queue, i = queues[p], cursor[p]
            j = i
            while j < len(queue) and queue[j].timestamp <= sample.t_ms:
                j += 1
            cursor[p] = j
            tables, _ = step.process(_source_rows(queue[i:j], heartbeat, config.heartbeat_topic, sample.t_ms),
                                     wall_ms=sample.t_ms)
            yield sample.t_ms, p, tables
        if after_sample is not None:
            after_sample(seq, steps)


def replay_events(recording: Recording, config: StepConfig = StepConfig(),
                  after_sample: Callable[[int, dict[int, ShardStep]], None] | None = None) -> Iterator[dict]:
    """Yields every ``group_events`` row the job's steps produce for the recording, batch by batch
    (``after_sample``: see :func:`replay_batches`)."""
    batch: list[dict] = []
    current = None
    for t_ms, _, tables in replay_batches(recording, config, after_sample=after_sample):
        if t_ms != current:  # one sample is one micro-batch of every shard: its cluster events merge into one
            yield from merge_cluster_rows(batch)
            batch, current = [], t_ms
        events = tables.get("group_events")
        if events is not None:
            batch.extend(events.to_pylist())
    yield from merge_cluster_rows(batch)


def replay_recording(recording: Recording, config: StepConfig = StepConfig()) -> list[TimelineEntry]:
    """The verdict timeline of a recording, as the job would produce it."""
    return timeline_from_events(replay_events(recording, config))
