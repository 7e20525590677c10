"""``groupscope demo``: the embedded one-command demo (see ``streaming.commands.demo_stack``)."""

from __future__ import annotations

import os
import sys

import click

from streaming.commands.demo_stack import DemoDirError, DemoOptions, PortInUse, run_demo


BENCHMARK_ONLY = "scale"  # thousands of groups for benchmarks: groupscope simulate's, not a demo's


def _scenario_help() -> str:
    from streaming.simulator.scenarios import SCENARIOS

    names = ", ".join(name for name in SCENARIOS if name != BENCHMARK_ONLY)
    return f"Simulated scenarios, comma-separated or repeated: all (every one listed), {names}."


@click.command(epilog="Data goes to --dir (default: $GROUPSCOPE_DEMO_DIR, else $XDG_STATE_HOME/groupscope/demo, "
               "i.e. ~/.local/state/groupscope/demo); each run clears what the previous one left there. "
               "Without a terminal (a pipe, --no-live) a plain summary is printed every 10 s.")
@click.option("--scenario", "scenarios", multiple=True, default=("all",), show_default=True, metavar="NAME[,NAME]",
              help=_scenario_help())
@click.option("--seed", type=int, default=7, show_default=True, help="Simulation seed.")
@click.option("--speed", type=click.FloatRange(min=0.1, max=100), default=1.0, show_default=True,
              help="Simulated seconds per real second (the job's heartbeats follow the simulated clock).")
@click.option("--duration", type=click.FloatRange(min=1),
              help="Stop this many seconds after the start (default: run until Ctrl-C).")
@click.option("--dir", "directory", default=None,
              help="Where the Delta tables, the Spark checkpoint and the logs go (cleared at every start).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=9308, show_default=True,
              help="Port of the /metrics endpoint (0: any free port).")
@click.option("--no-live", is_flag=True, help="Print a plain summary every 10 s instead of a live view (logs, CI).")
@click.option("--clusters", type=click.IntRange(1, 4), default=1, show_default=True,
              help="Embedded Kafka clusters watched by the one job (named demo-1, demo-2...; the scenarios are dealt "
                   "out between them).")
@click.option("--api-port", type=click.IntRange(0, 65535), default=None,
              help="Serve the HTTP API (Burrow's /v3 paths, groupscope's /v1) on this port (0: any free port).")
def demo(scenarios, seed, speed, duration, directory, metrics_port, no_live, clusters, api_port) -> None:
    """Run the whole product locally: embedded broker, simulated groups, the streaming job, metrics and Delta."""
    from streaming.simulator.scenarios import SCENARIOS, resolve

    given = [name.strip() for item in scenarios for name in item.split(",") if name.strip()]
    unknown = [name for name in given if name != "all" and name not in SCENARIOS]
    if unknown:
        known = ", ".join(name for name in SCENARIOS if name != BENCHMARK_ONLY)
        click.echo(f"groupscope demo: unknown scenario {unknown[0]!r}; known: all, {known}", err=True)
        sys.exit(2)
    try:
        picked = resolve(list(scenarios))
    except ValueError as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(2)
    if any(s.name == BENCHMARK_ONLY for s in picked):
        click.echo(f"groupscope demo: {BENCHMARK_ONLY} is a benchmark workload (groupscope simulate --scenario "
                   f"{BENCHMARK_ONLY} --groups N), not a demo scenario", err=True)
        sys.exit(2)
    if api_port and api_port == metrics_port:
        click.echo(f"groupscope demo: --api-port and --metrics-port are both {api_port}; give them different ports "
                   "(0: any free port)", err=True)
        sys.exit(2)
    from streaming.commands.run import exit_unless_java

    exit_unless_java("demo")
    options = DemoOptions(scenarios=tuple(scenarios), seed=seed, speed=speed, duration_s=duration,
                          directory=directory, metrics_port=metrics_port, live=not no_live, clusters=clusters,
                          api_port=api_port)
    from streaming.config import ConfigError

    try:
        code = run_demo(options, echo=lambda text: click.echo(text, err=True))
    except ConfigError as exc:  # a GROUPSCOPE_* variable: said as every command says it, before anything is cleared
        for line in exc.lines:
            click.echo(f"groupscope demo: {line}", err=True)
        sys.exit(2)
    except DemoDirError as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(2)
    except PortInUse as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(1)
    except OSError as exc:
        import errno

        if exc.errno == errno.EADDRINUSE:  # taken after the check at the start
            exc = PortInUse(f"metrics port {metrics_port} is already in use (pick another with --metrics-port, 0 for "
                            "any free port)")
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - one clear line, not a traceback
        click.echo(f"groupscope demo: {str(exc) or f'stopped by an unexpected error ({type(exc).__name__})'}", err=True)
        sys.exit(1)
    # Everything is stopped and said: leave without the interpreter's teardown (py4j's and librdkafka's
    # leftovers take a second or more to unwind, and the prompt should come back at once).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
