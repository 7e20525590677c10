"""``groupscope describe`` on segment files rebuilt from the Kafka 4.0 captures gives the same groups as the model's
validated replay (tests/model/test_conformance.py checks that replay against Kafka's Admin API)."""

from __future__ import annotations

import json
import re

import pytest

from streaming.commands.describe import InputError, parse_end_offsets, parse_until, run_describe
from streaming.model.describe import describe
from tests.model.replay import replay, truth
from tests.cli_helpers import run_cli


@pytest.mark.parametrize("scenario", ["a_classic", "c_consumer_protocol", "d_transactions"])
def test_json_matches_replay_at_every_snapshot(segment_dirs, tmp_path, scenario):
    for snap in truth(scenario)["snapshots"]:
        hws = {int(p): hw for p, hw in snap["consumer_offsets_high_watermarks"].items()}
        ends = {k: v["latest"] for k, v in snap["topic_offsets"].items()}
        (tmp_path / "until.json").write_text(json.dumps(hws))
        (tmp_path / "ends.json").write_text(json.dumps(ends))
        result = run_cli("describe", "--segments", str(segment_dirs[scenario]), "--until", str(tmp_path / "until.json"),
                         "--end-offsets", str(tmp_path / "ends.json"), "--json")
        assert result.returncode == 0, result.stderr
        got = json.loads(result.stdout)
        end_map = {(k.rsplit(":", 1)[0], int(k.rsplit(":", 1)[1])): v for k, v in ends.items()}
        expected = describe(replay(scenario, hws, "raw"), end_map)
        assert set(got["groups"]) == set(snap["describe_consumer_groups"])
        # no log-end history: no group or partition status was judged, and none reads as OK
        assert {g["status"] for g in got["groups"].values()} == {None}
        assert {p["status"] for g in got["groups"].values() for p in g["partitions"]} <= {None}
        for gid, want in expected["groups"].items():
            have = got["groups"][gid]
            for field in ("group_id", "type", "state", "partition_assignor", "members", "offsets", "lag"):
                assert have[field] == json.loads(json.dumps(want[field])), (snap["label"], gid, field)


def _columns(header: str, line: str) -> dict[str, str]:
    """The cells of ``line`` under each header word of ``header`` (a table whose cells start where headers do)."""
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    ends = starts[1:] + [max(len(header), len(line))]
    return {header[a:b].strip(): line[a:b].strip() for a, b in zip(starts, ends)}


def test_text_output_lists_groups_members_and_lag(segment_dirs, tmp_path):
    (tmp_path / "ends.json").write_text(json.dumps({"sa-orders:0": 10**6}))
    result = run_cli("describe", "--segments", str(segment_dirs["a_classic"]), "--end-offsets",
                     str(tmp_path / "ends.json"))
    assert result.returncode == 0, result.stderr
    assert "CURRENT-OFFSET" in result.stdout and "LOG-END-OFFSET" in result.stdout
    lines = result.stdout.splitlines()
    # Each group opens with its own header line and the values under it, aligned like the tables below it.
    at = lines.index(next(line for line in lines if line.startswith("GROUP ") and " TYPE " in line))
    group = _columns(lines[at], lines[at + 1])
    assert list(group) == ["GROUP", "TYPE", "STATE", "ASSIGNOR", "GENERATION", "#MEMBERS", "REBALANCES", "STATUS"]
    # segment files hold no history of the log ends, so nothing judged the group: "-", never an unearned "OK"
    assert group["GROUP"] == "sa-coop" and group["TYPE"] == "CLASSIC" and group["STATUS"] == "-"
    assert all(lines[at + 1][lines[at].index(name)] != " " for name in group)  # each value starts under its header
    offsets_at = next(i for i, line in enumerate(lines) if line.startswith("GROUP ") and "CURRENT-OFFSET" in line)
    first = _columns(lines[offsets_at], lines[offsets_at + 1])
    assert (first["GROUP"], first["TOPIC"], first["PARTITION"], first["LOG-END-OFFSET"]) == \
        ("sa-coop", "sa-orders", "0", str(10**6))
    assert result.stdout.endswith("\n") and not result.stdout.endswith("\n\n")


