"""``groupscope demo``: the embedded one-command demo (see ``streaming.commands.demo_stack``)."""

from __future__ import annotations

import sys

import click

from streaming.commands.demo_stack import DemoDirError, DemoOptions, run_demo


def _scenario_help() -> str:
    from streaming.simulator.scenarios import SCENARIOS

    names = ", ".join(name for name in SCENARIOS if name != "scale")
    return f"Simulated scenarios: all (every scenario but scale), {names}."


@click.command(epilog="Data goes to --dir (default: $XDG_STATE_HOME/groupscope/demo, i.e. "
               "~/.local/state/groupscope/demo); each run clears what the previous one left there. "
               "Without a terminal (a pipe, --no-live) a plain summary is printed every 10 s.")
@click.option("--scenario", "scenarios", multiple=True, default=("all",), show_default=True, metavar="NAME[,NAME]",
              help=_scenario_help())
@click.option("--seed", type=int, default=7, show_default=True, help="Simulation seed.")
@click.option("--speed", type=click.FloatRange(min=0.1, max=100), default=1.0, show_default=True,
              help="Simulated seconds per real second (the job's heartbeats follow the simulated clock).")
@click.option("--duration", type=click.FloatRange(min=1), help="Stop after this many seconds (default: Ctrl-C).")
@click.option("--dir", "directory", default=None,
              help="Where the Delta tables, the Spark checkpoint and spark.log go (cleared at every start).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=9308, show_default=True,
              help="Port of the /metrics endpoint (0: any free port).")
@click.option("--no-live", is_flag=True, help="Print a table every 10 s instead of a live view (logs, CI).")
def demo(scenarios, seed, speed, duration, directory, metrics_port, no_live) -> None:
    """Run the whole product locally: embedded broker, simulated groups, the streaming job, metrics and Delta."""
    from streaming.simulator import resolve

    try:
        resolve(list(scenarios))
    except ValueError as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(2)
    options = DemoOptions(scenarios=tuple(scenarios), seed=seed, speed=speed, duration_s=duration,
                          directory=directory, metrics_port=metrics_port, live=not no_live)
    try:
        sys.exit(run_demo(options, echo=lambda text: click.echo(text, err=True)))
    except DemoDirError as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        import errno

        if exc.errno != errno.EADDRINUSE:
            click.echo(f"groupscope demo: {type(exc).__name__}: {exc}", err=True)
            sys.exit(1)
        click.echo(f"groupscope demo: metrics port {metrics_port} is already in use (pick another with --metrics-port, "
                   "0 for any free port)", err=True)
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - one clear line, not a traceback
        click.echo(f"groupscope demo: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
