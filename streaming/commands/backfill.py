"""``groupscope backfill``: fill the Delta tables from a broker's segment files (see ``streaming.driver.backfill``)."""

from __future__ import annotations

import os
import sys

import click

from streaming.commands.run import _settings, configure_logging, exit_unless_java

__all__ = ["backfill"]


@click.command()
@click.argument("segments", metavar="LOG_DIR")
@click.option("--config", "config", metavar="FILE", help="YAML configuration file (delta, spark, source, model).")
@click.option("--delta-path", help="Directory or URI of the Delta tables to fill.")
@click.option("--checkpoint", help="Spark checkpoint directory of the backfill (a second run resumes from it).")
@click.option("--cluster", help="Cluster name (part of the tables' exactly-once app id).")
@click.option("--master", help="Spark master (default local[2]).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              show_default=True, help="groupscope's own log level (info: one line per micro-batch).")
def backfill(segments, config, delta_path, checkpoint, cluster, master, log_level) -> None:
    """Run the job once over LOG_DIR, a copy of a broker's log directory (or __consumer_offsets-N folders):
    every offset commit, event and group state it holds goes to the Delta tables, as a live job would have
    written them. Transactions are read as a read_committed consumer reads them."""
    settings = _settings(config, bootstrap=None, cluster=cluster, metrics_port=None, delta_path=delta_path,
                         checkpoint=checkpoint, master=master)
    if settings.clusters:
        click.echo("groupscope backfill: the configuration watches several clusters; backfill one at a time with "
                   "--delta-path and --checkpoint of that cluster", err=True)
        sys.exit(2)
    exit_unless_java("backfill")
    configure_logging(log_level)
    from streaming.driver.backfill import run_backfill
    from streaming.offline.segments import SegmentPathError

    from streaming.progress import Progress

    try:
        with Progress("groupscope backfill") as progress:
            report = run_backfill(settings, segments, progress=progress)
    except (SegmentPathError, ValueError) as exc:
        click.echo(f"groupscope backfill: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("groupscope backfill: stopped; run it again with the same --checkpoint to go on", err=True)
        os._exit(130)
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        click.echo(f"groupscope backfill: {exc}", err=True)
        sys.exit(1)
    rate = report.records / report.seconds if report.seconds else 0.0
    click.echo(f"groupscope backfill: {report.records:,} records from {report.partitions} partitions in "
               f"{report.batches} batches, {report.seconds:,.1f} s ({rate:,.0f} records/s, Spark start "
               f"{report.spark_start_seconds:,.1f} s); {report.commits:,} commit rows, {report.groups:,} groups in "
               f"{settings.delta.path}", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # deltalake's teardown at exit can abort once a table was read; everything is written by now
