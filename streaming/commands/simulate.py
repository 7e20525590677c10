"""``groupscope simulate``: writes a simulated workload's ``__consumer_offsets`` records (to a Kafka-protocol broker,
to segment files, or as a recording folder that ``groupscope replay`` reads), or drives real consumers against a
real Kafka. See ``streaming/simulator``."""

from __future__ import annotations

import signal
import sys
import threading
import time

import click

__all__ = ["simulate"]


def _scenarios(values: tuple[str, ...]) -> list[str]:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or ["steady"]


@click.command("simulate")
@click.option("--scenario", "scenarios", multiple=True, metavar="NAME[,NAME]",
              help="Scenario(s) to run; repeatable or comma-separated; 'all' = every scenario but scale. "
                   "Default: steady.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed: same seed, same records.")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Simulated seconds to run (default: until interrupted; required with --speed 0).")
@click.option("--speed", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Simulated seconds per real second; 0 = as fast as possible (backlogs).")
@click.option("--bootstrap", default=None, metavar="HOST:PORT",
              help="Produce to this Kafka-protocol broker (e.g. librdkafka's mock cluster).")
@click.option("--segments", "segments_dir", default=None, type=click.Path(file_okay=False),
              help="Write __consumer_offsets segment files under this directory.")
@click.option("--recording", "recording_dir", default=None, type=click.Path(file_okay=False),
              help="Write a recording folder (records.jsonl, end_offsets.jsonl sampled every simulated second, "
                   "segments/, client_events.jsonl), the layout `groupscope replay` reads.")
@click.option("--mode", type=click.Choice(["simulated", "real-consumers"]), default="simulated", show_default=True,
              help="simulated: emulate the coordinator and write its records; real-consumers: run real consumers "
                   "against a real Kafka (--bootstrap), which writes __consumer_offsets itself.")
@click.option("--offsets-partitions", type=click.IntRange(min=1), default=50, show_default=True,
              help="Partitions of __consumer_offsets (offsets.topic.num.partitions).")
@click.option("--groups", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Number of groups of the scale scenario.")
def simulate(scenarios, seed, duration, speed, bootstrap, segments_dir, recording_dir, mode, offsets_partitions,
             groups) -> None:
    """Simulate consumer groups: the records Kafka's group coordinator would write, and real topic traffic."""
    from streaming.simulator import SegmentSink, Simulation, SimulationRunner
    from streaming.simulator.recording import RecordingSink, write_manifest
    from streaming.simulator.scenarios import resolve

    names = _scenarios(scenarios)
    try:
        resolve(names)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--scenario") from None
    if mode == "real-consumers":
        if not bootstrap:
            raise click.UsageError("--mode real-consumers needs --bootstrap (a real Kafka)")
        _real_consumers(names, seed, bootstrap, duration)
        return
    outputs = [name for name, value in (("--bootstrap", bootstrap), ("--segments", segments_dir),
                                        ("--recording", recording_dir)) if value]
    if len(outputs) > 1:
        raise click.UsageError(f"give either {outputs[0]} or {outputs[1]}, not both")
    if not outputs:
        raise click.UsageError("give --bootstrap HOST:PORT (produce to a broker), --segments DIR (write files) or "
                               "--recording DIR (write a recording folder)")
    if speed == 0 and duration is None:
        raise click.UsageError("--speed 0 (as fast as possible) needs --duration")
    sim = Simulation(names, seed, offsets_partitions=offsets_partitions, scale_groups=groups)
    if bootstrap:
        from streaming.simulator.kafka_sink import KafkaSink

        sink = KafkaSink(bootstrap)
    elif recording_dir:
        sink = RecordingSink(recording_dir)
    else:
        sink = SegmentSink(segments_dir)
    started = time.monotonic()
    runner = SimulationRunner(sim, sink, speed=speed, duration_ms=None if duration is None else int(duration * 1000),
                              step_ms=100 if speed else 5000)
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        runner.start()
        while runner.running and not stop.wait(0.2):
            pass
        runner.stop()
    except Exception as exc:
        from streaming.simulator.kafka_sink import MissingTopics

        if isinstance(exc, MissingTopics):
            raise click.ClickException(str(exc)) from None
        raise click.ClickException(f"simulation failed: {type(exc).__name__}: {exc}") from None
    finally:
        signal.signal(signal.SIGINT, previous)
        sink.close()
        if recording_dir:
            write_manifest(sim, sink)
    took = time.monotonic() - started
    where = bootstrap or segments_dir or recording_dir
    click.echo(f"simulated {sim.elapsed_ms / 1000:.1f} s of {', '.join(s.name for s in sim.scenarios)} (seed {seed}): "
               f"{sim.coordinator.records_written} records to {where} in {took:.1f} s", err=True)


def _real_consumers(names, seed, bootstrap, duration) -> None:
    from streaming.simulator.real_consumers import RealConsumerRunner, plan

    topics, specs = plan(names, seed)
    if not specs:
        raise click.UsageError(f"none of {', '.join(names)} has a real-consumers form")
    runner = RealConsumerRunner(bootstrap, topics, specs).start()
    try:
        if duration is None:
            threading.Event().wait()
        else:
            time.sleep(duration)
    except KeyboardInterrupt:
        pass
    finally:
        runner.stop()
    for line in runner.errors:
        click.echo(line, err=True)
    if runner.errors:
        sys.exit(1)