def test_a_corrupt_segment_prints_its_problem_and_no_empty_line(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(bytes(range(256)) * 2)
    result = run_cli("describe", "--segments", str(folder))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "truncated" in result.stderr and "Traceback" not in result.stderr


def test_no_groups_is_one_line(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(b"")
    result = run_cli("describe", "--segments", str(folder))
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr == f"groupscope describe: no consumer groups in {folder}\n"


@pytest.mark.parametrize(
    "content, message",
    [("{not json", "not JSON"), ("[1, 2]", "expected a JSON object"), ('{"x": "y"}', "is not partition: offset")],
)
def test_bad_until_file_is_one_line(segment_dirs, tmp_path, content, message):
    (tmp_path / "until.json").write_text(content)
    result = run_cli("describe", "--segments", str(segment_dirs["a_classic"]), "--until", str(tmp_path / "until.json"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_missing_segments_dir_is_one_line(tmp_path):
    result = run_cli("describe", "--segments", str(tmp_path / "nope"))
    assert result.returncode == 2 and result.stderr.strip().endswith("no such file or directory")


def test_a_recordings_end_offsets_file_gives_the_log_ends_of_its_last_sample(tmp_path):
    """A recording's end_offsets.jsonl (one sample per second) is taken as the log ends when it stopped: the lag
    column is what kafka-consumer-groups.sh printed at the end of the recording (its cli.txt)."""
    from tests.conftest import captures_dir

    recording = captures_dir() / "conformance" / "verdicts" / "rewind"
    result = run_cli("describe", "--segments", str(recording / "segments"), "--end-offsets",
                     str(recording / "end_offsets.jsonl"), "--json")
    assert result.returncode == 0, result.stderr
    last = json.loads((recording / "end_offsets.jsonl").read_text().splitlines()[-1])["offsets"]
    lags = {tp: v for g in json.loads(result.stdout)["groups"].values() for tp, v in g["lag"].items()}
    assert lags and all(v["log_end"] == last[tp]["high"] for tp, v in lags.items()), lags
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    bad = run_cli("describe", "--segments", str(recording / "segments"), "--end-offsets", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 2 and "not JSON" in bad.stderr



@pytest.mark.parametrize("group,strategy", [("sa-range", "range"), ("sa-roundrobin", "roundrobin"),
                                            ("sa-coop", "cooperative-sticky")])
def test_what_if_gives_what_kafkas_own_assignor_gave(segment_dirs, tmp_path, group, strategy):
    """Three members of a real Kafka 4.0 group: the what-if of the group's own assignor is the assignment the
    clients' assignor made (nothing moves), and every strategy assigns every partition exactly once."""
    snap = next(s for s in truth("a_classic")["snapshots"] if s["label"] == "gen3-three-members")
    assert snap["describe_consumer_groups"][group]["partition_assignor"] == strategy
    (tmp_path / "until.json").write_text(json.dumps(snap["consumer_offsets_high_watermarks"]))
    args = ("describe", "--segments", str(segment_dirs["a_classic"]), "--until", str(tmp_path / "until.json"),
            "--what-if", group)
    result = run_cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    now = {m["member_id"]: sorted(map(tuple, m["assignment"])) for m in doc["members"]}
    kafka = {m["member_id"]: sorted((t, p) for t, p in m["assignment"])
             for m in snap["describe_consumer_groups"][group]["members"]}
    assert now == kafka and len(now) == 3, (now, kafka)
    every = sorted(tp for tps in now.values() for tp in tps)
    by = {r["strategy"]: r for r in doc["strategies"]}
    assert set(by) == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    for r in by.values():
        assert sorted(tuple(tp) for tps in r["assignment"].values() for tp in tps) == every, r["strategy"]
        assert r["moved"] + r["stayed"] == len(every)
    assert by[strategy]["moved"] == 0, by[strategy]
    assert {m: sorted(map(tuple, tps)) for m, tps in by[strategy]["assignment"].items()} == kafka

    text = run_cli(*args)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[2].split() == ["STRATEGY", "MOVED", "STAYED", "SKEW", "BALANCED"]
    assert any(line.split()[:2] == [strategy, "0"] for line in lines[3:7])

def test_what_if_for_a_group_the_segments_lack_is_one_line(segment_dirs):
    result = run_cli("describe", "--segments", str(segment_dirs["a_classic"]), "--what-if", "nope")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"groupscope describe: no group 'nope' in {segment_dirs['a_classic']}"]


def test_until_maps_offsets_partitions_to_exclusive_ends(tmp_path):
    path = tmp_path / "until.json"
    path.write_text('{"0": 120, "49": "7"}')
    assert parse_until(str(path)) == {0: 120, 49: 7}
    path.write_text('{"zero": 1}')
    with pytest.raises(InputError, match=r"'zero': 1 is not partition: offset"):
        parse_until(str(path))
    with pytest.raises(InputError, match=r"--until .*missing\.json: No such file"):
        parse_until(str(tmp_path / "missing.json"))


def test_end_offsets_are_topic_partition_keys(tmp_path):
    path = tmp_path / "ends.json"
    # Kafka's topic names hold letters, digits, '.', '_' and '-' only: the last ':' always separates the partition.
    path.write_text('{"orders:0": 10, "my.topic_v2-eu:12": 99}')
    assert parse_end_offsets(str(path)) == {("orders", 0): 10, ("my.topic_v2-eu", 12): 99}
    for bad in ('{"orders": 1}', '{":3": 1}', '{"orders:x": 1}', '{"orders:0": "many"}'):
        path.write_text(bad)
        with pytest.raises(InputError, match='expected "topic:partition": offset'):
            parse_end_offsets(str(path))


def test_a_recordings_end_offsets_give_the_high_watermarks_of_the_last_sample(tmp_path):
    path = tmp_path / "end_offsets.jsonl"
    path.write_text('{"t_ms": 1, "offsets": {"orders:0": {"high": 5, "low": 0}}}\n'
                    '{"t_ms": 2, "offsets": {"orders:0": {"high": 9, "low": 0}, "orders:1": 4}}\n\n')
    assert parse_end_offsets(str(path)) == {("orders", 0): 9, ("orders", 1): 4}
    path.write_text('{"t_ms": 1}\n{"t_ms": 2}\n')  # samples without offsets: neither form, so the JSON error is given
    with pytest.raises(InputError, match="--end-offsets .*: not JSON"):
        parse_end_offsets(str(path))


def test_bad_input_is_exit_status_2_before_any_segment_is_read(tmp_path, capsys):
    until = tmp_path / "until.json"
    until.write_text("[]")
    assert run_describe(str(tmp_path / "no-such-dir"), str(until), None, as_json=True) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"groupscope describe: --until {until}: expected a JSON object"]
