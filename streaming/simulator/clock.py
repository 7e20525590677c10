"""Simulated time: a millisecond clock and the event queue that drives the simulator deterministically.

Everything in the simulator happens at a simulated instant taken from :class:`Scheduler`: no wall clock is ever read
here, so a run with a given seed gives the same records byte for byte, and runs as fast as the CPU allows (the
:class:`~streaming.simulator.simulation.SimulationRunner` maps simulated to real time when a speed is asked for).
"""

from __future__ import annotations

import heapq
from typing import Callable

__all__ = ["Scheduler", "DEFAULT_START_MS"]

DEFAULT_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: a fixed epoch so seeded runs are reproducible


class Scheduler:
    """A clock plus a priority queue of callbacks ``(time_ms, sequence, fn)``; ties run in scheduling order."""

    __slots__ = ("now_ms", "start_ms", "_queue", "_seq")

    def __init__(self, start_ms: int = DEFAULT_START_MS) -> None:
        self.start_ms = start_ms
        self.now_ms = start_ms
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0

    def at(self, time_ms: int, fn: Callable[[], None]) -> None:
        """Runs ``fn`` at ``time_ms`` (never earlier than now)."""
        self._seq += 1
        heapq.heappush(self._queue, (max(int(time_ms), self.now_ms), self._seq, fn))

    def after(self, delay_ms: float, fn: Callable[[], None]) -> None:
        self.at(self.now_ms + int(delay_ms), fn)

    def next_time(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    def run_until(self, time_ms: int) -> int:
        """Runs every callback due at or before ``time_ms``; the clock ends at ``time_ms``. Returns callbacks run."""
        q = self._queue
        pop = heapq.heappop
        n = 0
        while q and q[0][0] <= time_ms:
            t, _, fn = pop(q)
            self.now_ms = t
            fn()
            n += 1
        if time_ms > self.now_ms:
            self.now_ms = time_ms
        return n
