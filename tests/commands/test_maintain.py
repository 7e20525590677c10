"""``groupscope maintain``: it finds the last demo's tables with no flags, where ``status`` does; it writes one line
per table (prefixed by the cluster when there are several), and bad input or no tables is one line and a non-zero
exit status."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from streaming.commands.maintain import maintain
from streaming.schema.tables import GROUPS, TABLES
from streaming.sinks.delta import DeltaSink
from tests.cli_helpers import run_cli
from tests.commands.demo_tables import demo_tables


def test_maintain_finds_the_demos_tables_where_status_does(tmp_path):
    delta, env = demo_tables(tmp_path)
    result = run_cli("maintain", "--table", "groups", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"groupscope maintain: the demo's tables ({delta})"
    assert result.stdout.startswith("groups: "), result.stdout


@pytest.fixture
def shell(monkeypatch, tmp_path):
    """A shell with nothing configured, in an empty folder, whose demo folder is empty too."""
    for name in [n for n in os.environ if n.startswith("GROUPSCOPE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GROUPSCOPE_DEMO_DIR", str(tmp_path / "demo"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def _groups_table(path: Path) -> None:
    row = dict.fromkeys(GROUPS.names) | {"group_id": "g", "deleted": False}
    DeltaSink(path, app_id="t").write_batch(0, {"groups": pa.Table.from_pylist([row], schema=GROUPS)})


def test_an_unknown_table_is_one_line_naming_the_tables(shell):
    result = CliRunner().invoke(maintain, ["--table", "offsets"])
    assert result.exit_code == 2
    assert result.output.strip() == ("groupscope maintain: unknown table 'offsets' (tables: "
                                     f"{', '.join(TABLES)})")


def test_no_tables_anywhere_says_where_it_looked(shell):
    result = CliRunner().invoke(maintain, [])
    assert result.exit_code == 1
    assert result.output.strip() == (f"groupscope maintain: no Delta tables under groupscope-data/delta (no such "
                                     f"directory) (nor a demo's under {shell / 'demo' / 'delta'})")


def test_each_table_of_each_cluster_gets_its_line(shell):
    for cluster in ("east", "west"):
        _groups_table(shell / "delta" / cluster)
    result = CliRunner().invoke(maintain, ["--delta-path", str(shell / "delta"), "--table", "groups"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines] == ["cluster east", "cluster west"]
    assert all(line.split(": ", 1)[1].startswith("groups: ") for line in lines)


def test_a_folder_without_tables_fails(shell):
    (shell / "empty").mkdir()
    result = CliRunner().invoke(maintain, ["--delta-path", str(shell / "empty")])
    assert result.exit_code == 1 and f"no Delta tables under {shell / 'empty'}" in result.output
