"""``groupscope demo`` as a person meets it: in a terminal (a pseudo-terminal) twice in the same folder, and under a
pipe. Groups appear, each scenario shows the verdict it exists to show, Ctrl-C ends it within seconds without a
stack trace, a second run starts clean, and ``groupscope status`` finds the demo's tables with no flags."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import pytest

from streaming.sinks.delta import DeltaSink

pytestmark = pytest.mark.spark

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")
TRACE_MARKERS = ("Traceback", "py4j", "Exception", "\tat org.apache", "ERROR")

# The verdict each scenario exists to show (docs/verdicts.md), as a cell of the group's row in the live view.
EXPECTED = {
    "lagging": ("WARN",),
    "stalled": ("STOP", "STALL"),
    "stopped": ("STOP",),
    "storm": ("STORM",),
    "rolling": ("rolling_restart",),
}


@dataclass
class Run:
    proc: subprocess.Popen
    started: float
    fd: int | None = None
    output: bytearray = field(default_factory=bytearray)
    first_groups_s: float | None = None
    exit_after_sigint_s: float | None = None

    @property
    def text(self) -> str:
        return ANSI.sub("", self.output.decode(errors="replace"))


def _env(tmp_path) -> dict[str, str]:
    # XDG_STATE_HOME: the default demo folder (and what `groupscope status` falls back to) lives under tmp_path.
    return dict(os.environ, COLUMNS="100", LINES="60", TERM="xterm-256color", XDG_STATE_HOME=str(tmp_path / "state"),
                GROUPSCOPE_DEMO_DIR="")


def _demo_args(*extra: str) -> list[str]:
    return [sys.executable, "-m", "streaming.commands.cli", "demo", "--metrics-port", "0", *extra]


def start_in_terminal(tmp_path, *extra: str) -> Run:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(_demo_args(*extra), cwd=tmp_path, stdin=secondary, stdout=secondary, stderr=secondary,
                            env=_env(tmp_path), close_fds=True, start_new_session=True)
    os.close(secondary)
    return Run(proc, time.monotonic(), fd=primary)


def pump(run: Run, until, timeout_s: float) -> bool:
    """Reads the terminal until ``until(text)`` holds (True) or the time is up / the process ended (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([run.fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(run.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                return until(run.text)
            run.output.extend(chunk)
            if run.first_groups_s is None and re.search(r"consumer groups \([1-9]", run.text):
                run.first_groups_s = time.monotonic() - run.started
        if until(run.text):
            return True
        if run.proc.poll() is not None and not ready:
            return until(run.text)
    return False


def ctrl_c(run: Run) -> None:
    """SIGINT to the whole foreground process group, as a terminal's Ctrl-C does; then read to the end."""
    sent = time.monotonic()
    os.killpg(run.proc.pid, signal.SIGINT)
    pump(run, lambda _: False, 20)
    try:
        run.proc.wait(20)
    finally:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
        os.close(run.fd)
    run.exit_after_sigint_s = time.monotonic() - sent


def row_of(text: str, group: str) -> list[list[str]]:
    """Every rendering of a group's row in the live view, as its cells."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()
            if line.startswith("│") and line.split("│")[1].strip() == group]


def verdicts_shown(text: str) -> dict[str, bool]:
    return {g: any(cell in want for r in row_of(text, g) for cell in r) for g, want in EXPECTED.items()}


def assert_clean_stop(run: Run) -> None:
    text = run.text
    assert run.exit_after_sigint_s is not None and run.exit_after_sigint_s < 5, (run.exit_after_sigint_s,
                                                                                 text[-2000:])
    assert run.proc.returncode == 0, text[-3000:]
    stop = text[text.rfind("groupscope demo: stopping"):]
    assert "groupscope demo: stopped" in stop
    for marker in TRACE_MARKERS:
        assert marker not in text, f"{marker!r} in the output:\n{text[-3000:]}"


def test_demo_in_a_terminal_twice_and_under_a_pipe(tmp_path):
    data = tmp_path / "state" / "groupscope" / "demo"
    scenarios = "lagging,stalled,stopped,storm,rolling-restart"
    first = start_in_terminal(tmp_path, "--scenario", scenarios)

    # Meanwhile, under a pipe: a plain summary (no terminal needed) and --duration counted from the start.
    piped_dir = tmp_path / "piped"
    piped_started = time.monotonic()
    piped = subprocess.Popen(_demo_args("--scenario", "steady", "--duration", "45", "--dir", str(piped_dir)),
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(tmp_path),
                             start_new_session=True)
    piped_out: list[bytes] = []
    piped_ended: list[float] = []

    def read_piped() -> None:
        piped_out.append(piped.stdout.read())
        piped.wait()
        piped_ended.append(time.monotonic())

    reader = threading.Thread(target=read_piped, daemon=True)
    reader.start()

    try:
        all_shown = pump(first, lambda text: all(verdicts_shown(text).values()), 150)
        shown = verdicts_shown(first.text)
    finally:
        ctrl_c(first)
    assert all_shown, (shown, first.text[-4000:])
    assert first.first_groups_s is not None and first.first_groups_s < 60, first.first_groups_s
    assert_clean_stop(first)
    # Rolling restart is not a storm.
    assert not any("STORM" in r for r in row_of(first.text, "rolling"))
    assert "groupscope status" in first.text

    # The demo's data sits in the user's state folder, marked as the demo's and ignored by git.
    assert (data / "delta" / "groups").is_dir() and (data / ".gitignore").read_text() == "*\n"
    status = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "status", "--json"], cwd=tmp_path,
                            env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert '"group": "storm"' in status.stdout and "demo's tables" in status.stderr

    # Second run, same folder, other scenario: nothing of the first run shows up.
    second = start_in_terminal(tmp_path, "--scenario", "steady")
    try:
        assert pump(second, lambda text: re.search(r"consumer groups \([1-9]", text) is not None, 120), \
            second.text[-3000:]
        pump(second, lambda _: False, 6)  # a few more refreshes
    finally:
        ctrl_c(second)
    assert_clean_stop(second)
    for old in ("storm", "rolling", "lagging", "stalled", "stopped"):
        assert not row_of(second.text, old), old
    groups = {r["group_id"] for r in DeltaSink(data / "delta").read("groups").to_pylist()}
    assert groups and all(g.startswith("steady") for g in groups), groups

    reader.join(120)
    if piped.poll() is None:
        os.killpg(piped.pid, signal.SIGKILL)
    piped_text = b"".join(piped_out).decode(errors="replace")
    assert piped.returncode == 0, piped_text[-3000:]
    assert piped_ended and piped_ended[0] - piped_started < 45 + 15, "--duration counts from the start"
    assert "\x1b[" not in piped_text, "no terminal codes under a pipe"
    assert re.search(r"^GROUP +STATE +MEMBERS +LAG", piped_text, re.M), piped_text[-3000:]
    assert re.search(r"^steady-\S+ +STABLE", piped_text, re.M), piped_text[-3000:]
    assert "stopped after" in piped_text
    for marker in TRACE_MARKERS:
        assert marker not in piped_text, marker
    print(f"first groups after {first.first_groups_s:.1f} s; Ctrl-C to exit {first.exit_after_sigint_s:.1f} s "
          f"and {second.exit_after_sigint_s:.1f} s")
