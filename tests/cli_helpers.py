"""Runs the real ``groupscope`` command line in a subprocess, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """``groupscope ARGS`` in a subprocess; ``env``: its whole environment (default: this one's); ``cwd``: its
    working directory (default: the repository; elsewhere the repository is put on ``PYTHONPATH``)."""
    if cwd is not None:
        env = dict(os.environ if env is None else env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "streaming.commands.cli", *args], cwd=cwd or REPO, capture_output=True,
                          text=True, timeout=timeout, env=env)


def stop_job(proc: subprocess.Popen, grace_s: float = 90) -> None:
    """Stops a job started in its own session as an operator would: SIGTERM, and SIGKILL to its whole process
    group (Spark's JVM and Python workers included) only if it has not stopped within ``grace_s``."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
