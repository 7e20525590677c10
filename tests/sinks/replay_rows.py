"""Realistic sink input: the real Kafka 4.0 captures replayed step by step into the model, turned into table rows.

Each :class:`ScenarioReplay` advances one scenario (``tests/data/conformance/kafka-4.0``) snapshot by snapshot, the way
the Spark job's read_committed source sees ``__consumer_offsets`` (``tests.model.replay``), applies heartbeats
built from the snapshot's real end offsets, and returns what the stateful step would hand the driver: ``GROUPS``,
``LAG`` and ``GROUP_EVENTS`` rows (``streaming.schema.tables``) plus the ``__consumer_offsets`` read positions for the
monitor's own health. The Prometheus sink tests and the dashboard tests both feed on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streaming.schema import tables
from streaming.model.lag import EndOffsetSample
from streaming.model.shard import CoordinatorModel, ModelConfig
from streaming.sinks.prometheus import OffsetsPartitionHealth
from tests.model.replay import last_stable_offsets, records, truth

__all__ = ["RowsBatch", "ScenarioReplay"]


@dataclass
class RowsBatch:
    groups: list[dict[str, Any]]
    partitions: list[dict[str, Any]]
    events: list[dict[str, Any]]
    now_ms: int
    offsets: list[OffsetsPartitionHealth]  # the __consumer_offsets partitions this scenario wrote to


class ScenarioReplay:
    """One scenario's model, advanced incrementally so each batch carries only the events since the last one."""

    def __init__(self, scenario: str, config: ModelConfig = ModelConfig()) -> None:
        self.scenario = scenario
        self.model = CoordinatorModel(config)
        self._records = records(scenario)
        self._applied: dict[int, int] = {}  # per __consumer_offsets partition: next offset to apply
        self.snapshot: dict[str, Any] | None = None
        self._limits: dict[int, int] = {}
        self._hws: dict[int, int] = {}

    def labels(self) -> list[str]:
        return [s["label"] for s in truth(self.scenario)["snapshots"]]

    def advance(self, label: str) -> None:
        """Applies the records a read_committed reader sees at snapshot ``label`` (and not applied before)."""
        snap = next(s for s in truth(self.scenario)["snapshots"] if s["label"] == label)
        hws = {int(p): hw for p, hw in snap["consumer_offsets_high_watermarks"].items()}
        limits = last_stable_offsets(self._records, hws)
        for partition, offset, ts, rec, raw in self._records:
            if offset >= limits.get(partition, 0) or offset < self._applied.get(partition, 0):
                continue
            self._applied[partition] = offset + 1
            if raw["batch"]["is_control"] or not raw["visible_read_committed"]:
                continue
            self.model.shard(partition).replay(offset, ts, rec)
        self.snapshot, self._limits, self._hws = snap, limits, hws

    def end_offsets(self, *, extra: int = 0, low_at_end: bool = False) -> dict[tuple[str, int], EndOffsetSample]:
        """The snapshot's real end offsets (+``extra`` records produced since); ``low_at_end`` moves the low
        watermark to the end, as if retention had deleted everything a lagging group has not read."""
        assert self.snapshot is not None, "advance() first"
        out = {}
        for key, v in self.snapshot["topic_offsets"].items():
            topic, p = key.rsplit(":", 1)
            hw, lso = v["latest"] + extra, v["latest_read_committed"] + extra
            out[(topic, int(p))] = EndOffsetSample(hw, lso, hw if low_at_end else v["earliest"])
        return out

    def batch(self, *, seconds_later: float = 20.0, extra: int = 7, low_at_end: bool = False) -> RowsBatch:
        """Heartbeats at the snapshot's time (real end offsets) and ``seconds_later`` (``extra`` records more, so
        lag and time lag are non-zero), then every group's rows and the events since the previous batch."""
        assert self.snapshot is not None, "advance() first"
        t0 = int(self.snapshot["time"] * 1000)
        now = t0 + int(seconds_later * 1000)
        self.model.apply_heartbeat(t0, self.end_offsets())
        self.model.apply_heartbeat(now, self.end_offsets(extra=extra, low_at_end=low_at_end))
        events = [tables.event_row(e, shard=e_shard) for e_shard, e in self._drain()]
        shards = self.model.evaluate(now)
        events += [tables.event_row(e, shard=e_shard) for e_shard, e in self._drain()]  # status changes
        groups = [tables.group_row(g, shard=s.partition, now_ms=now) for s in shards for g in s.groups]
        partitions = [r for s in shards for g in s.groups for r in tables.partition_rows(g, shard=s.partition,
                                                                                           now_ms=now)]
        offsets = [OffsetsPartitionHealth(p, self._limits[p] - 1, self._hws[p], self._limits[p], True)
                   for p in sorted(self._hws) if self._hws[p] > 0]
        return RowsBatch(groups, partitions, events, now, offsets)

    def _drain(self):
        return [(s.partition, e) for s in self.model for e in s.drain_events()]
