"""``groupscope replay``: JSON lines on stdout, the recording's own clock, one clear line for a bad folder."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from streaming.commands.cli import cli
from tests.conftest import captures_dir

FIELDS = ["t_ms", "group", "scope", "topic", "partition", "verdict", "previous", "reason"]


def test_replay_prints_the_timeline_as_json_lines():
    path = captures_dir() / "conformance" / "verdicts" / "storm_crashloop"
    labels = json.loads((path / "labels.json").read_text())
    result = CliRunner().invoke(cli, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert lines and all(list(e) == FIELDS for e in lines)
    assert all(labels["t0_ms"] <= e["t_ms"] <= labels["end_ms"] for e in lines), "the recording's own clock"
    storm = [e for e in lines if e["verdict"] == "storm"]
    assert storm and storm[0]["scope"] == "group" and storm[0]["group"] == "sc-storm" and storm[0]["reason"]
    firsts = [e for e in lines if e["scope"] == "partition" and e["previous"] is None]
    assert len(firsts) == 6, "the first status of every partition is printed"


def test_replay_of_one_group_only():
    path = captures_dir() / "conformance" / "verdicts" / "stalled_consumer"
    result = CliRunner().invoke(cli, ["replay", str(path), "--group", "stl-stall"])
    assert result.exit_code == 0
    assert {json.loads(line)["group"] for line in result.output.splitlines()} == {"stl-stall"}


def test_a_folder_that_is_not_a_recording_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["replay", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == f"groupscope replay: {tmp_path}: neither records.jsonl nor segments/ found\n"
    (tmp_path / "end_offsets.jsonl").write_text('{"t_ms": 1, "offsets": {}}\n')
    (tmp_path / "records.jsonl").write_text("not json\n")
    result = CliRunner().invoke(cli, ["replay", str(tmp_path)])
    assert result.exit_code == 2 and "records.jsonl:1" in result.output and "Traceback" not in result.output


def test_a_group_not_in_the_recording_is_one_line_naming_the_groups_there():
    path = captures_dir() / "conformance" / "verdicts" / "rewind"
    result = CliRunner().invoke(cli, ["replay", str(path), "--group", "rw-gg"])
    assert result.exit_code == 2
    assert result.output == "groupscope replay: no group rw-gg in this recording; its groups: rw-ctl, rw-g\n"


def test_as_text_the_same_changes_read_as_a_timeline_with_a_summary_per_group():
    """--format text (the default on a terminal): the JSON lines' changes, with the partitions of one topic that
    changed the same way at once on one line, seconds from the recording's start, and a summary per group."""
    path = captures_dir() / "conformance" / "verdicts" / "rolling_restart_classic"
    as_json = [json.loads(line) for line in CliRunner().invoke(cli, ["replay", str(path)]).output.splitlines()]
    result = CliRunner().invoke(cli, ["replay", str(path), "--format", "text"])
    assert result.exit_code == 0, result.output
    timeline, summary = result.output.rstrip("\n").split("\n\n")
    lines = timeline.splitlines()
    fields = [line.split() for line in lines]  # seconds, "s", group, where, change..., reason
    first_oks = [f for f in fields if f[4] == "OK" and f[5] != "->"]
    covered = sorted(p for f in first_oks for part in f[3].split(":")[1].split(",")
                     for p in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))
    assert covered == list(range(8)), first_oks  # every partition's first status, merged into a few lines
    group_json = [e for e in as_json if e["scope"] == "group"]
    group_text = [f for f in fields if f[3] == "(group)"]
    assert [f[6] if f[5] == "->" else f[4] for f in group_text] == [e["verdict"] for e in group_json]
    assert all(e["reason"] in line for e, line in zip(group_json, (x for x in lines if "(group)" in x)))
    seconds = [float(line.split()[0]) for line in lines]
    assert seconds == sorted(seconds) and 0 <= seconds[0] < 60
    assert summary.splitlines() == ["rr-roll: rebalance verdicts formation, rolling_restart; partitions at the end: "
                                    "8 OK"], summary


def test_a_capture_without_end_offsets_gives_its_rebalance_verdicts_and_says_statuses_are_not_judged():
    """The Kafka 4.0 conformance captures hold records only. Named by its records.jsonl, a capture replays on a
    one-second clock: its groups' rebalance verdicts, no statuses (they would all be an uninformed OK), and one
    line on stderr saying so."""
    path = captures_dir() / "conformance" / "kafka-4.0" / "c_consumer_protocol"
    result = CliRunner().invoke(cli, ["replay", str(path / "records.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"groupscope replay: no end_offsets.jsonl in {path}: rebalance verdicts only (partition "
                             "statuses need end offsets)\n")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines and {e["scope"] for e in lines} == {"group"}
    formed = {e["group"] for e in lines if e["verdict"] == "formation"}
    assert {"sc-range", "sc-uniform", "sc-migrate", "sc-regex"} <= formed, lines
    text = CliRunner().invoke(cli, ["replay", str(path), "--format", "text"]).stdout
    assert "partitions at the end" not in text and "sc-uniform: rebalance verdicts formation\n" in text, text


def test_a_recordings_segments_folder_names_the_recording():
    path = captures_dir() / "conformance" / "verdicts" / "rewind"
    by_folder = CliRunner().invoke(cli, ["replay", str(path)]).output
    assert by_folder and CliRunner().invoke(cli, ["replay", str(path / "segments")]).output == by_folder


def continuation_of(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith(" " * 12)]


def test_as_text_on_a_terminal_reasons_wrap_at_word_boundaries_within_its_width():
    """On a terminal the reasons are wrapped to its width at word boundaries: beside the columns when at least
    REASON_MIN_WIDTH is left, else under the change; only change lines start at the left edge, and the words of
    every reason are all there, in order. Without a width (a pipe) nothing is wrapped."""
    from streaming.commands.replay import REASON_MIN_WIDTH, text_lines
    from streaming.offline.recording.load import load_recording
    from streaming.offline.recording.replay import replay_recording

    rec = load_recording(captures_dir() / "conformance" / "verdicts" / "kip848_storm_and_rolling")
    entries = list(replay_recording(rec))
    start = rec.samples[0].t_ms
    unwrapped = text_lines(entries, start)
    timeline = unwrapped[:unwrapped.index("")]
    assert max(len(line) for line in timeline) > 120  # long reasons: something to wrap
    for width in (160, 100, 70):
        lines = text_lines(entries, start, width=width)
        assert max(len(line) for line in lines) <= width, width
        changes = lines[:lines.index("")]
        starts = [i for i, line in enumerate(changes) if not line.startswith(" " * 12)]
        assert len(starts) == len(timeline), width  # continuation lines are indented, change lines are not
        for i, (j, original) in enumerate(zip(starts, timeline)):
            block = changes[j:starts[i + 1] if i + 1 < len(starts) else len(changes)]
            assert " ".join(" ".join(block).split()) == " ".join(original.split()), (width, original)
        # a figure keeps its unit: no continuation line starts with the "s" of "45 s"
        assert not [line for line in continuation_of(changes) if re.match(r"(s|ms)\b", line.strip())], width
        columns = 12 + max(len(e.group) for e in entries) + 2 + 16 + 1 + 28 + 1  # time, group, where, change
        continuation = continuation_of(changes)
        assert continuation, width
        if width - columns >= REASON_MIN_WIDTH:  # beside: continued under the reason's first word
            assert all(line.startswith(" " * columns) and line[columns] != " " for line in continuation), width
        else:  # under the change, past the time column
            assert all(line[12] != " " for line in continuation), width
