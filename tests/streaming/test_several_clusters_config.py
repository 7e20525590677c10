"""Several clusters in one configuration: how each cluster's settings are merged from the shared ones, how a bad
one is reported (one line naming ``clusters.NAME``), what ``groupscope status`` shows for several clusters' tables,
and how the demo deals its scenarios out between its embedded clusters."""

from __future__ import annotations

import pytest
from rich.console import Console

from streaming.commands.demo_stack import cluster_names, deal_scenarios, plain_summary
from streaming.commands.status_view import cluster_tables, compact_lines, load_clusters_status, status_table
from streaming.config import ConfigError, load_settings, redacted
from tests.cli_helpers import run_cli
from streaming.schema.tables import GROUPS
from streaming.sinks.delta import DeltaSink

SHARED = {
    "kafka": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "groupscope",
              "sasl.password": "secret"},
    "spark": {"checkpoint": "/ckpt"},
    "delta": {"path": "s3://bucket/delta"},
    "model": {"stop_after_seconds": 60},
    "clusters": {
        "eu": {"kafka": {"bootstrap.servers": "eu:9092"}},
        "us": {"kafka": {"bootstrap.servers": "us:9092", "sasl.username": "us-user"}, "model": {"storm_rebalances": 5},
               "delta_path": "/elsewhere/us"},
    },
}


def test_each_cluster_is_the_shared_settings_with_its_own_over_them():
    eu, us = load_settings(None, SHARED).cluster_settings()
    assert (eu.cluster, us.cluster) == ("eu", "us")
    assert eu.kafka == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "groupscope",
                        "sasl.password": "secret", "bootstrap.servers": "eu:9092"}
    assert us.kafka["sasl.username"] == "us-user" and us.kafka["security.protocol"] == "SASL_SSL"
    assert eu.model.stop_after_seconds == us.model.stop_after_seconds == 60
    assert (eu.model.storm_rebalances, us.model.storm_rebalances) == (3, 5)
    assert (eu.spark.checkpoint, us.spark.checkpoint) == ("/ckpt/eu", "/ckpt/us")
    assert (eu.delta.path, us.delta.path) == ("s3://bucket/delta/eu", "/elsewhere/us")
    assert not eu.clusters and not us.clusters
    assert "secret" not in str(redacted(load_settings(None, SHARED)))


def test_the_example_config_loads():
    from tests.cli_helpers import REPO

    eu, us = load_settings(str(REPO / "examples" / "several-clusters.yaml")).cluster_settings()
    assert (eu.cluster, us.cluster) == ("prod-eu", "prod-us")
    assert us.heartbeat.topic == "groupscope-heartbeat-us" and eu.heartbeat.topic == "groupscope-heartbeat"
    assert us.kafka["sasl.password"] == eu.kafka["sasl.password"] and us.kafka["sasl.username"] == "groupscope-us"
    assert us.delta.path == "/var/lib/groupscope/delta/prod-us"


def test_a_single_cluster_config_is_unchanged():
    s = load_settings(None, {"cluster": "prod", "kafka": {"bootstrap.servers": "k:9092"}})
    assert s.cluster_settings() == [s]
    assert s.spark.checkpoint == "groupscope-data/checkpoint" and s.delta.path == "groupscope-data/delta"


@pytest.mark.parametrize("clusters, line", [
    ({"eu": {"model": {"storm_flaps": 0}, "kafka": {"bootstrap.servers": "x"}}},
     "config: clusters.eu: model.storm_flaps: Input should be greater than or equal to 1"),
    ({"eu": {"kafka": {}}}, "config: clusters.eu.kafka: bootstrap.servers is required: each cluster names its own"),
    ({"eu": {"modle": {}}}, "config: clusters.eu.modle: unknown setting"),
    ({"a/b": {"kafka": {"bootstrap.servers": "x"}}}, "config: clusters: cluster name 'a/b': letters, digits"),
])
def test_a_bad_cluster_is_one_line_naming_it(clusters, line):
    with pytest.raises(ConfigError) as err:
        load_settings(None, {"clusters": clusters})
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(line), err.value.lines


def test_run_refuses_flags_that_name_one_cluster_with_a_several_cluster_config(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("clusters:\n  eu: {kafka: {bootstrap.servers: 'eu:9092'}}\n  us: {kafka: {bootstrap.servers: "
                      "'us:9092'}}\n")
    done = run_cli("run", "--config", str(config), "--bootstrap", "x:1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "groupscope: --bootstrap and --cluster name one cluster, but the configuration watches several (eu, us): "
        "set them under clusters.NAME.kafka instead"]


def _write_cluster_tables(root, name: str, groups: list[str]) -> None:
    """One cluster's groups table, as the job writes it, under ``root/name``."""
    import datetime as dt

    import pyarrow as pa

    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for gid in groups:
        row = dict.fromkeys(GROUPS.names)
        row.update(group_id=gid, shard=0, group_type="CLASSIC", state="STABLE", member_count=1, members=[], topics=[],
                   partition_count=1, sum_lag=5, max_lag=5, status="OK", deleted=False, updated_time=now)
        rows.append(row)
    DeltaSink(root / name, app_id=f"groupscope-{name}").write_batch(
        0, {"groups": pa.Table.from_pylist(rows, schema=GROUPS)})


def test_status_finds_each_clusters_tables_and_shows_the_cluster(tmp_path):
    _write_cluster_tables(tmp_path, "east", ["orders", "billing"])
    _write_cluster_tables(tmp_path, "west", ["orders"])
    (tmp_path / "not-a-cluster").mkdir()
    tables = cluster_tables(str(tmp_path))
    assert tables == [("east", str(tmp_path / "east")), ("west", str(tmp_path / "west"))]
    assert cluster_tables(str(tmp_path / "east")) == [], "a folder holding one table set is one cluster"
    rows = load_clusters_status(tables)
    assert [(r["cluster"], r["group"]) for r in rows] == [("east", "billing"), ("east", "orders"), ("west", "orders")]

    console = Console(width=200, record=True)
    console.print(status_table(rows))
    text = console.export_text()
    assert "CLUSTER" in text and "west" in text
    compact = [t.plain for t in compact_lines(rows, 80)]
    assert compact.index("cluster east") < compact.index("cluster west")
    assert [line.split()[0] for line in compact[compact.index("cluster west") + 1:]] == ["orders"]
    summary = plain_summary(rows, "progress").splitlines()
    assert "cluster east" in summary and "cluster west" in summary

    done = run_cli("status", "--delta-path", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    assert '"cluster": "west", "group": "orders"' in done.stdout


def test_one_cluster_shows_no_cluster_column(tmp_path):
    _write_cluster_tables(tmp_path, "only", ["orders"])
    rows = load_clusters_status(cluster_tables(str(tmp_path)))
    console = Console(width=200, record=True)
    console.print(status_table(rows))
    assert "CLUSTER" not in console.export_text()
    assert not any(t.plain.startswith("cluster ") for t in compact_lines(rows, 80))


def test_the_demo_deals_scenarios_out_between_its_clusters():
    assert cluster_names(1) == ["demo"] and cluster_names(2) == ["demo-1", "demo-2"]
    assert deal_scenarios(["a", "b", "c"], 2) == [["a", "c"], ["b"]]
    assert deal_scenarios(["a"], 2) == [["a"], ["a"]], "fewer scenarios than clusters: every cluster runs them"
    assert deal_scenarios(["a", "b"], 1) == [["a", "b"]]
