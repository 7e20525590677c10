"""Runs the real ``groupscope`` command line in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streaming.commands.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
