"""``groupscope replay``: JSON lines on stdout, the recording's own clock, one clear line for a bad folder."""

from __future__ import annotations

import json

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
    assert result.output.count("\n") == 1 and "end_offsets.jsonl" in result.output
    (tmp_path / "end_offsets.jsonl").write_text('{"t_ms": 1, "offsets": {}}\n')
    (tmp_path / "records.jsonl").write_text("not json\n")
    result = CliRunner().invoke(cli, ["replay", str(tmp_path)])
    assert result.exit_code == 2 and "records.jsonl:1" in result.output and "Traceback" not in result.output


def test_a_group_not_in_the_recording_is_one_line_naming_the_groups_there():
    path = captures_dir() / "conformance" / "verdicts" / "rewind"
    result = CliRunner().invoke(cli, ["replay", str(path), "--group", "rw-gg"])
    assert result.exit_code == 2
    assert result.output == "groupscope replay: no group rw-gg in this recording; its groups: rw-ctl, rw-g\n"
