"""``groupscope record`` refuses bad input before it writes anything: one line on stderr, exit status 2, no
traceback, and an existing recording left untouched. What the capture writes is tested in
``tests/streaming/test_record_command.py``.
"""

from __future__ import annotations

from click.testing import CliRunner

from streaming.commands.cli import cli
from streaming.commands.record import record


def _one_line_error(result, text: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("groupscope record: ") and text in lines[0], result.output


def test_a_non_empty_folder_is_refused(tmp_path):
    (tmp_path / "records.jsonl").write_text("{}\n")
    _one_line_error(CliRunner().invoke(cli, ["record", "--bootstrap", "127.0.0.1:9", str(tmp_path)]), "not empty")
    assert (tmp_path / "records.jsonl").read_text() == "{}\n", "an existing recording is never touched"


def test_a_bad_regular_expression_is_one_line(tmp_path):
    _one_line_error(CliRunner().invoke(cli, ["record", "--bootstrap", "127.0.0.1:9", "--group", "orders-(",
                                             str(tmp_path / "r")]), "not a regular expression")


def test_no_broker_named_is_one_line(tmp_path):
    _one_line_error(CliRunner().invoke(cli, ["record", str(tmp_path / "r")]), "--bootstrap")


def test_an_unreachable_broker_is_one_line(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = CliRunner().invoke(cli, ["record", "--bootstrap", f"127.0.0.1:{port}", str(tmp_path / "r")])
    _one_line_error(result, f"cannot reach Kafka at 127.0.0.1:{port}")
    assert not (tmp_path / "r").exists(), "nothing is written when the broker cannot be reached"


def test_the_command_refuses_the_same_way_when_invoked_on_its_own(tmp_path):
    """``record`` is one command object, whether reached through ``groupscope`` or called directly (as the
    ``demo`` and the tests do): the refusal does not depend on the group around it."""
    assert cli.commands["record"] is record
    _one_line_error(CliRunner().invoke(record, [str(tmp_path / "r")]), "--bootstrap")
