"""The ``groupscope`` command line as a whole: every command is there, ``--version`` says the packaged version,
``-h`` works as ``--help`` does, and bad usage or an interrupt end with the exit status a script can rely on (2 for
usage, 130 for Ctrl-C, as shells report SIGINT) and no traceback."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import click
import pytest
from click.testing import CliRunner

from streaming.commands import cli as cli_module
from streaming.commands.cli import cli, main
from tests.cli_helpers import REPO

COMMANDS = {"decode", "describe", "demo", "run", "heartbeat", "status", "simulate", "replay", "record", "maintain",
            "backfill"}


def test_every_command_is_registered():
    ctx = click.Context(cli)
    assert set(cli.list_commands(ctx)) == COMMANDS == set(cli_module.COMMANDS)
    assert all(isinstance(cli.get_command(ctx, name), click.Command) for name in COMMANDS)
    assert cli.get_command(ctx, "stauts") is None


def test_run_starts_without_importing_what_only_other_commands_need():
    """``groupscope run`` imports its own command only: decode's imports (pandas among them) cost ~0.3 s of the
    start before Spark is launched."""
    probe = ("import sys, click; from streaming.commands.cli import cli; "
             "cli.get_command(click.Context(cli), 'run'); "
             "print(sorted(m for m in ('pandas', 'protocol.kafka_dump', 'streaming.commands.demo') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out


def test_version_is_the_packaged_one():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and version in result.output


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_short_and_long_help_list_the_commands(flag):
    result = CliRunner().invoke(cli, [flag])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == COMMANDS


def test_an_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli, ["stauts"])
    assert result.exit_code == 2 and "No such command 'stauts'" in result.output
    assert "Traceback" not in result.output


def test_decode_needs_a_path_and_a_known_format(tmp_path):
    missing = CliRunner().invoke(cli, ["decode"])
    assert missing.exit_code == 2 and "Missing argument 'PATHS...'" in missing.output
    bad = CliRunner().invoke(cli, ["decode", "--format", "json", str(tmp_path)])
    assert bad.exit_code == 2 and "'json' is not one of 'groupscope', 'kafka'" in bad.output


def test_describe_needs_its_segments():
    result = CliRunner().invoke(cli, ["describe"])
    assert result.exit_code == 2 and "Missing option '--segments'" in result.output


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch, capsys):
    def interrupted(**_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module.cli, "main", interrupted)
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 130  # 128 + SIGINT (2)
    assert "Traceback" not in capsys.readouterr().err
