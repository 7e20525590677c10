"""``groupscope maintain``: compaction, checkpoint, vacuum and log cleanup of the Delta tables, once, now.

The job does the same in the background (``delta.maintenance``); operators run this after a long outage of the
job, before a backup, or with a shorter retention to reclaim disk at once. It can run beside the job: every step is
a Delta commit with optimistic concurrency, so a job write that collides with it (the ``groups`` merge) fails its
micro-batch and the query restarts from its checkpoint; the per-batch app transactions survive maintenance, so
nothing is lost or written twice.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from streaming.commands.run import _settings

__all__ = ["maintain"]


@click.command()
@click.option("--config", "config", metavar="FILE", help="YAML configuration file.")
@click.option("--delta-path", help="Directory or URI of the Delta tables.")
@click.option("--table", "tables", multiple=True, metavar="NAME",
              help="Only this table (repeatable): commits, group_events, lag, groups, quarantine.")
@click.option("--vacuum-retention-hours", type=click.IntRange(min=0),
              help="Override delta.maintenance.vacuum_retention_hours for this run.")
def maintain(config, delta_path, tables, vacuum_retention_hours) -> None:
    """Compact, checkpoint and vacuum the Delta tables (one line per table)."""
    from streaming.schema.tables import TABLES

    unknown = [t for t in tables if t not in TABLES]
    if unknown:
        click.echo(f"groupscope maintain: unknown table {unknown[0]!r} (tables: {', '.join(TABLES)})", err=True)
        sys.exit(2)
    settings = _settings(config, bootstrap=None, cluster=None, metrics_port=None, delta_path=delta_path,
                         checkpoint=None, master=None)
    options = settings.delta.maintenance
    if vacuum_retention_hours is not None:
        options = options.model_copy(update={"vacuum_retention_hours": vacuum_retention_hours})
    from streaming.commands.table_sets import find_table_sets

    found = find_table_sets(settings, delta_path)  # as status finds them: the last demo's when nothing is configured
    sets = list(found.sets)
    root = found.root
    if not found.several and "://" not in root and not Path(root).is_dir():
        also = f" (nor a demo's under {found.demo_looked})" if found.demo_looked is not None else ""
        click.echo(f"groupscope maintain: no Delta tables under {root} (no such directory){also}", err=True)
        sys.exit(1)
    if found.demo is not None:
        click.echo(f"groupscope maintain: the demo's tables ({root})", err=True)
    from streaming.sinks.delta import DeltaSink
    from streaming.sinks.delta_maintenance import DeltaMaintenance

    failed = False
    for cluster, path in sets:
        prefix = f"cluster {cluster}: " if len(sets) > 1 else ""
        sink = DeltaSink(path, app_id=f"groupscope-{cluster}", storage_options=settings.delta.storage_options)
        reports = DeltaMaintenance(sink, options).run_once(tables or None)
        if not reports:
            click.echo(f"groupscope maintain: {prefix}no Delta tables under {path}", err=True)
            failed = True
        for report in reports:
            click.echo(prefix + report.line())
        failed = failed or any(r.error for r in reports)
    sys.exit(1 if failed else 0)
