"""A ``GROUPSCOPE_*`` variable that names no setting stops ``groupscope run`` with one line and exit status 2,
before anything starts. How such variables are read and named is checked in ``tests/streaming/test_config.py``."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.cli_helpers import REPO


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path):
    env = {**os.environ, "GROUPSCOPE_SPRAK__MASTER": "local[1]"}
    proc = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "run", "--delta-path", str(tmp_path / "d"),
                           "--checkpoint", str(tmp_path / "c"), "--duration", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["groupscope: environment: GROUPSCOPE_SPRAK__MASTER: no setting 'sprak' (did "
                                        "you mean GROUPSCOPE_SPARK__MASTER?)"], proc.stderr
    assert not (tmp_path / "c").exists()  # nothing started
