"""``demo``, ``run`` and ``backfill`` on a machine without Java 17: one line that says what to install, before
anything starts (the demo's folder is not cleared), never PySpark's ``[JAVA_GATEWAY_EXITED]``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

INSTALL = "apt-get install openjdk-17-jre-headless"


def _path_without_java(tmp_path: Path) -> str:
    """A PATH with every program of this one's but java: links to them in one folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name.startswith("java") or (bin_dir / entry.name).exists():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                (bin_dir / entry.name).symlink_to(entry.path)
    return str(bin_dir)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME" and not k.startswith("GROUPSCOPE_")}
    return {**env, "PATH": _path_without_java(tmp_path), "HOME": str(tmp_path / "home"), **extra}


def _one_line_saying_java_17(result) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Java 17" in lines[0] and INSTALL in lines[0], lines[0]
    assert "JAVA_GATEWAY_EXITED" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["demo", "run", "backfill"])
def test_no_java_on_path_is_one_line_saying_what_to_install(tmp_path, command):
    demo_dir = tmp_path / "demo"
    demo_dir.mkdir()
    (demo_dir / ".groupscope-demo").write_text("")
    (demo_dir / "groupscope.log").write_text("the last demo's log\n")
    args = {"demo": ["demo", "--no-live", "--duration", "5", "--metrics-port", "0"],
            "run": ["run", "--bootstrap", "127.0.0.1:1", "--duration", "1", "--metrics-port", "0",
                    "--delta-path", str(tmp_path / "delta"), "--checkpoint", str(tmp_path / "checkpoint")],
            "backfill": ["backfill", str(tmp_path), "--delta-path", str(tmp_path / "delta")]}[command]
    result = run_cli(*args, env=_env(tmp_path, GROUPSCOPE_DEMO_DIR=str(demo_dir)), timeout=90)
    _one_line_saying_java_17(result)
    assert (demo_dir / "groupscope.log").read_text() == "the last demo's log\n"  # nothing cleared


def test_a_java_older_than_17_is_named(tmp_path):
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    java.chmod(0o755)
    result = run_cli("demo", "--no-live", "--duration", "5", "--metrics-port", "0",
                     env=_env(tmp_path, JAVA_HOME=str(home), GROUPSCOPE_DEMO_DIR=str(tmp_path / "demo")))
    _one_line_saying_java_17(result)
    assert "Java 11" in result.stderr


def test_run_with_no_kafka_named_says_what_it_will_write_and_where_first(tmp_path):
    """Nothing configured, ``run`` would go to localhost:9092 and create its heartbeat topic there: it says so, with
    where the tables and the checkpoint go, before anything else (here, before it stops for the missing Java, so the
    test connects to nothing)."""
    env = _env(tmp_path)
    result = run_cli("run", "--metrics-port", "0", env=env, cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 2, result.stderr
    assert lines[0].endswith(
        "WARNING groupscope.run: no Kafka configured (--bootstrap, --config or GROUPSCOPE_KAFKA_BOOTSTRAP): reading "
        "Kafka at the default localhost:9092, where groupscope creates the topic groupscope-heartbeat if "
        f"missing and writes end offsets to it every 5 s; Delta tables in {tmp_path / 'groupscope-data' / 'delta'}, "
        f"checkpoint in {tmp_path / 'groupscope-data' / 'checkpoint'}"), lines[0]
    assert "Java 17" in lines[1]
    named = run_cli("run", "--bootstrap", "127.0.0.1:1", "--metrics-port", "0", env=env, cwd=tmp_path)
    assert "no Kafka configured" not in named.stderr and len(named.stderr.strip().splitlines()) == 1
