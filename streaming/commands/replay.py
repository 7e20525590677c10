"""``groupscope replay RECORDING``: the verdict timeline of a recording, as JSON lines."""

from __future__ import annotations

import sys

import click

from streaming.offline.recording.load import RecordingError, load_recording
from streaming.offline.recording.replay import replay_recording

__all__ = ["replay"]


@click.command()
@click.argument("recording", type=click.Path(file_okay=False))
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="groupscope YAML config whose model thresholds to use (default: built-in defaults).")
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="Only these groups (repeatable).")
def replay(recording: str, config_path: str | None, groups: tuple[str, ...]) -> None:
    """Replay a recording (records.jsonl or segments/, plus end_offsets.jsonl) through the job's model and rules.

    Prints one JSON line per verdict change: {"t_ms", "group", "scope", "topic", "partition", "verdict",
    "previous", "reason"}, on the recording's own clock.
    """
    from streaming.job.step import StepConfig

    try:
        rec = load_recording(recording)
    except RecordingError as exc:
        click.echo(f"groupscope replay: {exc}", err=True)
        sys.exit(2)
    step_config = StepConfig()
    if config_path:
        from streaming.config import ConfigError, load_settings
        from streaming.spark.job import step_config as step_config_from

        try:
            step_config = step_config_from(load_settings(config_path))
        except ConfigError as exc:
            click.echo(f"groupscope replay: {exc}", err=True)
            sys.exit(2)
    wanted = set(groups)
    seen: set[str] = set()
    for entry in replay_recording(rec, step_config):
        seen.add(entry.group)
        if not wanted or entry.group in wanted:
            click.echo(entry.to_json())
    missing = sorted(wanted - seen)
    if missing:  # a mistyped name must not read as a group with nothing to report
        click.echo(f"groupscope replay: no group {', '.join(missing)} in this recording; its groups: "
                   f"{', '.join(sorted(seen)) or 'none'}", err=True)
        sys.exit(2)
