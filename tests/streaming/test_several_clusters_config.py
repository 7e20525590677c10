"""Several clusters in one configuration: what ``groupscope run`` refuses, what ``groupscope status`` shows for
several clusters' tables, and how the demo deals its scenarios out between its embedded clusters. How each
cluster's settings are merged and a bad one reported is in ``tests/streaming/test_config.py``."""

from __future__ import annotations

from rich.console import Console

from streaming.commands.demo_stack import cluster_names, deal_scenarios, plain_summary
from streaming.commands.status_view import cluster_tables, compact_lines, load_clusters_status, status_table
from tests.cli_helpers import run_cli
from streaming.schema.tables import GROUPS
from streaming.sinks.delta import DeltaSink


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
