"""The simulation: scenarios, topics, the coordinator emulation and the clients on one simulated clock.

``Simulation(["steady", "kip848"], seed=7).run_until(60_000, sink)`` runs 60 simulated seconds into ``sink``; the same
seed gives the same bytes. :class:`SimulationRunner` runs one in a background thread at a chosen speed (the demo).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Callable, Iterable

from .clock import DEFAULT_START_MS, Scheduler
from .coordinator import Coordinator, CoordinatorConfig
from .scenarios import resolve
from .sinks import MemorySink, Sink
from .topics import Topic, TopicSpec

__all__ = ["Simulation", "SimulationRunner", "TOPIC_TICK_MS"]

TOPIC_TICK_MS = 1000  # how often the sink is told the topics' end offsets (KafkaSink produces the new messages)


class Simulation:
    """Named scenarios (see :mod:`.scenarios`) on one seeded, simulated clock.

    Construction validates the scenario names and touches nothing; the first :meth:`run_until` (or :meth:`bind`)
    opens the sink, creates the topics and starts the scenarios.

    Raises:
        ValueError: an unknown scenario name, or bad options.
    """

    def __init__(self, scenarios: Iterable[str] | str = ("steady",), seed: int = 0, *, offsets_partitions: int = 50,
                 start_ms: int = DEFAULT_START_MS, scale_groups: int = 1000,
                 coordinator_config: CoordinatorConfig = CoordinatorConfig()) -> None:
        if offsets_partitions <= 0:
            raise ValueError("offsets_partitions must be positive")
        if scale_groups <= 0:
            raise ValueError("scale_groups must be positive")
        self.scenarios = resolve(scenarios)
        self.seed = seed
        self.rng = random.Random(seed)
        self.sched = Scheduler(start_ms)
        self.offsets_partitions = offsets_partitions
        self.scale_groups = scale_groups
        self.coordinator_config = coordinator_config
        self.topics: dict[str, Topic] = {}
        self.coordinator: Coordinator | None = None
        self.sink: Sink | None = None
        self._producer_ids = 0
        self.clients: list = []
        # what the simulated clients did, like a real recording's client_events.jsonl: {"t_ms", "group",
        # "client_id", "event": member_start | member_exit (how: close | crash) | assigned, ...}
        self.client_events: list[dict] = []

    # ---- setup -----------------------------------------------------------------------------------------------

    def topic_specs(self) -> list[tuple[TopicSpec, int]]:
        """Every scenario's topics with their backlog (messages already in each partition at the start)."""
        out: dict[str, tuple[TopicSpec, int]] = {}
        for sc in self.scenarios:
            for spec, backlog in sc.topics(self):
                out.setdefault(spec.name, (spec, backlog))
        return list(out.values())

    def bind(self, sink: Sink) -> None:
        """Opens ``sink``, creates the topics and schedules every scenario (once)."""
        if self.sink is not None:
            if sink is not self.sink:
                raise ValueError("this simulation already writes to another sink")
            return
        specs = self.topic_specs()
        bases = sink.open({s.name: s.partitions for s, _ in specs}, self.offsets_partitions) or {}
        now = self.sched.now_ms
        for spec, backlog in specs:
            self.topics[spec.name] = Topic(
                spec, self.rng, now, {p: bases.get((spec.name, p), 0) + backlog for p in range(spec.partitions)})
        self.sink = sink
        self.coordinator = Coordinator(self.sched, sink, self.rng, self.topics,
                                       offsets_partitions=self.offsets_partitions, config=self.coordinator_config)
        for sc in self.scenarios:
            sc.setup(self)
        self._tick()

    def _tick(self) -> None:
        self.sink.advance_topics(self.end_offsets(), self.sched.now_ms)
        self.sched.after(TOPIC_TICK_MS, self._tick)

    # ---- running ---------------------------------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self.sched.now_ms

    @property
    def elapsed_ms(self) -> int:
        return self.sched.now_ms - self.sched.start_ms

    def run_until(self, elapsed_ms: int, sink: Sink | None = None) -> Simulation:
        """Runs until ``elapsed_ms`` simulated ms after the start (binding ``sink`` on the first call)."""
        if self.sink is None:
            self.bind(sink if sink is not None else MemorySink())
        elif sink is not None and sink is not self.sink:
            raise ValueError("this simulation already writes to another sink")
        self.sched.run_until(self.sched.start_ms + int(elapsed_ms))
        self.sink.advance_topics(self.end_offsets(), self.sched.now_ms)
        return self

    def run_for(self, ms: int, sink: Sink | None = None) -> Simulation:
        return self.run_until(self.elapsed_ms + int(ms), sink)

    # ---- helpers for scenarios -------------------------------------------------------------------------------

    def at(self, seconds: float, fn: Callable[[], None]) -> None:
        """Schedules ``fn`` at ``seconds`` simulated seconds after the start."""
        self.sched.at(self.sched.start_ms + int(seconds * 1000), fn)

    def start_client(self, client, at_s: float = 0.0):
        self.clients.append(client)
        self.at(at_s, client.start)
        return client

    def next_producer_id(self) -> int:
        pid = self._producer_ids
        self._producer_ids += 1
        return pid

    def add_partitions(self, topic: str, total: int, notice_after_ms: int = 5000) -> None:
        """CreatePartitions: the topic grows now; classic leaders notice at their next metadata refresh."""
        self.topics[topic].add_partitions(total, self.sched.now_ms)
        self.sink.add_partitions(topic, total)
        from .coordinator import ClassicGroupSim

        for gid, g in list(self.coordinator.groups.items()):
            if isinstance(g, ClassicGroupSim) and any(topic in m.topics for m in g.members.values()):
                self.sched.after(notice_after_ms, lambda gid=gid: self.coordinator.classic_metadata_changed(gid))

    def set_rate(self, topic: str, rate: float) -> None:
        """The topic's producer changes its rate (messages per second per partition) now; 0 pauses it."""
        self.topics[topic].set_rate(rate, self.sched.now_ms)

    def end_offsets(self) -> dict[tuple[str, int], int]:
        now = self.sched.now_ms
        return {(name, p): end for name, t in self.topics.items() for p, end in enumerate(t.end_offsets(now))}

    def expected(self) -> dict:
        """The truth: every group as Kafka's loader would restore it now (see :mod:`.expected`)."""
        from .expected import expected_groups

        return expected_groups(self)


