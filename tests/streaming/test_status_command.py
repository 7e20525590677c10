"""``groupscope status`` and ``groupscope maintain`` on the last demo's tables, run as a person runs them: both find
the tables with no flags; ``status`` says which tables it reads and when they were last written, marks figures that
are older than a few minutes, fits a sensible width under a pipe, and writes every verdict in one case in JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import pyarrow as pa

from streaming.model import events as ev
from streaming.schema.tables import GROUPS, event_row
from streaming.sinks.delta import DeltaSink
from tests.cli_helpers import run_cli

LONG_REASON = ("orders:3: 4,210 behind and growing for 95 s while the partition's end moved 4,300 offsets; the last "
               "commit came 95 s ago from a member that has not polled since")


def _group(gid: str, **over) -> dict:
    g = dict.fromkeys(GROUPS.names)
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    g.update(group_id=gid, shard=1, group_type="CLASSIC", state="STABLE", member_count=3, members=[], topics=[],
             partition_count=6, sum_lag=4210, max_lag=4210, max_lag_seconds=95.0, status="WARN", deleted=False,
             updated_time=now, status_reason=LONG_REASON, storm_active=False, rebalances=2)
    g.update(over)
    return g


def _demo_tables(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The tables a demo run leaves under its folder, and the environment of a shell that has nothing configured."""
    demo = tmp_path / "demo"
    sink = DeltaSink(demo / "delta", app_id="groupscope-demo")
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    deploy = ev.RollingRestart("deployed", 1, now - 60_000, 6, 30.0, now - 90_000, (),
                               reason="3 of 3 members restarted one at a time in 30 s, size back to 3")
    sink.write_batch(0, {"group_events": pa.Table.from_pylist([event_row(deploy, shard=1)]),
                         "groups": pa.Table.from_pylist([
        _group("a-consumer-group-with-a-rather-long-name-for-its-service"),
        _group("storming", storm_active=True, verdict="storm", verdict_reason="9 rebalances in 40 s", status="OK",
               status_reason=None),
        _group("deployed", verdict="rolling_restart", status="OK", status_reason=None, verdict_reason=deploy.reason)],
        schema=GROUPS)})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_") and k not in ("COLUMNS", "LINES")}
    return demo / "delta", {**env, "GROUPSCOPE_DEMO_DIR": str(demo)}


def _age_commits(table: Path, hours: float) -> None:
    """Moves every commit of ``table`` ``hours`` back in time, as if the job that wrote it had stopped then."""
    shift = int(hours * 3_600_000)
    for log in (table / "_delta_log").glob("*.json"):
        lines = []
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] -= shift
            lines.append(json.dumps(action))
        log.write_text("\n".join(lines) + "\n")


def test_status_says_what_it_reads_and_as_of_when(tmp_path):
    delta, env = _demo_tables(tmp_path)
    fresh = run_cli("status", "--json", env=env, cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    said = fresh.stderr.strip().splitlines()
    assert len(said) == 1 and re.fullmatch(
        rf"groupscope status: the demo's tables in {re.escape(str(delta))}, last written "
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)", said[0]), said
    rows = {r["group"]: r for r in map(json.loads, fresh.stdout.splitlines())}
    assert {r["stale"] for r in rows.values()} == {False} and all(r["as_of"] for r in rows.values())
    # One case for every verdict: the active storm too.
    assert (rows["storming"]["verdict"], rows["deployed"]["verdict"]) == ("storm", "rolling_restart")

    _age_commits(delta / "groups", hours=3)
    old = run_cli("status", env=env, cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert re.search(r"last written .* UTC \(3 h ago\): their figures are older than 5 min", old.stderr), old.stderr
    body = " ".join(old.stdout.split())
    for group in ("storming", "deployed"):
        assert re.search(rf"{group} .*?\(as of 3 h ago\)", body), (group, old.stdout)
    assert "STORM" in old.stdout  # the view still shows an active storm in capitals
    stale = run_cli("status", "--json", env=env, cwd=tmp_path)
    assert {json.loads(line)["stale"] for line in stale.stdout.splitlines()} == {True}


def test_piped_status_fits_a_sensible_width(tmp_path):
    _, env = _demo_tables(tmp_path)
    piped = run_cli("status", env=env, cwd=tmp_path)  # stdout is a pipe; no $COLUMNS
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert LONG_REASON in " ".join(" ".join(lines).replace("↳", " ").split())  # every reason still in full
    narrow = run_cli("status", env={**env, "COLUMNS": "90"}, cwd=tmp_path)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90


def test_maintain_finds_the_demos_tables_where_status_does(tmp_path):
    delta, env = _demo_tables(tmp_path)
    result = run_cli("maintain", "--table", "groups", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"groupscope maintain: the demo's tables ({delta})"
    assert result.stdout.startswith("groups: "), result.stdout
