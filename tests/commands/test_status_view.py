"""What ``groupscope status`` and the demo's live view put first: who is in trouble, and why; lag seconds that are
only a lower bound marked as such; an 80-column terminal that shows one line per group with stable columns."""

from __future__ import annotations

import datetime as dt
import os
import re

import pyarrow as pa
from rich.console import Console

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.commands.status_view import (
    COMPACT_COLUMNS, WHY_INDENT, catch_up_note, compact_lines, format_catch_up, format_lag_seconds, load_status,
    render_status, sort_by_severity, status_table, verdict_columns,
)
from streaming.model.rules import UNJUDGED_REASON
from streaming.model import events as ev
from streaming.model.shard import GroupCoordinatorShard
from streaming.model.states import GroupType
from streaming.schema.tables import GROUPS, event_row, group_row
from streaming.sinks.delta import DeltaSink
from tests.cli_helpers import REPO

T0 = 1_800_000_000_000
LONG_WHY = ("stopped-logs:0: group has no members for 75 s; 1,500 behind, last commit 75 s ago: nobody is "
            "consuming this partition")


def row(group: str, status: str, lag: int, **g) -> dict:
    return {"group": group, "type": "CLASSIC", "state": "STABLE", "members": 2, "lag": lag, "lag_seconds": 1.0,
            "status": status, "rebalances_1h": 0, **verdict_columns({"status": status, **g})}


def test_storms_first_then_worst_status_then_lag():
    rows = sort_by_severity([
        row("ok-big", "OK", 900), row("warn", "WARN", 10), row("stop", "STOP", 5),
        row("storming", "OK", 0, storm_active=True, verdict="storm", verdict_reason="flapping"),
        row("ok-small", "OK", 1),
    ])
    assert [r["group"] for r in rows] == ["storming", "stop", "warn", "ok-big", "ok-small"]


def test_the_reason_shown_is_the_one_to_act_on():
    storm = verdict_columns({"status": "WARN", "storm_active": True, "verdict": "storm", "verdict_reason": "R1",
                             "status_reason": "S1"})
    assert (storm["verdict"], storm["why"]) == ("storm", "R1")  # one case for every verdict; the views show STORM
    stuck = verdict_columns({"status": "STOP", "verdict": "formation", "status_reason": "stuck consumer"})
    assert (stuck["verdict"], stuck["why"]) == ("formation", "stuck consumer")
    deploy = verdict_columns({"status": "OK", "verdict": "rolling_restart", "verdict_reason": "4 of 4 restarted"})
    assert deploy["why"] == "4 of 4 restarted"
    formed = verdict_columns({"status": "OK", "verdict": "formation", "verdict_reason": "formed"})
    assert formed["why"] == ""
    # OK only because no log end is known: the reason says lag is unknown, unless a verdict has news
    unjudged = verdict_columns({"status": "OK", "sum_lag": None, "verdict": "formation", "verdict_reason": "formed"})
    assert unjudged["why"] == UNJUDGED_REASON
    judged = verdict_columns({"status": "OK", "sum_lag": 0, "verdict": "formation", "verdict_reason": "formed"})
    assert judged["why"] == ""
    scaled = verdict_columns({"status": "OK", "sum_lag": None, "verdict": "scale_out", "verdict_reason": "2 -> 3"})
    assert scaled["why"] == "2 -> 3"


def test_table_has_verdict_and_why_columns():
    console = Console(width=200, record=True)
    console.print(status_table([row("g", "STOP", 5, status_reason="owner left")]))
    text = console.export_text()
    assert "VERDICT" in text and "WHY" in text and "owner left" in text


def test_lag_seconds_format():
    assert format_lag_seconds({"lag_seconds": 26.24}) == "26.2"
    assert format_lag_seconds({"lag_seconds": 3600.4}) == "3,600"
    assert format_lag_seconds({"lag_seconds": 126.9, "lag_seconds_lower_bound": True}) == ">126"
    assert format_lag_seconds({"lag_seconds": None, "lag_seconds_lower_bound": True}) == "-"


def test_catch_up_format():
    assert format_catch_up({"catching_up": None}) == "-"
    assert format_catch_up({"catching_up": False, "catch_up_seconds": None}) == "never"
    assert format_catch_up({"catching_up": True, "catch_up_seconds": 430.0}) == "7 min"
    assert catch_up_note({"lag": 5, "catching_up": False}) == "not catching up"
    assert catch_up_note({"lag": 5, "catching_up": True, "catch_up_seconds": 35.0}) == "catches up in 35 s"
    assert catch_up_note({"lag": 0, "catching_up": True, "catch_up_seconds": 0.0}) == ""  # nothing to say


