"""The ``groupscope`` command line.

Every command reports bad input as one clear line on stderr and a non-zero exit status, never a traceback: users
run this from scripts and on-call terminals.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

# Each command lives in its own module, imported only when it runs (or for ``--help``): ``groupscope run`` must not
# pay for ``decode``'s imports (pandas among them, ~0.3 s) before it starts Spark.
COMMANDS: dict[str, str] = {
    "decode": "streaming.commands.decode:decode",
    "describe": "streaming.commands.describe:describe_command",
    "demo": "streaming.commands.demo:demo",
    "run": "streaming.commands.run:run",
    "heartbeat": "streaming.commands.run:heartbeat",
    "status": "streaming.commands.run:status",
    "simulate": "streaming.commands.simulate:simulate",
    "replay": "streaming.commands.replay:replay",
    "record": "streaming.commands.record:record",
    "maintain": "streaming.commands.maintain:maintain",
    "backfill": "streaming.commands.backfill:backfill",
}


class _LazyGroup(click.Group):
    """A group whose commands are imported by name when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            module, attr = COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return self.commands.get(name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="groupscope")
def cli() -> None:
    """groupscope: Kafka consumer-group offset and rebalance monitor."""


def main() -> None:
    try:
        cli.main(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)


if __name__ == "__main__":
    main()
