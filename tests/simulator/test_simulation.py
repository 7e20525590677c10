"""The simulation's own rules: options checked at construction, one sink for a run, topics' end offsets handed to
the sink as simulated time passes, and the runner that maps simulated to real time, stops at its duration and
reports a failure of the run rather than losing it."""

from __future__ import annotations

import pytest

from streaming.simulator import MemorySink, NullSink, Simulation, SimulationRunner


@pytest.mark.parametrize("kwargs,message", [
    (dict(scenarios=["nope"]), "unknown scenario 'nope'"),
    (dict(offsets_partitions=0), "offsets_partitions must be positive"),
    (dict(scale_groups=0), "scale_groups must be positive"),
])
def test_bad_options_are_refused_before_anything_runs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Simulation(**kwargs)


def test_a_run_writes_to_one_sink():
    sim = Simulation(["steady"], seed=1)
    sink = MemorySink()
    sim.run_until(1_000, sink)
    sim.run_until(2_000, sink)  # the same sink again is fine
    with pytest.raises(ValueError, match="already writes to another sink"):
        sim.run_until(3_000, MemorySink())
    with pytest.raises(ValueError, match="already writes to another sink"):
        sim.bind(NullSink())


def test_the_sink_holds_the_topics_end_offsets_at_the_simulated_instant():
    sim = Simulation(["steady"], seed=1)
    sink = MemorySink()
    sim.run_until(12_345, sink)
    assert sim.elapsed_ms == 12_345 and sim.now_ms == sim.sched.start_ms + 12_345
    # steady-payments: 3 partitions at 10 messages per second, empty at the start -> 123 each after 12.345 s.
    assert {k: v for k, v in sink.ends.items() if k[0] == "steady-payments"} == {
        ("steady-payments", p): 123 for p in range(3)}
    assert sink.ends == sim.end_offsets()


def test_rate_changes_and_new_partitions_reach_the_sink():
    sim = Simulation(["steady"], seed=1)
    sink = MemorySink()
    sim.run_until(10_000, sink)
    sim.set_rate("steady-payments", 0)
    sim.add_partitions("steady-payments", 4)
    sim.run_until(20_000)
    assert sink.ends[("steady-payments", 0)] == 100, "paused at 10 s"
    assert sink.ends[("steady-payments", 3)] == 0, "a new partition starts empty, and the topic is paused"


def test_the_runner_runs_to_its_duration_and_flushes():
    flushed = []

    class Sink(MemorySink):
        def flush(self) -> None:
            flushed.append(True)

    sim, sink = Simulation(["steady"], seed=1), Sink()
    runner = SimulationRunner(sim, sink, speed=0, duration_ms=2_550, step_ms=1_000).start()
    runner.join(30)
    assert not runner.running and sim.elapsed_ms == 2_550, "the last step is cut to the duration"
    assert flushed


def test_the_runner_paces_simulated_time_by_its_speed():
    """At speed 2, 3 s of simulation take 1.5 s of (injected) real time: each step waits until its time."""
    now = [100.0]
    waits: list[float] = []
    sim = Simulation(["steady"], seed=1)
    runner = SimulationRunner(sim, NullSink(), speed=2.0, duration_ms=3_000, step_ms=500, clock=lambda: now[0])

    def wait(seconds: float) -> bool:
        waits.append(round(seconds, 6))
        now[0] += seconds
        return False

    runner._stop.wait = wait  # the runner sleeps on its stop event; step the fake clock instead
    runner.start().join(30)
    assert waits == [0.25] * 5 and now[0] == pytest.approx(101.25)  # the sixth step ends the run, no wait


def test_a_failure_in_the_run_is_raised_by_join():
    class Broken(NullSink):
        def append(self, batch) -> None:
            raise OSError("disk full")

    runner = SimulationRunner(Simulation(["steady"], seed=1), Broken(), speed=0, duration_ms=60_000).start()
    with pytest.raises(OSError, match="disk full"):
        runner.join(30)


def test_a_negative_speed_is_refused():
    with pytest.raises(ValueError, match="speed must be >= 0"):
        SimulationRunner(Simulation(), NullSink(), speed=-1)
