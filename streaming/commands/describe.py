"""``groupscope describe``: what ``kafka-consumer-groups.sh --describe --members --verbose --offsets`` would show,
rebuilt offline from a broker's ``__consumer_offsets`` segment files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from streaming.model.describe import describe, render_text, render_what_if
from streaming.offline.segment_replay import replay_segments
from streaming.offline.segments import SegmentPathError, segments_size
from streaming.progress import Progress


class InputError(ValueError):
    """A user-supplied file that cannot be used; the message is the one line to print."""


def _load_json_object(path: str, what: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{what} {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(f"{what} {path}: expected a JSON object")
    return data


def parse_until(path: str) -> dict[int, int]:
    """``{"12": 345, ...}``: ``__consumer_offsets`` partition → exclusive end offset."""
    out = {}
    for key, value in _load_json_object(path, "--until").items():
        try:
            out[int(key)] = int(value)
        except (TypeError, ValueError):
            raise InputError(f"--until {path}: {key!r}: {value!r} is not partition: offset") from None
    return out


def _last_sample(path: str) -> dict | None:
    """The high watermarks of the last sample of a recording's ``end_offsets.jsonl`` (one ``{"t_ms", "offsets":
    {"topic:partition": {"high", ...}}}`` per line), or None when the file is not one."""
    try:
        lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        last = json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None
    if not (isinstance(last, dict) and isinstance(last.get("offsets"), dict) and "t_ms" in last):
        return None
    return {tp: v.get("high") if isinstance(v, dict) else v for tp, v in last["offsets"].items()}


def parse_end_offsets(path: str) -> dict[tuple[str, int], int]:
    """``{"topic:partition": log_end_offset, ...}``, or a recording's ``end_offsets.jsonl`` (its last sample's
    high watermarks: the log ends when the recording stopped)."""
    out = {}
    try:
        given = _load_json_object(path, "--end-offsets")
    except InputError:
        given = _last_sample(path)
        if given is None:
            raise
    for key, value in given.items():
        topic, sep, partition = str(key).rpartition(":")
        try:
            if not sep or not topic:
                raise ValueError
            out[(topic, int(partition))] = int(value)
        except (TypeError, ValueError):
            raise InputError(f"--end-offsets {path}: {key!r}: expected \"topic:partition\": offset") from None
    return out


def run_describe(segments: str, until: str | None, end_offsets: str | None, as_json: bool,
                 what_if: str | None = None) -> int:
    try:
        until_map = parse_until(until) if until else None
        ends = parse_end_offsets(end_offsets) if end_offsets else None
        with Progress("groupscope describe", total_bytes=segments_size([segments])) as progress:
            model, report = replay_segments(
                segments, until=until_map, progress=progress,
                on_problem=lambda text: print(f"groupscope describe: {text}", file=sys.stderr))
    except (InputError, SegmentPathError) as exc:
        print(f"groupscope describe: {exc}", file=sys.stderr)
        return 2
    if what_if is not None:
        return _what_if(model, what_if, ends, segments, as_json) or (1 if report.problems else 0)
    now = report.last_timestamp if report.last_timestamp >= 0 else None
    described = describe(model, ends, now)
    if as_json:
        print(json.dumps(described, ensure_ascii=False, indent=None, separators=(",", ":")))
    elif described["groups"]:
        print(render_text(described))
    elif not report.problems:  # a problem was its own line already; nothing to add, not even an empty line
        print(f"groupscope describe: no consumer groups in {segments}", file=sys.stderr)
    return 1 if report.problems else 0


def _what_if(model, group_id: str, ends: dict | None, segments: str, as_json: bool) -> int:
    """Prints each assignor's assignment for ``group_id``; 2 (one line) when the segments hold no such group."""
    from streaming.model.assignment import what_if_document

    shard = next((s for s in model if group_id in s.groups), None)
    if shard is None:
        print(f"groupscope describe: no group {group_id!r} in {segments}", file=sys.stderr)
        return 2
    doc = what_if_document(shard, group_id, ends)
    print(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) if as_json else render_what_if(doc))
    return 0


@click.command("describe")
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
def describe_command(segments: str, until: str | None, end_offsets: str | None, as_json: bool,
                     what_if: str | None) -> None:
    """Rebuild every group from segment files, as kafka-consumer-groups.sh --describe would show it."""
    sys.exit(run_describe(segments, until, end_offsets, as_json, what_if))
