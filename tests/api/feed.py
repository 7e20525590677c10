"""Realistic input for the API tests: the workload simulator's scenarios replayed through the group model.

The simulator writes what Kafka's coordinator would write (into memory); every few simulated seconds the new records
are replayed into a ``CoordinatorModel`` and a heartbeat carries the topics' end offsets, as the job's step does. The
last snapshot's rows (``streaming.schema.tables``) go to a real ``MetricsState``, the state the API serves; the
snapshot objects themselves stay here as the oracle the tests compare every field against.

One partition's low watermark is moved to its end before the last snapshot, as if retention had deleted what the
groups reading it never read: that partition shows data loss (ERR) beside their lagging (WARN) ones, and the
stopped group stays STOP. The scenarios cover every other status: lagging (WARN), stalled
(STALL), stopped (STOP), replay-from-earliest (a REWIND), KIP-848 and static members (owners and epochs).
"""

from __future__ import annotations

from dataclasses import dataclass

from streaming.model import events as ev
from streaming.model.lag import EndOffsetSample
from streaming.model.shard import CoordinatorModel
from streaming.schema import tables
from streaming.simulator import MemorySink, Simulation
from streaming.simulator.sinks import replay_entries
from streaming.sinks.prometheus import MetricsState, MonitorHealth, OffsetsPartitionHealth

__all__ = ["Fed", "feed_state", "SCENARIOS", "DATA_LOSS"]

SCENARIOS = ["steady", "lagging", "stalled", "stopped", "storm", "rolling-restart", "static-restart", "kip848",
             "transactional", "replay-from-earliest", "partitions-added"]
DATA_LOSS = ("lagging-clicks", 0)
OFFSETS_PARTITIONS = 6


@dataclass
class Fed:
    state: MetricsState
    snapshots: dict[str, ev.GroupSnapshot]  # the oracle: the model's last snapshot of every group
    ends: dict[tuple[str, int], int]  # end offsets of the last heartbeat (after the data-loss move: unchanged)
    now_ms: int
    group_rows: list[dict]  # the batch the state was fed with
    partition_rows: list[dict]
    health: MonitorHealth


def feed_state(*, seconds: int = 100, step_s: int = 5, seed: int = 11, caught_up: bool = True) -> Fed:
    """Runs the scenarios for ``seconds`` simulated seconds and returns the fed state with its oracle."""
    sim = Simulation(SCENARIOS, seed=seed, offsets_partitions=OFFSETS_PARTITIONS)
    sink = MemorySink()
    model = CoordinatorModel()
    applied = 0
    for t in range(step_s, seconds + 1, step_s):
        sim.run_until(t * 1000, sink)
        replay_entries(model, sink.entries[applied:])
        applied = len(sink.entries)
        last = t == seconds
        model.apply_heartbeat(sim.now_ms, {
            tp: EndOffsetSample(hw, hw, hw if last and tp == DATA_LOSS else 0)
            for tp, hw in sink.ends.items()})
        model.drain_events()
    now = sim.now_ms
    shards = model.snapshot(now)
    group_rows = [tables.group_row(g, shard=s.partition, now_ms=now) for s in shards for g in s.groups]
    partition_rows = [r for s in shards for g in s.groups for r in tables.partition_rows(g, shard=s.partition,
                                                                                       now_ms=now)]
    hws = sink.high_watermarks()
    health = MonitorHealth(batches=1, last_batch_time=now / 1000, heartbeat_time=now / 1000,
                           offsets_partitions=tuple(OffsetsPartitionHealth(p, hws[p] - 1, hws[p], hws[p], caught_up)
                                                    for p in sorted(hws)))
    state = MetricsState()
    state.apply_batch(group_rows, partition_rows, (), health, batch_id=0)
    return Fed(state, {g.group_id: g for s in shards for g in s.groups}, dict(sink.ends), now, group_rows,
               partition_rows, health)