class SimulationRunner:
    """Runs a simulation in a background thread, ``speed`` × real time (0: as fast as possible).

    ``start()`` begins, ``stop()`` ends and flushes the sink (it does not close it). ``lock`` guards the
    simulation: hold it to read ``sim.expected()`` while running.
    """

    def __init__(self, sim: Simulation, sink: Sink, *, speed: float = 1.0, duration_ms: int | None = None,
                 step_ms: int = 100, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if speed < 0:
            raise ValueError("speed must be >= 0")
        self.sim, self.sink, self.speed, self.duration_ms, self.step_ms = sim, sink, speed, duration_ms, step_ms
        self._clock, self._sleep = clock, sleep
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> SimulationRunner:
        with self.lock:
            self.sim.bind(self.sink)
        self._thread = threading.Thread(target=self._run, name="groupscope-simulator", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            t0, s0 = self._clock(), self.sim.elapsed_ms
            while not self._stop.is_set():
                target = self.sim.elapsed_ms + self.step_ms
                if self.duration_ms is not None and target > self.duration_ms:
                    target = self.duration_ms
                with self.lock:
                    self.sim.run_until(target)
                if self.duration_ms is not None and self.sim.elapsed_ms >= self.duration_ms:
                    break
                if self.speed > 0:
                    wait = t0 + (self.sim.elapsed_ms - s0) / 1000.0 / self.speed - self._clock()
                    if wait > 0:
                        self._stop.wait(wait)
        except BaseException as exc:  # reported by stop()/join()
            self.error = exc
        finally:
            try:
                self.sink.flush()
            except BaseException as exc:
                self.error = self.error or exc

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self._stop.set()
        self.join()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
