"""``groupscope replay RECORDING``: the verdict timeline of a recording, as a readable timeline with a summary per
group (on a terminal) or as JSON lines (for tools, and whenever the output is not a terminal)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import sys
import textwrap
from collections import Counter

import click

from streaming.offline.recording.load import (Recording, RecordingError, clock_samples, load_recording,
                                              recording_folder)
from streaming.offline.recording.replay import TimelineEntry, replay_recording

__all__ = ["replay"]


@click.command()
@click.argument("recording", type=click.Path())
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="groupscope YAML config whose model thresholds to use (default: built-in defaults).")
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="Only these groups (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="text: a timeline (seconds from the recording's start, partitions that changed together on one "
                   "line) and a summary per group; json: one JSON line per change. Default: text on a terminal, "
                   "else json.")
def replay(recording: str, config_path: str | None, groups: tuple[str, ...], fmt: str | None) -> None:
    """Replay a recording through the job's model and rules: RECORDING is its folder (records.jsonl or
    segments/, and end_offsets.jsonl), or one of those in it. Without end_offsets.jsonl only the rebalance
    verdicts are judged (statuses need end offsets), on a clock of one step a second to 4 minutes after the last
    record.

    As JSON, one line per verdict change: {"t_ms", "group", "scope", "topic", "partition", "verdict",
    "previous", "reason"}, on the recording's own clock.
    """
    from streaming.job.step import StepConfig

    try:
        rec = load_recording(recording, end_offsets_required=False)
    except RecordingError as exc:
        click.echo(f"groupscope replay: {exc}", err=True)
        sys.exit(2)
    statuses_judged = bool(rec.samples)
    if not statuses_judged:
        rec = dataclasses.replace(rec, samples=clock_samples(rec.records))
        click.echo(f"groupscope replay: no end_offsets.jsonl in {recording_folder(recording)}: rebalance verdicts "
                   "only (partition statuses need end offsets)", err=True)
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
    shown = []
    for entry in replay_recording(rec, step_config):
        if entry.scope == "cluster":  # Kafka itself (an outage): shown whichever groups are asked for
            shown.append(entry)
            continue
        seen.add(entry.group)
        if (not wanted or entry.group in wanted) and (statuses_judged or entry.scope == "group"):
            shown.append(entry)
    as_text = fmt == "text" or (fmt is None and sys.stdout.isatty())
    # on a terminal, lines are wrapped at word boundaries to its width; into a pipe, one line per change
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    for line in (text_lines(shown, _start_ms(rec, shown), statuses_judged, width) if as_text
                 else (e.to_json() for e in shown)):
        click.echo(line)
    missing = sorted(wanted - seen)
    if missing:  # a mistyped name must not read as a group with nothing to report
        click.echo(f"groupscope replay: no group {', '.join(missing)} in this recording; its groups: "
                   f"{', '.join(sorted(seen)) or 'none'}", err=True)
        sys.exit(2)


def _start_ms(rec: Recording, entries: list[TimelineEntry]) -> int:
    """The recording's start: its first end-offset sample (else its first change)."""
    if rec.samples:
        return rec.samples[0].t_ms
    return entries[0].t_ms if entries else 0


# Narrower than this beside the columns, a reason goes under its change's line instead of beside it.
REASON_MIN_WIDTH = 40


def text_lines(entries: list[TimelineEntry], start_ms: int, statuses_judged: bool = True,
               width: int | None = None) -> list[str]:
    """The timeline for a person: one line per change, the partitions of one topic that changed the same way at
    the same moment on one line (``orders:0-3,5``), then one summary line per group (its rebalance verdicts in
    order, and how its partitions ended, when statuses were judged).

    ``width``: a terminal's width. The reason is then wrapped at word boundaries and its continuation lines start
    under its first word (or, beside columns too wide to leave ``REASON_MIN_WIDTH``, it goes under the change,
    indented), so the time column stays the only thing at the left edge; the terminal's own wrapping cut words and
    filled that edge with text. None: no wrapping (a pipe, a file)."""
    merged: dict[tuple, list[int]] = {}
    for e in entries:
        key = (e.t_ms, e.group, e.scope, e.topic, e.verdict, e.previous, e.reason)
        merged.setdefault(key, []).append(-1 if e.partition is None else e.partition)
    group_width = max((len(e.group) for e in entries), default=5)
    lines = []
    for (t_ms, group, scope, topic, verdict, previous, reason), parts in merged.items():
        where = f"({scope})" if scope in ("group", "cluster") else f"{topic}:{_ranges(parts)}"
        change = f"{previous} -> {verdict}" if previous else verdict
        lines.extend(_wrapped(f"{(t_ms - start_ms) / 1000:8.1f} s  {group:<{group_width}}  {where:<16} "
                              f"{change:<28} ", reason, width))
    lines.append("")
    final: dict[str, dict[tuple[str, int], str]] = {}
    verdicts: dict[str, list[str]] = {}
    for e in entries:
        if e.scope == "group":
            verdicts.setdefault(e.group, []).append(e.verdict)
        elif e.scope == "partition":
            final.setdefault(e.group, {})[(e.topic or "", e.partition or 0)] = e.verdict
    for group in sorted(set(final) | set(verdicts)):
        ended = Counter(final.get(group, {}).values())
        now = ", ".join(f"{n} {status}" for status, n in sorted(ended.items())) or "none"
        summary = (f"{group}: rebalance verdicts {', '.join(verdicts.get(group, [])) or 'none'}"
                   + (f"; partitions at the end: {now}" if statuses_judged else ""))
        lines.extend(textwrap.wrap(summary, width, subsequent_indent="  ", break_on_hyphens=False)
                     if width else [summary])
    return lines


# A figure and its unit ("45 s") stay on one line: joined by a no-break space while wrapping (textwrap breaks only
# at ASCII whitespace), given back as a plain space after.
_FIGURE_AND_UNIT = re.compile(r"(\d) (ms|s|min|h|members?)\b")


def _wrapped(columns: str, reason: str, width: int | None) -> list[str]:
    """One change: its columns and its reason, wrapped to ``width`` (see :func:`text_lines`)."""
    if not width or len(columns) + len(reason) <= width:
        return [columns + reason]
    glued = _FIGURE_AND_UNIT.sub("\\1\u00a0\\2", reason)
    room = width - len(columns)
    if room >= REASON_MIN_WIDTH:
        first, *rest = textwrap.wrap(glued, room, break_on_hyphens=False) or [""]
        lines = [columns + first, *(" " * len(columns) + line for line in rest)]
    else:
        indent = " " * 12  # under the group's name, past the time column
        lines = [columns.rstrip(), *textwrap.wrap(glued, max(REASON_MIN_WIDTH, width - len(indent)),
                                                  initial_indent=indent, subsequent_indent=indent,
                                                  break_on_hyphens=False)]
    return [line.replace("\u00a0", " ") for line in lines]


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 3, 5]`` -> ``0-3,5``."""
    out: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)
