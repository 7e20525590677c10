"""The consumed topics of a simulation: partitions whose log end offsets grow at a produce rate.

End offsets are a pure function of simulated time (``base + rate × elapsed``), so a consumer's position, its lag and
what the sinks must produce are all computed on demand without a per-message event.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from protocol import Uuid

__all__ = ["TopicSpec", "Topic"]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic a scenario consumes: ``rate`` messages per second per partition."""

    name: str
    partitions: int
    rate: float = 10.0

    def __post_init__(self) -> None:
        if not self.name or self.partitions <= 0 or self.rate < 0:
            raise ValueError(f"bad topic spec {self!r}: needs a name, partitions > 0 and rate >= 0")


class Topic:
    """A live topic: its id, partitions (which can be added) and end offsets over simulated time."""

    __slots__ = ("name", "topic_id", "rate_per_ms", "_starts", "_bases")

    def __init__(self, spec: TopicSpec, rng: random.Random, now_ms: int, bases: dict[int, int] | None = None) -> None:
        self.name = spec.name
        self.topic_id = Uuid(rng.getrandbits(128).to_bytes(16, "big"))
        self.rate_per_ms = spec.rate / 1000.0
        self._starts = [now_ms] * spec.partitions
        self._bases = [(bases or {}).get(p, 0) for p in range(spec.partitions)]

    @property
    def partitions(self) -> int:
        return len(self._starts)

    def add_partitions(self, total: int, now_ms: int) -> None:
        """Grows the topic to ``total`` partitions (CreatePartitions); new ones start empty now."""
        while len(self._starts) < total:
            self._starts.append(now_ms)
            self._bases.append(0)

    def set_rate(self, rate: float, now_ms: int) -> None:
        """The producer changes its rate (messages per second per partition) from ``now_ms`` on (0: paused)."""
        if rate < 0:
            raise ValueError("rate must be >= 0")
        self._bases = self.end_offsets(now_ms)
        self._starts = [now_ms] * len(self._starts)
        self.rate_per_ms = rate / 1000.0

    def end_offset(self, partition: int, now_ms: int) -> int:
        return self._bases[partition] + int((now_ms - self._starts[partition]) * self.rate_per_ms)

    def end_offsets(self, now_ms: int) -> list[int]:
        r = self.rate_per_ms
        return [b + int((now_ms - s) * r) for s, b in zip(self._starts, self._bases)]
