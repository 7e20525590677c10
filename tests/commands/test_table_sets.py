"""Which Delta tables ``status`` and ``maintain`` read: the configured clusters', else ``delta.path`` holding one set
or a folder per cluster, else, with nothing configured and no job's tables at the default path, the last demo's;
and when a table was last written, from its Delta log."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from streaming.commands.table_sets import TableSets, cluster_tables, find_table_sets, last_write
from streaming.config import load_settings
from streaming.schema.tables import GROUPS
from streaming.sinks.delta import DeltaSink


def _tables(path: Path) -> Path:
    """A real ``groups`` table under ``path`` with one row."""
    row = dict.fromkeys(GROUPS.names) | {"group_id": "g", "deleted": False}
    DeltaSink(path, app_id="t").write_batch(0, {"groups": pa.Table.from_pylist([row], schema=GROUPS)})
    return path


@pytest.fixture
def nothing_configured(monkeypatch, tmp_path) -> Path:
    """A shell with no GROUPSCOPE_* variables, in an empty folder (so the default path holds no tables), whose
    demo folder is ``tmp_path/demo``."""
    import os

    for name in [n for n in os.environ if n.startswith("GROUPSCOPE_")]:
        monkeypatch.delenv(name)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("GROUPSCOPE_DEMO_DIR", str(tmp_path / "demo"))
    return tmp_path / "demo"


def test_a_folder_of_cluster_folders_is_one_set_per_cluster(tmp_path):
    for name in ("west", "east"):
        (tmp_path / name / "groups").mkdir(parents=True)
    (tmp_path / "notes").mkdir()  # no groups table: not a cluster
    assert cluster_tables(str(tmp_path)) == [("east", str(tmp_path / "east")), ("west", str(tmp_path / "west"))]


def test_one_set_a_uri_or_a_missing_folder_is_no_list_of_clusters(tmp_path):
    (tmp_path / "groups").mkdir()
    (tmp_path / "east" / "groups").mkdir(parents=True)
    assert cluster_tables(str(tmp_path)) == [], "the folder holds one set itself"
    assert cluster_tables("s3://bucket/delta") == []
    assert cluster_tables(str(tmp_path / "missing")) == []


def test_a_named_path_is_used_as_it_is_without_the_demo(nothing_configured, tmp_path):
    _tables(nothing_configured / "delta")
    settings = load_settings(None, {"delta": {"path": str(tmp_path / "prod")}})
    found = find_table_sets(settings, str(tmp_path / "prod"))
    assert found == TableSets(str(tmp_path / "prod"), ((settings.cluster, str(tmp_path / "prod")),), False)


def test_configured_clusters_come_first(nothing_configured, tmp_path):
    _tables(nothing_configured / "delta")
    settings = load_settings(None, {"delta": {"path": str(tmp_path / "all")}, "clusters": {
        "east": {"kafka": {"bootstrap.servers": "e:9092"}, "delta_path": str(tmp_path / "e")},
        "west": {"kafka": {"bootstrap.servers": "w:9092"}}}})
    found = find_table_sets(settings, None)
    assert found.several and found.demo is None
    # west names no folder of its own: its tables are in a folder named after it under delta.path
    assert found.sets == (("east", str(tmp_path / "e")), ("west", str(tmp_path / "all" / "west")))


def test_with_nothing_configured_the_last_demos_tables_are_found(nothing_configured):
    _tables(nothing_configured / "delta")
    settings = load_settings(None, {})
    found = find_table_sets(settings, None)
    delta = str(nothing_configured / "delta")
    assert found == TableSets(delta, ((settings.cluster, delta),), False, nothing_configured)


def test_a_demo_of_several_clusters_is_one_set_per_cluster(nothing_configured):
    for name in ("a", "b"):
        _tables(nothing_configured / "delta" / name)
    found = find_table_sets(load_settings(None, {}), None)
    assert found.several and found.demo == nothing_configured
    assert [c for c, _ in found.sets] == ["a", "b"]


def test_without_any_tables_it_says_where_the_demos_would_have_been(nothing_configured):
    settings = load_settings(None, {})
    found = find_table_sets(settings, None)
    assert (found.root, found.several, found.demo, found.demo_looked) == (
        settings.delta.path, False, None, nothing_configured / "delta")


def test_tables_at_the_default_path_win_over_the_demos(nothing_configured):
    _tables(nothing_configured / "delta")
    settings = load_settings(None, {})
    _tables(Path(settings.delta.path))  # a job ran here, in the working folder
    found = find_table_sets(settings, None)
    assert found.demo is None and found.sets == ((settings.cluster, settings.delta.path),)


def test_last_write_is_the_newest_commit_in_utc_or_none(tmp_path):
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    _tables(tmp_path)
    after = dt.datetime.now(dt.timezone.utc)
    written = last_write(str(tmp_path) + "/")
    assert written is not None and written.tzinfo == dt.timezone.utc
    assert before - dt.timedelta(seconds=1) <= written <= after + dt.timedelta(seconds=1)
    assert last_write(str(tmp_path), "lag") is None
    assert last_write(str(tmp_path / "missing")) is None
