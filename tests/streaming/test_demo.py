"""``groupscope demo`` headless in a pseudo-terminal for a fixed duration: what it printed, what ``/metrics`` served
while it ran, and what the Delta tables hold afterwards."""

from __future__ import annotations

import os
import pty
import re
import select
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from streaming.sinks.delta import DeltaSink
from tests.cli_helpers import REPO

pytestmark = pytest.mark.spark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_demo_runs_headless_and_shows_everything(tmp_path):
    port = free_port()
    primary, secondary = pty.openpty()
    env = dict(os.environ, COLUMNS="160", LINES="60", TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streaming.cli", "demo", "--duration", "75", "--speed", "3", "--metrics-port",
         str(port), "--dir", str(tmp_path / "demo")],
        cwd=REPO, stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True)
    os.close(secondary)
    output = bytearray()
    scraped = ""
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            ready, _, _ = select.select([primary], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                output.extend(chunk)
            if not scraped and b"caught up" in output:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
                    scraped = resp.read().decode()
            if proc.poll() is not None and not ready:
                break
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output.decode(errors="replace"))
    assert proc.returncode == 0, text[-3000:]
    # The live view: a progress line, the groups of the scenarios with state and status, and where results are.
    assert "caught up" in text
    for group in ("steady-range", "lagging", "stalled", "storm", "kip848-uniform", "txn-classic", "stopped"):
        assert group in text, group
    assert "STABLE" in text and "EMPTY" in text and "CONSUMER" in text
    assert f"metrics at http://127.0.0.1:{port}/metrics" in text
    assert "Delta tables:" in text and "groupscope status --delta-path" in text
    # /metrics while running: real series for the simulated groups.
    assert 'kafka_consumergroup_members{cluster="demo",group="steady-range"}' in scraped
    lag = re.search(r'kafka_consumergroup_group_sum_lag\{cluster="demo",group="lagging"\} ([0-9.e+]+)', scraped)
    assert lag and float(lag.group(1)) > 0, "the lagging group lags"
    assert re.search(r'groupscope_caught_up\{cluster="demo"\} 1\.0', scraped)
    # Delta tables after the run.
    delta = DeltaSink(tmp_path / "demo" / "delta", app_id="groupscope-demo")
    groups = {r["group_id"]: r for r in delta.read("groups").to_pylist()}
    assert {"steady-range", "lagging", "storm", "kip848-uniform"} <= set(groups)
    assert groups["kip848-uniform"]["group_type"] == "CONSUMER"
    assert groups["storm"]["rebalances"] >= 5
    assert delta.read("commits").num_rows > 1000
    kinds = set(delta.read("group_events").column("kind").to_pylist())
    assert {"Rebalance", "MemberJoined", "MemberLeft"} <= kinds
