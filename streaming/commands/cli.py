"""The ``groupscope`` command line.

Every command reports bad input as one clear line on stderr and a non-zero exit status, never a traceback: users
run this from scripts and on-call terminals.
"""

from __future__ import annotations

import os
import sys

import click

from streaming.commands.decode import FORMATS, run_decode


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="groupscope")
def cli() -> None:
    """groupscope: Kafka consumer-group offset and rebalance monitor."""


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="groupscope", show_default=True,
              help="groupscope: rich JSON; kafka: the objects kafka-dump-log.sh --offsets-decoder prints.")
@click.option("--no-verify-crc", is_flag=True, help="Decode batches even when their CRC does not match.")
def decode(paths: tuple[str, ...], fmt: str, no_verify_crc: bool) -> None:
    """Decode __consumer_offsets segment files (or partition / log directories) to JSON lines.

    Each line's "partition" comes from the segment's __consumer_offsets-N folder; segments outside one print lines
    without it. Exit status: 0 all decoded, 1 some data did not decode, 2 a path is missing or holds no segments.
    """
    sys.exit(run_decode(paths, fmt, not no_verify_crc))


@cli.command()
@click.option("--segments", required=True, metavar="DIR",
              help="A __consumer_offsets-N directory, a broker log directory, or one segment file.")
@click.option("--until", metavar="OFFSETS.json",
              help='Stop each partition at an exclusive offset: {"<partition>": <offset>, ...}.')
@click.option("--end-offsets", metavar="FILE", help='Log-end offsets for lag: {"topic:partition": <offset>, ...}, or '
              "a recording's end_offsets.jsonl (its last sample).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object {\"groups\": {...}} instead of tables.")
@click.option("--what-if", "what_if", metavar="GROUP",
              help="Instead: what the range, roundrobin, sticky and cooperative-sticky assignors would give GROUP's "
                   "members now, and how many partitions each would move.")
def describe(segments: str, until: str | None, end_offsets: str | None, as_json: bool, what_if: str | None) -> None:
    """Rebuild every group from segment files, as kafka-consumer-groups.sh --describe would show it."""
    from streaming.commands.describe import run_describe

    sys.exit(run_describe(segments, until, end_offsets, as_json, what_if))


def _register() -> None:
    from streaming.commands.run import heartbeat, run, status
    from streaming.commands.demo import demo
    from streaming.commands.simulate import simulate
    from streaming.commands.replay import replay
    from streaming.commands.record import record

    for command in (demo, run, heartbeat, status, simulate, replay, record):
        cli.add_command(command)
    from streaming.commands.maintain import maintain
    from streaming.commands.backfill import backfill
    cli.add_command(maintain)
    cli.add_command(backfill)


_register()


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
