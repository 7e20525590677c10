"""``groupscope backfill`` (``streaming/commands/backfill.py``) as a command: its flags reach the settings, and bad
input, a missing Java or a failed run end in one line with the status a script can test (2: the input, 1: the
run). The backfill itself, with Spark, runs in ``tests/spark/test_backfill.py``; here nothing starts Spark."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import streaming.commands.backfill as command
import streaming.driver.backfill as driver
from streaming.commands.backfill import backfill
from streaming.driver.backfill import BackfillReport


@pytest.fixture
def cli(monkeypatch, tmp_path):
    """Runs the command in-process with nothing configured, Java found, logging left alone, and ``os._exit`` (the
    command's last word, which would end the test process) made an ordinary exit the runner reports."""
    for name in [n for n in os.environ if n.startswith("GROUPSCOPE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(command, "exit_unless_java", lambda _: None)
    monkeypatch.setattr(command, "configure_logging", lambda level: None)

    monkeypatch.setattr(os, "_exit", sys.exit)

    def run(*args: str) -> Result:
        return CliRunner().invoke(backfill, list(args), catch_exceptions=False)
    return run


@pytest.fixture
def ran(monkeypatch) -> list:
    """Calls of the driver's run_backfill (replaced): the settings and path it was given."""
    calls: list = []

    def run_backfill(settings, segments, *, progress=None):
        calls.append((settings, segments))
        return BackfillReport(partitions=3, batches=2, records=12_000, commits=900, groups=7, seconds=4.0,
                              spark_start_seconds=1.5)

    monkeypatch.setattr(driver, "run_backfill", run_backfill)
    return calls


def test_the_log_dir_is_required():
    result = CliRunner().invoke(backfill, [])
    assert result.exit_code == 2 and "Missing argument 'LOG_DIR'" in result.stderr


def test_an_unknown_log_level_is_refused_by_name(cli, ran):
    result = cli("logs", "--log-level", "verbose")
    assert result.exit_code == 2 and "'--log-level'" in result.stderr and ran == []


def test_the_flags_reach_the_settings_of_the_run(cli, ran, tmp_path):
    cli(str(tmp_path / "logs"), "--delta-path", str(tmp_path / "d"), "--checkpoint", str(tmp_path / "cp"),
        "--cluster", "east", "--master", "local[1]")
    ((settings, segments),) = ran
    assert segments == str(tmp_path / "logs")
    assert (settings.delta.path, settings.spark.checkpoint) == (str(tmp_path / "d"), str(tmp_path / "cp"))
    assert (settings.cluster, settings.spark.master) == ("east", "local[1]")


def test_a_config_file_is_read(cli, ran, tmp_path):
    config = tmp_path / "groupscope.yaml"
    config.write_text("cluster: west\ndelta:\n  path: /tables/west\n")
    cli("logs", "--config", str(config))
    assert (ran[0][0].cluster, ran[0][0].delta.path) == ("west", "/tables/west")


def test_a_missing_config_file_is_one_line_and_status_2(cli, ran, tmp_path):
    result = cli("logs", "--config", str(tmp_path / "nowhere.yaml"))
    assert result.exit_code == 2 and ran == []
    (line,) = result.stderr.splitlines()
    assert line.startswith("groupscope: config file ") and "nowhere.yaml" in line


def test_a_config_of_several_clusters_is_refused_before_java_is_looked_for(cli, ran, tmp_path, monkeypatch):
    monkeypatch.setattr(command, "exit_unless_java", lambda _: pytest.fail("Java was looked for first"))
    config = tmp_path / "clusters.yaml"
    config.write_text("clusters:\n  east: {kafka: {bootstrap.servers: 'e:9092'}}\n"
                      "  west: {kafka: {bootstrap.servers: 'w:9092'}}\n")
    result = cli("logs", "--config", str(config))
    assert result.exit_code == 2 and ran == []
    assert result.stderr.splitlines() == [
        "groupscope backfill: the configuration watches several clusters; backfill one at a time with --delta-path "
        "and --checkpoint of that cluster"]


def test_without_java_it_says_so_and_ends_with_status_1(cli, ran, monkeypatch):
    import streaming.commands.run as run
    import streaming.spark.java as java

    monkeypatch.setattr(command, "exit_unless_java", run.exit_unless_java)
    monkeypatch.setattr(java, "java_problem", lambda: "Spark needs Java 17 or newer; none was found")
    result = cli("logs")
    assert result.exit_code == 1 and ran == []
    assert result.stderr.splitlines() == ["groupscope backfill: Spark needs Java 17 or newer; none was found"]


def test_a_path_without_segments_is_one_line_and_status_2(cli, tmp_path):
    """The real driver: it refuses the path before anything of Spark is built."""
    result = cli(str(tmp_path / "missing"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"groupscope backfill: {tmp_path / 'missing'}: no such file or directory"]


def test_a_failed_run_is_one_line_and_status_1(cli, monkeypatch):
    def failing(settings, segments, *, progress=None):
        raise RuntimeError("the backfill query failed: java.lang.OutOfMemoryError: Java heap space")

    monkeypatch.setattr(driver, "run_backfill", failing)
    result = cli("logs")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "groupscope backfill: the backfill query failed: java.lang.OutOfMemoryError: Java heap space"]


def test_ctrl_c_says_how_to_go_on_and_ends_with_status_130(cli, monkeypatch):
    def interrupted(settings, segments, *, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(driver, "run_backfill", interrupted)
    result = cli("logs", "--checkpoint", "cp")
    assert result.exit_code == 130  # 128 + SIGINT, as a shell reports a Ctrl-C
    assert "run it again with the same --checkpoint to go on" in result.stderr


def test_a_finished_run_says_what_it_read_and_wrote(cli, ran, tmp_path):
    result = cli("logs", "--delta-path", str(tmp_path / "d"))
    assert result.exit_code == 0
    # 12,000 records in 4.0 s: 3,000 a second.
    assert "groupscope backfill: 12,000 records from 3 partitions in 2 batches, 4.0 s (3,000 records/s, Spark start " \
           f"1.5 s); 900 commit rows, 7 groups in {Path(tmp_path / 'd')}" in result.stderr
