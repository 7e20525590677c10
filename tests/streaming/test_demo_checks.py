"""A ``groupscope demo`` that cannot run fails before it clears anything: a stray ``GROUPSCOPE_*`` variable, a busy
port, or a folder another demo is running in leave the last (or the running) demo's checkpoint, tables and log as
they were, and each is one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, run_cli


def _last_demo(root: Path) -> dict[str, str]:
    """A folder as a finished demo leaves it; returns what it holds."""
    for name in ("checkpoint/offsets/0", "delta/groups/_delta_log/00000000000000000000.json", "groupscope.log"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"the last demo's {name}\n")
    (root / ".groupscope-demo").write_text("groupscope demo data\n")
    return _files(root)


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".groupscope-demo"}


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_")}, **extra}


def _one_line(result, status: int, *words: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("groupscope demo: ") and all(w in lines[0] for w in words), lines[0]
    assert "Error" not in lines[0] and "Traceback" not in result.stderr, lines[0]  # no Python class names


def test_a_stray_variable_or_a_busy_port_leaves_the_last_demo_as_it_was(tmp_path):
    root = tmp_path / "demo"
    before = _last_demo(root)
    stray = run_cli("demo", "--no-live", "--metrics-port", "0",
                    env=_env(GROUPSCOPE_DEMO_DIR=str(root), GROUPSCOPE_NOTHING="1"))
    _one_line(stray, 2, "GROUPSCOPE_NOTHING")
    assert _files(root) == before
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run_cli("demo", "--no-live", "--metrics-port", str(taken.getsockname()[1]),
                       env=_env(GROUPSCOPE_DEMO_DIR=str(root)))
    _one_line(busy, 1, "metrics port", "already in use")
    same = run_cli("demo", "--no-live", "--metrics-port", "9400", "--api-port", "9400",
                   env=_env(GROUPSCOPE_DEMO_DIR=str(root)))
    _one_line(same, 2, "--api-port and --metrics-port are both 9400")
    assert _files(root) == before


@pytest.mark.spark
def test_a_second_demo_leaves_the_running_one_alone(tmp_path):
    root = tmp_path / "demo"
    first = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "demo", "--no-live", "--metrics-port",
                              "0", "--scenario", "steady", "--duration", "90", "--dir", str(root)],
                             cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=_env(), start_new_session=True)
    try:
        said = ""
        deadline = time.monotonic() + 120
        while "metrics at" not in said and time.monotonic() < deadline and first.poll() is None:
            said += first.stderr.readline()
        assert "metrics at" in said, said
        while not (root / "checkpoint").is_dir() and time.monotonic() < deadline:
            time.sleep(0.5)
        running = {p.name for p in root.iterdir()}
        assert {"checkpoint", "groupscope.log"} <= running, running
        second = run_cli("demo", "--no-live", "--metrics-port", "0", "--dir", str(root), env=_env())
        _one_line(second, 2, "another groupscope demo", f"pid {first.pid}", str(root))
        assert {p.name for p in root.iterdir()} >= running
        assert first.poll() is None, "the running demo goes on"
    finally:
        os.killpg(first.pid, signal.SIGINT)
        first.wait(60)
    assert first.returncode == 0
