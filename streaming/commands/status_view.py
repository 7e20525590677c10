"""The group table of ``groupscope status`` (read back from the Delta tables) and of the demo's live view.

Two forms. The full table (a terminal wide enough for all of it, and any pipe) has a column for everything. The
compact form (narrower terminals, and the live view at any width) keeps every column at a fixed
width, so nothing moves from one refresh to the next and an 80-column terminal shows one line per group; the reason
to look (WHY) takes the rest of the line when at least ``WHY_MIN_WIDTH`` columns are left, else a line of its own
under the group's row.
"""

from __future__ import annotations

import datetime as dt
import os
import textwrap
from pathlib import Path
from typing import Any, Iterable, Mapping

from streaming.model.rules import UNJUDGED_REASON, shown_status
from streaming.schema.read_model import RECENT_WINDOW_MS, GroupActivity, GroupView, epoch_ms, group_activity
from streaming.commands.table_sets import cluster_tables, configured_cluster_tables, last_write
from streaming.sinks.delta import DeltaSink

__all__ = ["load_status", "load_clusters_status", "cluster_tables", "configured_cluster_tables", "render_status", "status_table", "compact_lines", "verdict_columns", "sort_by_severity",
           "format_lag_seconds", "format_catch_up", "catch_up_note", "format_age", "shown_verdict", "shown_why", "COMPACT_COLUMNS", "STALE_AFTER"]

STATUS_STYLE = {"OK": "green", "WARN": "yellow", "STALL": "red", "STOP": "red", "REWIND": "magenta", "ERR": "bold red"}

# The compact form's columns: header, width, right-aligned; 77 columns in all. STATE fits every state's name
# (RECONCILING), VERDICT every verdict's (rolling_restart).
COMPACT_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    ("GROUP", 18, False), ("STATE", 11, False), ("MEM", 3, True), ("LAG", 7, True), ("LAG S", 7, True),
    ("STATUS", 6, False), ("REB", 3, True), ("VERDICT", 15, False))
WHY_MIN_WIDTH = 40
# The job rewrites every group's row at least every model.snapshot_interval_seconds (10 s by default): tables not
# written for this long are a job that is stopped, stalled or cut off, and their figures are marked old.
STALE_AFTER = dt.timedelta(minutes=5)
PIPE_WIDTH = 120  # status under a pipe, without $COLUMNS: the width of a wide terminal, not the widest table
WHY_INDENT = "  ↳ "