def test_catch_up_from_the_model_to_the_delta_table_to_status(tmp_path):
    # 10 records/s produced; "fast" consumes 30/s, "slow" 5/s (heartbeats and commits every 5 s).
    shard = GroupCoordinatorShard(3)
    offset = 0
    for t in range(0, 60_001, 5_000):
        shard.apply_heartbeat(T0 + t, {("orders", 0): 2000 + t // 100})
        for gid, start, rate in (("fast", 500, 30), ("slow", 1000, 5)):
            shard.replay_offset_commit(offset, gid, "orders", 0, start + rate * t // 1000, 0, "", T0 + t, T0 + t)
            offset += 1
    now = T0 + 60_000
    rows = [group_row(g, shard=3, now_ms=now) for g in shard.snapshot(now).groups]
    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, {"groups": pa.Table.from_pylist(rows, schema=GROUPS)})
    status = {r["group"]: r for r in load_status(str(tmp_path), now=dt.datetime.fromtimestamp(now / 1000,
                                                                                               dt.timezone.utc))}
    assert status["slow"]["catching_up"] is False and status["slow"]["catch_up_seconds"] is None
    # fast: lag 2600 - 2300 = 300 worked off at 30 - 10 = 20 records/s
    assert status["fast"]["catching_up"] is True and status["fast"]["catch_up_seconds"] == 15.0
    for width, fast_text in ((200, format_catch_up(status["fast"])), (80, "catches up in")):
        console = Console(width=width, force_terminal=True, record=True, color_system=None)
        render_status(list(status.values()), console=console)
        text = console.export_text()
        assert ("CATCH UP" in text) == (width == 200), width  # the compact form says it before the reason
        assert ("never" if width == 200 else "not catching up") in text and fast_text in text, (width, text)


def _replay(shard: GroupCoordinatorShard, offset: int, ts: int, record) -> None:
    key, value = encode_record(record)
    shard.replay(offset, ts, decode_record(key, value))


def _shard_with_a_stopped_and_a_lagging_group() -> GroupCoordinatorShard:
    """``stopped`` committed before the first heartbeat: its lag seconds can only be "at least the history span".
    ``lagging`` committed an offset the history covers: its lag seconds are exact."""
    shard = GroupCoordinatorShard(3)
    _replay(shard, 0, T0, b.new_offset_commit("stopped", "t", 0, 10, commit_timestamp=T0))
    shard.apply_heartbeat(T0 + 1_000, {("t", 0): 20})
    shard.apply_heartbeat(T0 + 61_000, {("t", 0): 30})
    _replay(shard, 1, T0 + 61_000, b.new_offset_commit("lagging", "t", 0, 25, commit_timestamp=T0 + 61_000))
    shard.apply_heartbeat(T0 + 127_000, {("t", 0): 40})
    return shard


def _write_groups_like_an_older_version(sink: DeltaSink) -> None:
    """A groups table made before max_lag_seconds_lower_bound existed (one group, ``older``)."""
    from deltalake import write_deltalake

    old = dict.fromkeys(GROUPS.names)
    old.update(group_id="older", shard=1, group_type="CLASSIC", state="STABLE", member_count=0, members=[],
               topics=[], partition_count=1, sum_lag=3, max_lag=3, max_lag_seconds=4.0, status="OK", deleted=False,
               updated_time=T0)
    names = [n for n in GROUPS.names if n != "max_lag_seconds_lower_bound"]
    write_deltalake(sink.path("groups"), pa.Table.from_pylist([old], schema=GROUPS).select(names), mode="append")


def _plain(console: Console) -> list[str]:
    return console.export_text().splitlines()


def test_lower_bound_from_the_model_to_the_delta_table_to_status(tmp_path):
    shard = _shard_with_a_stopped_and_a_lagging_group()
    now = T0 + 127_000
    snapshots = {g.group_id: g for g in shard.snapshot(now).groups}
    rows = [group_row(snapshots[gid], shard=3, now_ms=now) for gid in ("stopped", "lagging")]
    assert rows[0]["max_lag_seconds"] == 126.0 and rows[0]["max_lag_seconds_lower_bound"] is True
    assert rows[1]["max_lag_seconds_lower_bound"] is False and rows[1]["max_lag_seconds"] < 126

    sink = DeltaSink(tmp_path, app_id="t")
    _write_groups_like_an_older_version(sink)
    sink.write_batch(0, {"groups": pa.Table.from_pylist(rows, schema=GROUPS)})  # the table gains the column
    status = {r["group"]: r for r in load_status(str(tmp_path), now=dt.datetime.fromtimestamp(now / 1000,
                                                                                               dt.timezone.utc))}
    assert set(status) == {"stopped", "lagging", "older"}
    assert (status["stopped"]["lag_seconds"], status["stopped"]["lag_seconds_lower_bound"]) == (126.0, True)
    assert status["lagging"]["lag_seconds_lower_bound"] is False
    assert status["older"]["lag_seconds_lower_bound"] is False  # written before the column existed: null

    for width in (80, 200):
        console = Console(width=width, force_terminal=True, record=True, color_system=None)
        render_status(list(status.values()), console=console)
        lines = _plain(console)
        stopped_line = next(line for line in lines if "stopped" in line)
        assert re.search(r"\s>126\s", stopped_line), (width, stopped_line)
        lagging_line = next(line for line in lines if "lagging" in line)
        # no lower-bound mark (">" before the seconds); the reason beside it on a wide terminal may say "10 -> 15"
        assert not re.search(r"\s>\d", lagging_line) and re.search(r"\s90\.0\s", lagging_line), lagging_line


def test_a_group_whose_lag_is_unknown_reads_back_as_not_judged_rather_than_ok(tmp_path):
    """After a backfill, or before the first heartbeat, no log end is known: the model's rule keeps the status OK
    (metrics and alerts stay quiet), but ``status`` must not tell a person the group was judged healthy."""
    shard = GroupCoordinatorShard(3)
    _replay(shard, 0, T0, b.new_offset_commit("unjudged", "u", 0, 10, commit_timestamp=T0))
    _replay(shard, 1, T0, b.new_offset_commit("judged", "t", 0, 10, commit_timestamp=T0))
    shard.apply_heartbeat(T0 + 1_000, {("t", 0): 10})  # only topic t's end is known
    now = T0 + 2_000
    snapshots = {g.group_id: g for g in shard.snapshot(now).groups}
    assert snapshots["unjudged"].status.name == "OK" and snapshots["unjudged"].sum_lag is None
    sink = DeltaSink(tmp_path, app_id="t")
    sink.write_batch(0, {"groups": pa.Table.from_pylist([group_row(snapshots[g], shard=3, now_ms=now)
                                                          for g in ("unjudged", "judged")], schema=GROUPS)})
    rows = {r["group"]: r for r in load_status(str(tmp_path), now=dt.datetime.fromtimestamp(now / 1000,
                                                                                          dt.timezone.utc))}
    assert (rows["unjudged"]["status"], rows["unjudged"]["why"]) == (None, UNJUDGED_REASON)
    assert (rows["judged"]["status"], rows["judged"]["why"]) == ("OK", "")
    console = Console(width=200, force_terminal=True, record=True, color_system=None)
    render_status(list(rows.values()), console=console)
    line = next(text for text in _plain(console) if "unjudged" in text)
    assert " OK " not in line and "lag not known yet" in line, line


def test_groups_gone_in_the_last_hour_are_listed_as_deleted(tmp_path):
    now = dt.datetime.fromtimestamp((T0 + 3_600_000) / 1000, dt.timezone.utc)
    sink = DeltaSink(tmp_path, app_id="t")
    kept = dict.fromkeys(GROUPS.names)
    kept.update(group_id="kept", shard=1, group_type="CLASSIC", state="STABLE", member_count=1, members=[], topics=[],
                partition_count=1, sum_lag=0, max_lag=0, status="OK", deleted=False, updated_time=T0)
    events = [ev.GroupDeleted("gone", 5, T0 + 3_000_000, GroupType.CLASSIC),  # 10 min ago
              ev.OffsetDeleted("expired", 6, T0 + 3_100_000, "t", 0),
              ev.GroupDeleted("ancient", 7, T0 - 10_000, GroupType.CLASSIC),  # more than an hour ago
              ev.GroupCreated("kept", 8, T0 + 3_000_000, GroupType.CLASSIC)]
    sink.write_batch(0, {"groups": pa.Table.from_pylist([kept], schema=GROUPS),
                         "group_events": pa.Table.from_pylist([event_row(e, shard=1) for e in events])})
    rows = load_status(str(tmp_path), now=now)
    assert [r["group"] for r in rows] == ["kept", "expired", "gone"]
    gone = rows[-1]
    assert (gone["state"], gone["verdict"], gone["status"]) == ("DELETED", "deleted", None)
    assert gone["why"].startswith("group deleted at ") and "UTC" in gone["why"]
    assert rows[1]["why"].startswith("offsets deleted or expired at ")


def test_a_verdict_is_shown_while_it_is_news_and_not_forever(tmp_path):
    """The VERDICT column covers the hour the rebalance count covers: a deploy 10 minutes ago is shown with its
    reason; a group that formed last week and has been stable since shows none (not "formation" on every row)."""
    now = dt.datetime.fromtimestamp((T0 + 3_600_000) / 1000, dt.timezone.utc)
    sink = DeltaSink(tmp_path, app_id="t")

    def group(gid: str, verdict: str, reason: str) -> dict:
        g = dict.fromkeys(GROUPS.names)
        g.update(group_id=gid, shard=1, group_type="CLASSIC", state="STABLE", member_count=3, members=[], topics=[],
                 partition_count=1, sum_lag=0, max_lag=0, status="OK", deleted=False, updated_time=T0,
                 verdict=verdict, verdict_reason=reason)
        return g

    events = [ev.RollingRestart("deployed", 5, T0 + 3_000_000, 6, 30.0, T0 + 2_970_000, (),
                                reason="3 of 3 members restarted one at a time in 30 s, size back to 3"),
              ev.GroupFormed("settled", 6, T0 - 7 * 86_400_000, 1, 1.0, T0 - 7 * 86_400_000, 0, 3,
                             reason="group formed with 3 members in 1 s"),
              ev.RollingRestart("long-ago", 7, T0 - 2 * 3_600_000, 6, 30.0, T0 - 2 * 3_600_000, (),
                                reason="3 of 3 members restarted one at a time in 30 s, size back to 3")]
    sink.write_batch(0, {"groups": pa.Table.from_pylist(
        [group("deployed", "rolling_restart", events[0].reason), group("settled", "formation", events[1].reason),
         group("long-ago", "rolling_restart", events[2].reason)], schema=GROUPS),
        "group_events": pa.Table.from_pylist([event_row(e, shard=1) for e in events])})
    rows = {r["group"]: r for r in load_status(str(tmp_path), now=now)}
    assert (rows["deployed"]["verdict"], rows["deployed"]["why"]) == ("rolling_restart", events[0].reason)
    assert (rows["settled"]["verdict"], rows["settled"]["why"]) == ("", "")
    assert (rows["long-ago"]["verdict"], rows["long-ago"]["why"]) == ("", "")


def _compact_rows() -> list[dict]:
    return [
        {**row("stopped", "STOP", 1500, status_reason=LONG_WHY), "lag_seconds": 126.7, "lag_seconds_lower_bound": True,
         "state": "EMPTY", "members": 0},
        {**row("storm", "OK", 65, storm_active=True, verdict="storm", verdict_reason="4 rebalances changing membership in 24 s")},
        {**row("a-consumer-group-with-a-long-name", "OK", 12_345_678, verdict="rolling_restart",
               verdict_reason="3 of 3 members restarted one at a time in 22 s, size back to 3"),
         "state": "RECONCILING"},
        row("quiet", "OK", 0),
    ]


def _starts() -> list[int]:
    """Where each compact column starts."""
    out, at = [], 0
    for _, width, _ in COMPACT_COLUMNS:
        out.append(at)
        at += width + 1
    return out


def test_compact_view_at_80_columns_one_line_per_group_and_stable_columns():
    console = Console(width=80, record=True, color_system=None)
    for text in compact_lines(_compact_rows(), 80):
        console.print(text)
    lines = _plain(console)
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    header, body = lines[0], lines[1:]
    assert "WHY" not in header  # no room for a column: the reason goes under its row
    starts = _starts()
    for (name, width, _), at in zip(COMPACT_COLUMNS, starts):
        assert header[at:at + width].strip() == name
    group_rows = [line for line in body if not line.startswith(WHY_INDENT)]
    why_rows = [line for line in body if line.startswith(WHY_INDENT)]
    assert [line.split()[0] for line in group_rows] == ["stopped", "storm", "a-consumer-group-…", "quiet"]
    assert len(why_rows) == 3  # one line each, for the three groups with a reason
    assert why_rows[0].endswith("…") and why_rows[0][len(WHY_INDENT):].startswith("stopped-logs:0: group has no")
    status_at = starts[5]
    assert [line[status_at:status_at + 6].strip() for line in group_rows] == ["STOP", "OK", "OK", "OK"]
    lag_s = starts[4]
    assert group_rows[0][lag_s:lag_s + 7].strip() == ">126"
    lag = starts[3]
    assert group_rows[2][lag:lag + 7].strip() == "12.3M"
    verdict = starts[7]
    assert group_rows[1][verdict:].strip() == "STORM" and group_rows[2][verdict:].strip() == "rolling_restart"
    assert group_rows[2][starts[1]:starts[2]].strip() == "RECONCILING"


def _reasons_shown(width: int) -> dict[str, str]:
    """The live view at ``width`` columns: each group's reason as shown (beside its row, or under it)."""
    console = Console(width=width, record=True, color_system=None)
    for text in compact_lines(_compact_rows(), width):
        console.print(text)
    lines = _plain(console)
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    why_at = lines[0].find("WHY")
    shown: dict[str, str] = {}
    for line, after in zip(lines[1:], lines[2:] + [""]):
        if line.startswith(WHY_INDENT):
            continue
        group = line.split()[0]
        beside = line[why_at:].strip() if why_at > 0 else ""
        shown[group] = beside or (after[len(WHY_INDENT):] if after.startswith(WHY_INDENT) else "")
    return shown


def test_a_wider_terminal_never_shows_less_of_a_reason():
    """At 120 columns the WHY column beside the rows is 42 wide: a reason longer than that goes under its row, where
    it has the whole width, rather than being cut shorter than an 80-column terminal shows it."""
    at_80 = _reasons_shown(80)
    assert at_80["stopped"].endswith("…") and len(at_80["stopped"]) == 76
    for width in (120, 140, 200):
        shown = _reasons_shown(width)
        assert shown.keys() == at_80.keys()
        for group, reason in at_80.items():
            assert len(shown[group]) >= len(reason), (width, group, shown[group], reason)
        # under its row: the whole width's worth of it (116 characters at 120 columns), whole where it fits
        assert shown["stopped"] == (LONG_WHY if width >= len(WHY_INDENT) + len(LONG_WHY) else
                                    LONG_WHY[:width - len(WHY_INDENT) - 1] + "…")
        assert shown["storm"] == "4 rebalances changing membership in 24 s"  # beside its row: it fits


def test_at_80x24_the_groups_that_do_not_fit_are_counted():
    """The live view in an 80x24 terminal: as many groups as fit, then how many more there are (the terminal alone
    would cut the frame to a bare "...")."""
    from streaming.commands.demo_stack import live_frame

    rows = _compact_rows() + [row(f"group-{i:02d}", "OK", i) for i in range(30)]
    progress = "simulated 42 s | batches 17 | records decoded 12,345 | catching up: 1,234 records of __consumer_" \
               "offsets to go | up 50 s"  # longer than 80 columns: two lines
    console = Console(width=80, height=24, record=True, color_system=None)
    console.print(live_frame(rows, progress, 80, 24))
    lines = _plain(console)
    assert len(lines) == 24, lines
    assert lines[2].startswith("consumer groups (34)")
    found = re.fullmatch(r"… (\d+) more groups", lines[-1])
    assert found, lines[-1]
    shown = [line for line in lines[4:-1] if not line.startswith(WHY_INDENT)]
    assert len(shown) + int(found.group(1)) == len(rows), (shown, lines[-1])
    roomy = Console(width=80, height=60, record=True, color_system=None)
    roomy.print(live_frame(rows, progress, 80, 60))
    assert not any("more group" in line for line in _plain(roomy))  # all fit: no count


def test_status_on_a_narrow_terminal_keeps_every_reason_whole():
    for width, name in ((80, "a-consumer-group-wit…"), (100, "a-consumer-group-with-a-long-name")):
        console = Console(width=width, force_terminal=True, record=True, color_system=None)
        render_status(_compact_rows(), console=console)
        lines = _plain(console)
        assert all(len(line) <= width for line in lines)
        assert any(line.startswith(name + " ") for line in lines), lines  # as much of the name as fits
        why = " ".join(line.strip() for line in lines if line.startswith(" ")).replace(WHY_INDENT.strip() + " ", "")
        assert LONG_WHY in why


def test_status_without_tables_says_where_it_looked_and_how_to_name_the_folder(tmp_path):
    """No job's tables in the working directory and no demo's in $GROUPSCOPE_DEMO_DIR: one line naming both places
    and the option that names the folder, exit 1 (a demo run with --dir, looked at from another shell)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_")}
    env["GROUPSCOPE_DEMO_DIR"] = str(tmp_path / "demo")
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "status"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        "groupscope status: no groups table under groupscope-data/delta (has the job written a batch yet?); nor a "
        f"demo's under {tmp_path / 'demo' / 'delta'}. Name the tables' folder with --delta-path (a demo's is delta/ "
        "in its --dir)"]
