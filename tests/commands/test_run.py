"""``commands/run.py``: ``groupscope status`` on the last demo's tables, run as a person runs it (it finds the
tables with no flags, says which tables it reads and when they were last written, marks figures that are older than
a few minutes, fits a sensible width under a pipe, and writes every verdict in one case in JSON); and how the
commands turn their flags into settings, and what ``run`` says before it goes to the default Kafka."""

from __future__ import annotations

import json
import os
import re

import pytest

from streaming.commands.run import _settings, defaults_line
from streaming.config import load_settings
from tests.cli_helpers import run_cli
from tests.commands.demo_tables import LONG_REASON, age_commits, demo_tables


def test_status_says_what_it_reads_and_as_of_when(tmp_path):
    delta, env = demo_tables(tmp_path)
    fresh = run_cli("status", "--json", env=env, cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    said = fresh.stderr.strip().splitlines()
    assert len(said) == 1 and re.fullmatch(
        rf"groupscope status: the demo's tables in {re.escape(str(delta))}, last written "
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ s ago\)", said[0]), said
    rows = {r["group"]: r for r in map(json.loads, fresh.stdout.splitlines())}
    assert {r["stale"] for r in rows.values()} == {False} and all(r["as_of"] for r in rows.values())
    # One case for every verdict: the active storm too.
    assert (rows["storming"]["verdict"], rows["deployed"]["verdict"]) == ("storm", "rolling_restart")

    age_commits(delta / "groups", hours=3)
    old = run_cli("status", env=env, cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    assert re.search(r"last written .* UTC \(3 h ago\): their figures are older than 5 min", old.stderr), old.stderr
    body = " ".join(old.stdout.split())
    for group in ("storming", "deployed"):
        assert re.search(rf"{group} .*?\(as of 3 h ago\)", body), (group, old.stdout)
    assert "STORM" in old.stdout  # the view still shows an active storm in capitals
    stale = run_cli("status", "--json", env=env, cwd=tmp_path)
    assert {json.loads(line)["stale"] for line in stale.stdout.splitlines()} == {True}


def test_piped_status_fits_a_sensible_width(tmp_path):
    _, env = demo_tables(tmp_path)
    piped = run_cli("status", env=env, cwd=tmp_path)  # stdout is a pipe; no $COLUMNS
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert LONG_REASON in " ".join(" ".join(lines).replace("↳", " ").split())  # every reason still in full
    narrow = run_cli("status", env={**env, "COLUMNS": "90"}, cwd=tmp_path)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 90


@pytest.fixture
def nothing_configured(monkeypatch, tmp_path):
    """No GROUPSCOPE_* variables, in an empty working folder."""
    for name in [n for n in os.environ if n.startswith("GROUPSCOPE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_flags_override_the_settings_they_name(nothing_configured):
    settings = _settings(None, bootstrap="k1:9092,k2:9092", cluster="east", metrics_port=9400,
                         delta_path="/data/delta", checkpoint="/data/cp", master="local[1]", api_port=8001)
    assert settings.kafka["bootstrap.servers"] == "k1:9092,k2:9092" and settings.cluster == "east"
    assert (settings.metrics.port, settings.delta.path) == (9400, "/data/delta")
    assert (settings.spark.checkpoint, settings.spark.master) == ("/data/cp", "local[1]")
    assert (settings.api.enabled, settings.api.port) == (True, 8001), "an API port turns the API on"
    untouched = _settings(None, bootstrap=None, cluster=None, metrics_port=None, delta_path=None, checkpoint=None,
                          master=None)
    assert untouched == load_settings(None, None)


def test_one_cluster_flags_against_a_several_cluster_config_is_one_line(nothing_configured, capsys):
    config = nothing_configured / "clusters.yaml"
    config.write_text("clusters:\n  east: {kafka: {bootstrap.servers: 'e:9092'}}\n"
                      "  west: {kafka: {bootstrap.servers: 'w:9092'}}\n")
    with pytest.raises(SystemExit) as info:
        _settings(str(config), bootstrap="x:9092", cluster=None, metrics_port=None, delta_path=None,
                  checkpoint=None, master=None)
    assert info.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("groupscope: --bootstrap and --cluster name one cluster, but the configuration watches "
                           "several (east, west)")


def test_a_bad_flag_value_is_named_as_a_flag(nothing_configured, capsys):
    with pytest.raises(SystemExit) as info:
        _settings(None, bootstrap=None, cluster=None, metrics_port=None, delta_path=None, checkpoint=None,
                  master=None, api_port=70000)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("groupscope: ") and "api.port" in err and "Traceback" not in err


def test_run_says_when_it_goes_to_the_default_kafka_and_where_it_writes(nothing_configured):
    line = defaults_line(load_settings(None, None))
    assert line is not None
    assert "reading Kafka at the default localhost:9092" in line
    assert f"Delta tables in {nothing_configured / 'groupscope-data' / 'delta'}" in line, "paths made absolute"
    assert "creates the topic" in line and " if missing and writes end offsets to it every " in line
    quiet = defaults_line(load_settings(None, {"heartbeat": {"enabled": False}}))
    assert quiet is not None and "where groupscope writes nothing to it" in quiet
    assert defaults_line(load_settings(None, {"kafka": {"bootstrap.servers": "k:9092"}})) is None
    remote = defaults_line(load_settings(None, {"delta": {"path": "s3://bucket/delta"}}))
    assert remote is not None and "Delta tables in s3://bucket/delta," in remote, "a URI is left as it is"