def load_status(delta_path: str, *, storage_options: Mapping[str, str] | None = None,
                now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every group of the ``groups`` table, worst first, then the groups that left it in the last hour (deleted,
    or their last offsets expired), marked deleted with the time they went. Each group's figures are as of the
    table's last write (``as_of``), and ``stale`` when that is more than ``STALE_AFTER`` before ``now``: a job that
    stopped leaves tables that look current."""
    if "://" not in delta_path and not (Path(delta_path) / "groups").exists():
        raise FileNotFoundError(f"no groups table under {delta_path} (has the job written a batch yet?)")
    sink = DeltaSink(delta_path, storage_options=storage_options)
    groups = [GroupView.of_row(r) for r in sink.read("groups").to_pylist()]
    now = now or dt.datetime.now(dt.timezone.utc)

    as_of = last_write(delta_path, storage_options=storage_options)
    stale = as_of is not None and now - as_of > STALE_AFTER
    since_ms = epoch_ms(now) - RECENT_WINDOW_MS
    activity = group_activity(sink.read("group_events").select(["group_id", "kind", "event_time"]).to_pylist(),
                              since_ms=since_ms)
    rows = [{**shown_row(g, activity.get(g.group_id), since_ms), "as_of": as_of, "stale": stale} for g in groups]
    present = {g.group_id for g in groups}
    gone = []
    for gid, a in sorted(activity.items()):
        if gid in present or a.last_event_ms is None:
            continue
        t = dt.datetime.fromtimestamp(a.last_event_ms / 1000, dt.timezone.utc)
        what = "group deleted" if a.last_event_kind == "GroupDeleted" else "offsets deleted or expired"
        gone.append(deleted_row(gid, f"{what} at {t:%H:%M:%S} UTC (no longer in __consumer_offsets)",
                                rebalances_1h=a.rebalances_since(since_ms), updated=t))
    return sort_by_severity(rows) + gone


def shown_row(g: GroupView, activity: GroupActivity | None, since_ms: int) -> dict[str, Any]:
    """The row ``status`` and the live view show of one group: its figures, the rebalances of the recent window
    (from ``since_ms`` on) and whether its verdict came within it, and the reason to read first. One function for
    both, so the two never count differently."""
    a = activity or GroupActivity()
    status = None if g.status is None else g.status.name
    return {
        "group": g.group_id, "type": g.group_type, "state": g.state, "members": g.member_count,
        "lag": g.sum_lag, "max_lag": g.max_lag, "lag_seconds": g.max_lag_seconds,
        "lag_seconds_lower_bound": g.max_lag_seconds_lower_bound, "status": status,
        "catch_up_seconds": g.catch_up_seconds, "catching_up": g.catching_up,
        "rebalances_1h": a.rebalances_since(since_ms), "generation": g.generation,
        "updated": None if g.updated_ms is None else dt.datetime.fromtimestamp(g.updated_ms / 1000, dt.timezone.utc),
        **verdict_columns({"status": status, "sum_lag": g.sum_lag, "status_reason": g.status_reason,
                           "storm_active": g.storm_active, "verdict": g.verdict, "verdict_reason": g.verdict_reason,
                           "verdict_lately": a.verdict_since(since_ms)}),
    }


def load_clusters_status(tables: Iterable[tuple[str, str]], *, storage_options: Mapping[str, str] | None = None,
                         now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """:func:`load_status` of each cluster's tables, every row with its ``cluster``, cluster by cluster in the
    given order. A cluster whose tables are not written yet is one row saying so, not a failure of the others."""
    rows: list[dict[str, Any]] = []
    for cluster, path in tables:
        try:
            found = load_status(path, storage_options=storage_options, now=now)
        except FileNotFoundError as exc:
            found = [deleted_row("-", str(exc), state="-", verdict="")]
        rows.extend({"cluster": cluster, **r} for r in found)
    return rows


def _clusters(rows: list[Mapping[str, Any]]) -> list[str]:
    """The clusters of ``rows`` in order of first appearance, when they come from more than one."""
    seen = list(dict.fromkeys(r["cluster"] for r in rows if r.get("cluster") is not None))
    return seen if len(seen) > 1 else []


def deleted_row(group: str, why: str, **known: Any) -> dict[str, Any]:
    """The row of a group that is gone: listed last, marked deleted, with the reason."""
    row = {"group": group, "type": None, "rebalances_1h": 0, "generation": None, "updated": None, **known}
    row.update(state="DELETED", members=0, lag=None, max_lag=None, lag_seconds=None, lag_seconds_lower_bound=False,
               status=None, storm_active=False, verdict="deleted", why=why)
    return row


_SEVERITY = {"ERR": 5, "REWIND": 4, "STOP": 3, "STALL": 2, "WARN": 1, "OK": 0}


def verdict_columns(g: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict and the reason a person should read first: an active storm (verdict ``storm``, in lower case as
    every verdict's name; the views show it as ``STORM``), else the status's reason when the group is not OK, else
    its latest rebalance verdict -- when it came within the hour the table's rebalance count
    covers (``verdict_lately``; absent: it did). A group that formed last week and has been stable since shows no
    verdict: "formation" on every long-lived group would hide the few verdicts that are news."""
    storm = bool(g.get("storm_active"))
    lately = g.get("verdict_lately", True)
    verdict = "storm" if storm else ((g.get("verdict") or "") if lately else "")
    if storm:
        why = g.get("verdict_reason") or ""
    elif g.get("status") not in (None, "OK"):
        why = g.get("status_reason") or ""
    else:
        why = g.get("verdict_reason") or "" if lately and g.get("verdict") not in (None, "formation") else ""
        if not why and "sum_lag" in g and shown_status(g.get("status"), g["sum_lag"]) is None:
            why = UNJUDGED_REASON
    return {"verdict": verdict, "storm_active": storm, "why": why}


def sort_by_severity(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worst first: active storms, then by status (ERR ... OK), then by lag, then by name."""
    return sorted(rows, key=lambda r: (not r.get("storm_active"), -_SEVERITY.get(r.get("status") or "OK", 0),
                                       -(r.get("lag") or 0), r["group"]))


def format_lag_seconds(r: Mapping[str, Any]) -> str:
    """Lag in seconds. ``>126`` is a lower bound: the end offsets' history, which reaches back to the job's first
    heartbeat, does not reach the committed offset (a group stopped before the job started), so the lag is at
    least that old; whole seconds, as "at least" needs no tenths. Tenths below 100 s only."""
    secs = r.get("lag_seconds")
    if secs is None:
        return "-"
    if r.get("lag_seconds_lower_bound"):
        return f">{int(secs):,}"
    return f"{secs:,.1f}" if secs < 100 else f"{secs:,.0f}"


def format_catch_up(r: Mapping[str, Any]) -> str:
    """Time to work off the lag at the current rates: ``-`` unknown, ``never`` when consumption is not faster than
    production (not catching up), ``0 s`` without lag, else as :func:`format_age` says a duration."""
    if r.get("catching_up") is None:
        return "-"
    if not r["catching_up"] or r.get("catch_up_seconds") is None:
        return "never"
    return format_age(r["catch_up_seconds"])


def catch_up_note(r: Mapping[str, Any]) -> str:
    """What the compact form (no room for a column) says of a lagging group's catch-up, before its reason."""
    if not r.get("lag") or r.get("catching_up") is None:
        return ""
    return "not catching up" if r["catching_up"] is False else f"catches up in {format_catch_up(r)}"


def shown_verdict(r: Mapping[str, Any]) -> str:
    """The VERDICT cell: an active storm in capitals, so it stands out among the verdicts of the hour."""
    return "STORM" if r.get("storm_active") else (r.get("verdict") or "")


def format_age(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h``, ``4 days``: how long ago, as precisely as a person needs it."""
    if seconds < 120:
        return f"{max(0, int(seconds))} s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def shown_why(r: Mapping[str, Any], now: dt.datetime | None = None) -> str:
    """The WHY cell: the reason, after "(as of 3 h ago)" when the row's figures are old (``stale``)."""
    why = r.get("why") or ""
    if not r.get("stale") or r.get("as_of") is None:
        return why
    age = format_age(((now or dt.datetime.now(dt.timezone.utc)) - r["as_of"]).total_seconds())
    return f"(as of {age} ago) {why}".rstrip()


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` with an ellipsis."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _fit_figure(text: str, width: int) -> str:
    """A number that does not fit its column, shortened with a unit (``12,345,678`` → ``12.3M``)."""
    if len(text) <= width:
        return text
    prefix = text[0] if text[0] == ">" else ""
    try:
        value = float(text[len(prefix):].replace(",", ""))
    except ValueError:
        return _fit(text, width)
    for unit, scale in (("k", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12)):
        if value / scale >= 999.95 and unit != "T":
            continue
        for digits in (1, 0):
            short = f"{prefix}{value / scale:.{digits}f}{unit}"
            if len(short) <= width:
                return short
    return _fit(text, width)


def _cells(r: Mapping[str, Any]) -> list[str]:
    """A row's cells in ``COMPACT_COLUMNS`` order."""
    return [r["group"], r.get("state") or "-", "-" if r.get("members") is None else str(r["members"]),
            "-" if r.get("lag") is None else f"{r['lag']:,}", format_lag_seconds(r), r.get("status") or "-",
            "-" if r.get("rebalances_1h") is None else str(r["rebalances_1h"]), shown_verdict(r)]


def compact_lines(rows: Iterable[Mapping[str, Any]], width: int, *, group_width: int | None = None,
                  wrap_why: bool = False, max_lines: int | None = None) -> list:
    """The compact form as lines of rich ``Text``, ``width`` columns wide at most. ``group_width``: the GROUP
    column's width (default: fixed, for the live view; longer names end in an ellipsis). ``wrap_why``: a WHY is
    wrapped over as many lines as it needs (``status``) instead of kept to one line (the live view). Kept to one
    line, a reason goes beside its row when it fits there, else under it, where it has the whole width: a wider
    terminal never shows less of it than a narrower one. ``max_lines``: at most that many lines (a terminal's
    height); the groups that do not fit are counted on the last line ("… 12 more groups")."""
    from rich.text import Text

    columns = list(COMPACT_COLUMNS)
    if group_width is not None:
        columns[0] = ("GROUP", group_width, False)
    row_width = sum(w for _, w, _ in columns) + len(columns) - 1
    why_width = width - row_width - 1
    inline = why_width >= WHY_MIN_WIDTH
    room = max(10, width - len(WHY_INDENT))  # a reason under its row

    def line(cells: list[str], header: bool = False):
        text = Text(style="bold" if header else "")
        for i, (cell, (name, w, right)) in enumerate(zip(cells, columns)):
            if i:
                text.append(" ")
            cell = _fit_figure(cell, w) if right else _fit(cell, w)
            cell = cell.rjust(w) if right else cell.ljust(w)
            if header:
                text.append(cell)
            elif name == "STATUS":
                text.append(cell, style=STATUS_STYLE.get(cell.strip(), ""))
            elif name == "VERDICT" and cell.strip() == "STORM":
                text.append(cell, style="bold red")
            else:
                text.append(cell)
        return text

    def group_lines(r: Mapping[str, Any]) -> list:
        """A group's row and its reason (beside it, or under it)."""
        text = line(_cells(r))
        why = "; ".join(part for part in (catch_up_note(r), shown_why(r)) if part)
        if inline and (wrap_why or len(why) <= why_width):
            parts = (textwrap.wrap(why, why_width) if wrap_why else [why]) if why else []
            if parts:
                text.append(" " + parts[0])
            return [text, *(Text(" " * (row_width + 1) + part) for part in parts[1:])]
        if not why:
            return [text]
        parts = textwrap.wrap(why, room) if wrap_why else [_fit(why, room)]
        return [text, *(Text((WHY_INDENT if i == 0 else " " * len(WHY_INDENT)) + part) for i, part in enumerate(parts))]

    head = line([name for name, _, _ in columns], header=True)
    if inline:
        head.append(" WHY")
    rows = list(rows)
    several = bool(_clusters(rows))
    chunks: list[list] = []  # each group's lines, its cluster's name first where a cluster starts
    cluster = None
    for r in rows:
        chunk = []
        if several and r.get("cluster") != cluster:  # several clusters: each one's groups under its name
            cluster = r.get("cluster")
            chunk.append(Text(f"cluster {cluster}", style="bold underline"))
        chunks.append(chunk + group_lines(r))
    out = [head]
    if max_lines is not None and 1 + sum(len(c) for c in chunks) > max_lines:
        room_for = max_lines - 2  # the header and the line that counts the rest
        shown = 0
        while shown < len(chunks) and len(out) - 1 + len(chunks[shown]) <= room_for:
            out.extend(chunks[shown])
            shown += 1
        hidden = len(chunks) - shown
        out.append(Text(f"… {hidden} more group{'' if hidden == 1 else 's'}", style="bold"))
    else:
        out.extend(text for chunk in chunks for text in chunk)
    for text in out:
        text.rstrip()
    return out


def status_table(rows: Iterable[dict[str, Any]], title: str | None = None, rebalances_header: str = "REBALANCES 1H"):
    """The full groups table (every column; WHY folded within 60 columns)."""
    from rich.table import Table

    rows = list(rows)
    several = bool(_clusters(rows))
    table = Table(title=title, header_style="bold")
    if several:
        table.add_column("CLUSTER", justify="left", overflow="fold")
    for name, justify in (("GROUP", "left"), ("TYPE", "left"), ("STATE", "left"), ("MEMBERS", "right"),
                          ("LAG", "right"), ("LAG SECONDS", "right"), ("CATCH UP", "right"), ("STATUS", "left"),
                          (rebalances_header, "right"),
                          ("VERDICT", "left")):
        table.add_column(name, justify=justify, overflow="fold")
    table.add_column("WHY", justify="left", overflow="fold", max_width=60)
    for r in rows:
        status = r["status"] or "-"
        table.add_row(*([r.get("cluster") or "-"] if several else []), r["group"], r["type"] or "-", r["state"] or "-",
                      str(r["members"] if r["members"] is not None else "-"),
                      f"{r['lag']:,}" if r["lag"] is not None else "-", format_lag_seconds(r), format_catch_up(r),
                      f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]", str(r["rebalances_1h"]),
                      f"[bold red]{shown_verdict(r)}[/]" if r.get("storm_active") else shown_verdict(r),
                      shown_why(r))
    return table


def render_status(rows: list[dict[str, Any]], console=None) -> None:
    """Prints ``rows``: the full table where it fits (a terminal's width; under a pipe ``$COLUMNS``, else
    ``PIPE_WIDTH``), else the compact form (the GROUP column as wide as the longest name allows, every reason in
    full)."""
    from rich.console import Console

    if console is None:
        console = Console()
        if not console.is_terminal and not os.environ.get("COLUMNS"):
            # Piped or redirected with no width given: as wide as a wide terminal, the compact form beyond that.
            console = Console(width=PIPE_WIDTH)
    if not rows:
        console.print("no groups yet")
        return
    from rich.measure import Measurement

    table = status_table(rows)
    natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if natural <= console.width:
        console.print(table)  # every column as wide as its content
        return
    others = sum(w for _, w, _ in COMPACT_COLUMNS[1:]) + len(COMPACT_COLUMNS) - 1
    longest = max(len(r["group"]) for r in rows)
    group_width = min(max(len("GROUP"), longest), max(COMPACT_COLUMNS[0][1], console.width - others))
    for text in compact_lines(rows, console.width, group_width=group_width, wrap_why=True):
        console.print(text, overflow="ignore", crop=False, soft_wrap=True)
