"""``groupscope demo``: the embedded one-command demo (see ``streaming.demo``)."""

from __future__ import annotations

import sys

import click

from .demo import DemoOptions, run_demo


@click.command()
@click.option("--scenario", "scenarios", multiple=True, default=("all",), show_default=True, metavar="NAME[,NAME]",
              help="Simulated scenarios (see groupscope simulate --help); 'all' = every scenario but scale.")
@click.option("--seed", type=int, default=7, show_default=True, help="Simulation seed.")
@click.option("--speed", type=click.FloatRange(min=0.1, max=100), default=2.0, show_default=True,
              help="Simulated seconds per real second.")
@click.option("--duration", type=click.FloatRange(min=1), help="Stop after this many seconds (default: Ctrl-C).")
@click.option("--dir", "directory", default="groupscope-demo", show_default=True,
              help="Where the Delta tables and the Spark checkpoint go.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=9308, show_default=True,
              help="Port of the /metrics endpoint (0: any free port).")
@click.option("--no-live", is_flag=True, help="Print a table every 10 s instead of a live view (logs, CI).")
def demo(scenarios, seed, speed, duration, directory, metrics_port, no_live) -> None:
    """Run the whole product locally: embedded broker, simulated groups, the streaming job, metrics and Delta."""
    from .simulator import resolve

    try:
        resolve(list(scenarios))
    except ValueError as exc:
        click.echo(f"groupscope demo: {exc}", err=True)
        sys.exit(2)
    options = DemoOptions(scenarios=tuple(scenarios), seed=seed, speed=speed, duration_s=duration,
                          directory=directory, metrics_port=metrics_port, live=not no_live)
    try:
        sys.exit(run_demo(options, echo=lambda text: click.echo(text, err=True)))
    except Exception as exc:  # noqa: BLE001 - one clear line, not a traceback
        click.echo(f"groupscope demo: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
