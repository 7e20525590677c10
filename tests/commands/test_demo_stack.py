"""The demo's live view (``commands/demo_stack.py``): it shows a group as ``groupscope status`` does (both build
their rows from the driver's typed read model with one function, so their REB / REBALANCES 1H columns count the same
rebalances), and it keeps a group that disappeared with the reason rather than dropping it silently."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa

from streaming.commands.demo_stack import _group_rows
from streaming.commands.status_view import load_status
from streaming.model import events as ev
from streaming.model.states import GroupType
from streaming.schema.read_model import GroupView
from streaming.schema.tables import GROUPS, event_row
from streaming.sinks.delta import DeltaSink
from streaming.sinks.prometheus import MetricsState


def _rebalance(at_ms: int, generation: int) -> ev.Rebalance:
    return ev.Rebalance("orders-app", generation, at_ms, GroupType.CLASSIC, generation, generation - 1, (), 2, 2,
                        0, 2, 60.0)


def test_the_live_view_counts_the_rebalances_of_the_last_hour_as_status_does(tmp_path):
    """The model has counted 5 rebalances since the group formed; 3 are in the events here, of which 2 came in the
    last hour. ``status`` says 2 (REBALANCES 1H); the live view's REB column must say 2 as well, not 5."""
    now_ms = int(time.time() * 1000)
    group = dict.fromkeys(GROUPS.names)
    group.update(group_id="orders-app", shard=1, group_type="CLASSIC", state="STABLE", member_count=2, members=[],
                 topics=[], partition_count=1, sum_lag=0, max_lag=0, status="OK", rebalances=5, deleted=False,
                 updated_time=now_ms)
    events = [event_row(_rebalance(now_ms - offset_ms, 10 + i), shard=1)
              for i, offset_ms in enumerate((2 * 3_600_000, 30 * 60_000, 10 * 60_000))]

    state = MetricsState()
    state.apply_batch([group], event_rows=events, batch_id=0)
    (live,) = _group_rows(state.view(), {})

    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, {"groups": pa.Table.from_pylist([group], schema=GROUPS),
                         "group_events": pa.Table.from_pylist(events)})
    (shown,) = load_status(str(tmp_path), now=dt.datetime.fromtimestamp(now_ms / 1000, dt.timezone.utc))

    assert shown["rebalances_1h"] == 2
    assert live["rebalances_1h"] == shown["rebalances_1h"]


def test_a_rerun_batch_does_not_count_its_rebalances_twice():
    """Spark re-runs a failed micro-batch with the same id: the live view must not see its rebalances twice."""
    now_ms = int(time.time() * 1000)
    group = dict.fromkeys(GROUPS.names)
    group.update(group_id="orders-app", group_type="CLASSIC", state="STABLE", sum_lag=0, status="OK", rebalances=1)
    events = [event_row(_rebalance(now_ms - 60_000, 2), shard=1)]
    state = MetricsState()
    state.apply_batch([group], event_rows=events, batch_id=7)
    state.apply_batch([group], event_rows=events, batch_id=7)
    (live,) = _group_rows(state.view(), {})
    assert live["rebalances_1h"] == 1


class _View:
    """What the live view reads of the state: typed groups and their recent activity (none here)."""

    def __init__(self, groups):
        self.groups = {gid: GroupView.of_row(g) for gid, g in groups.items()}
        self.activity = {}


def _live_group(gid: str, status: str = "OK", **over) -> dict:
    g = dict.fromkeys(GROUPS.names)
    g.update(group_id=gid, group_type="CLASSIC", state="STABLE", member_count=2, sum_lag=0, max_lag=0,
             max_lag_seconds=0.0, status=status, rebalances=1, **over)
    return g


def test_the_live_view_keeps_a_group_that_disappeared_and_says_why():
    gone: dict = {}
    first = _group_rows(_View({"a": _live_group("a"), "b": _live_group("b", "WARN")}), gone)
    assert [r["group"] for r in first] == ["b", "a"]
    later = _group_rows(_View({"a": _live_group("a")}), gone)
    assert [r["group"] for r in later] == ["a", "b"]
    assert (later[1]["state"], later[1]["verdict"]) == ("DELETED", "deleted")
    assert "deleted" in later[1]["why"]
    back = _group_rows(_View({"a": _live_group("a"), "b": _live_group("b")}), gone)
    assert all(r["state"] == "STABLE" for r in back)


def test_the_demos_job_settings_are_settings_the_job_accepts(tmp_path):
    """The demo writes its job's settings as a dict; they must pass the same validation a user's file does, with
    each embedded cluster's tables and checkpoint in a folder of its own."""
    from streaming.commands.demo_stack import DemoOptions, _job_settings
    from streaming.config import load_settings

    one = load_settings(None, _job_settings(tmp_path, DemoOptions(), ["127.0.0.1:40001"]))
    assert (one.cluster, one.kafka["bootstrap.servers"]) == ("demo", "127.0.0.1:40001")
    assert (one.delta.path, one.spark.checkpoint) == (str(tmp_path / "delta"), str(tmp_path / "checkpoint"))
    assert not one.api.enabled

    options = DemoOptions(clusters=2, api_port=8123)
    several = load_settings(None, _job_settings(tmp_path, options, ["127.0.0.1:40001", "127.0.0.1:40002"]))
    assert (several.api.enabled, several.api.port) == (True, 8123)
    per_cluster = [(s.cluster, s.kafka["bootstrap.servers"], s.delta.path, s.spark.checkpoint)
                   for s in several.cluster_settings()]
    assert per_cluster == [
        ("demo-1", "127.0.0.1:40001", str(tmp_path / "delta" / "demo-1"), str(tmp_path / "checkpoint" / "demo-1")),
        ("demo-2", "127.0.0.1:40002", str(tmp_path / "delta" / "demo-2"), str(tmp_path / "checkpoint" / "demo-2"))]


def test_the_plain_view_has_fixed_columns_and_a_dash_for_what_is_unknown():
    from streaming.commands.demo_stack import plain_summary

    rows = [{"group": "a-consumer-group-with-a-very-long-name", "state": "PREPARING_REBALANCE", "members": 3,
             "lag": 1_234_567, "lag_seconds": 126.4, "lag_seconds_lower_bound": True, "status": "STOP",
             "storm_active": True, "verdict": "storm", "why": "4 rebalances in 30 s"},
            {"group": "quiet", "state": None, "members": None, "lag": None, "lag_seconds": None, "status": None,
             "verdict": None, "why": None}]
    progress, header, long, quiet = plain_summary(rows, "batch 12").splitlines()
    assert progress == "batch 12"
    assert long[:24] == "a-consumer-group-with-a-"  # cut at 24 so the columns stay put
    assert long[header.index("STATE"):].split()[:6] == ["PREPARING_R", "3", "1,234,567", ">126", "STOP", "STORM"]
    assert long.index("4 rebalances") == header.index("WHY"), "every WHY starts under its title"
    assert long.endswith("4 rebalances in 30 s")
    assert quiet.split() == ["quiet", "-", "-", "-", "-", "-"], "unknown is '-', not 0 or None"
