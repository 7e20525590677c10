"""``groupscope status`` (declared in ``commands/run.py``) on the last demo's tables, run as a person runs it: it
finds the tables with no flags, says which tables it reads and when they were last written, marks figures that are
older than a few minutes, fits a sensible width under a pipe, and writes every verdict in one case in JSON."""

from __future__ import annotations

import json
import re

from tests.cli_helpers import run_cli
from tests.commands.demo_tables import LONG_REASON, age_commits, demo_tables


def test_status_says_what_it_reads_and_as_of_when(tmp_path):
    delta, env = demo_tables(tmp_path)
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

    age_commits(delta / "groups", hours=3)
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
    _, env = demo_tables(tmp_path)
    piped = run_cli("status", env=env, cwd=tmp_path)  # stdout is a pipe; no $COLUMNS
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert LONG_REASON in " ".join(" ".join(lines).replace("↳", " ").split())  # every reason still in full
    narrow = run_cli("status", env={**env, "COLUMNS": "90"}, cwd=tmp_path)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90
