"""``groupscope maintain`` on the last demo's tables: it finds them with no flags, where ``status`` does."""

from __future__ import annotations

from tests.cli_helpers import run_cli
from tests.commands.demo_tables import demo_tables


def test_maintain_finds_the_demos_tables_where_status_does(tmp_path):
    delta, env = demo_tables(tmp_path)
    result = run_cli("maintain", "--table", "groups", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"groupscope maintain: the demo's tables ({delta})"
    assert result.stdout.startswith("groups: "), result.stdout
