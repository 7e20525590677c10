"""The group table of ``groupscope status`` (and the demo's live view), read back from the Delta tables."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Iterable, Mapping

from streaming.sinks.delta import DeltaSink

__all__ = ["load_status", "render_status", "status_table", "verdict_columns", "sort_by_severity",
           "format_lag_seconds"]

STATUS_STYLE = {"OK": "green", "WARN": "yellow", "STALL": "red", "STOP": "red", "REWIND": "magenta", "ERR": "bold red"}


def load_status(delta_path: str, *, storage_options: Mapping[str, str] | None = None,
                now: dt.datetime | None = None) -> list[dict[str, Any]]:
    if "://" not in delta_path and not (Path(delta_path) / "groups").exists():
        raise FileNotFoundError(f"no groups table under {delta_path} (has the job written a batch yet?)")
    sink = DeltaSink(delta_path, storage_options=storage_options)
    groups = sink.read("groups").to_pylist()
    now = now or dt.datetime.now(dt.timezone.utc)
    hour_ago = now - dt.timedelta(hours=1)
    recent: dict[str, int] = {}
    for e in sink.read("group_events").select(["group_id", "kind", "event_time"]).to_pylist():
        t = e["event_time"]
        if e["kind"] == "Rebalance" and t is not None and t >= hour_ago:
            recent[e["group_id"]] = recent.get(e["group_id"], 0) + 1
    rows = []
    for g in groups:
        rows.append({
            "group": g["group_id"], "type": g["group_type"], "state": g["state"], "members": g["member_count"],
            "lag": g["sum_lag"], "max_lag": g["max_lag"], "lag_seconds": g["max_lag_seconds"],
            "status": g["status"], "rebalances_1h": recent.get(g["group_id"], 0), "generation": g["generation"],
            "updated": g["updated_time"], **verdict_columns(g),
        })
    return sort_by_severity(rows)


_SEVERITY = {"ERR": 5, "REWIND": 4, "STOP": 3, "STALL": 2, "WARN": 1, "OK": 0}


def verdict_columns(g: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict and the reason a person should read first: an active storm, else the status's reason when the
    group is not OK, else its latest rebalance verdict."""
    storm = bool(g.get("storm_active"))
    verdict = "STORM" if storm else (g.get("verdict") or "")
    if storm:
        why = g.get("verdict_reason") or ""
    elif g.get("status") not in (None, "OK"):
        why = g.get("status_reason") or ""
    else:
        why = g.get("verdict_reason") or "" if g.get("verdict") not in (None, "formation") else ""
    return {"verdict": verdict, "storm_active": storm, "why": why}


def sort_by_severity(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worst first: active storms, then by status (ERR ... OK), then by lag, then by name."""
    return sorted(rows, key=lambda r: (not r.get("storm_active"), -_SEVERITY.get(r.get("status") or "OK", 0),
                                       -(r.get("lag") or 0), r["group"]))


def format_lag_seconds(r: Mapping[str, Any]) -> str:
    """Lag in seconds; ``>`` marks a lower bound (the end offsets' history does not reach back to the committed
    offset, so the lag is at least that old)."""
    secs = r.get("lag_seconds")
    if secs is None:
        return "-"
    return (">" if r.get("lag_seconds_lower_bound") else "") + f"{secs:,.1f}"


def status_table(rows: Iterable[dict[str, Any]], title: str | None = None, rebalances_header: str = "REBALANCES 1H",
                 compact: bool = False):
    """The groups table. ``compact``: the live view's form, readable from 80 columns: no TYPE column, short
    headers, and minimum widths so columns do not jump from one refresh to the next."""
    from rich.table import Table

    table = Table(title=title, header_style="bold", pad_edge=not compact, collapse_padding=compact)
    if compact:
        columns = (("GROUP", "left", 12), ("STATE", "left", 6), ("MEM", "right", 3), ("LAG", "right", 6),
                   ("LAG S", "right", 6), ("STATUS", "left", 6), (rebalances_header, "right", 3),
                   ("VERDICT", "left", 7))
    else:
        columns = (("GROUP", "left", 0), ("TYPE", "left", 0), ("STATE", "left", 0), ("MEMBERS", "right", 0),
                   ("LAG", "right", 0), ("LAG SECONDS", "right", 0), ("STATUS", "left", 0),
                   (rebalances_header, "right", 0), ("VERDICT", "left", 0))
    for name, justify, width in columns:
        table.add_column(name, justify=justify, min_width=width or None, no_wrap=compact and name != "GROUP",
                         overflow="fold")
    table.add_column("WHY", justify="left", overflow="fold", max_width=60, min_width=10 if compact else None)
    for r in rows:
        status = r["status"] or "-"
        cells = [r["group"], r["type"] or "-", r["state"] or "-",
                 str(r["members"] if r["members"] is not None else "-"),
                 f"{r['lag']:,}" if r["lag"] is not None else "-", format_lag_seconds(r),
                 f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]", str(r["rebalances_1h"]),
                 f"[bold red]{r.get('verdict')}[/]" if r.get("storm_active") else (r.get("verdict") or ""),
                 r.get("why") or ""]
        if compact:
            del cells[1]
        table.add_row(*cells)
    return table


def render_status(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        # Piped or redirected: nothing wraps the lines, so do not squeeze the table into 80 columns.
        console = Console(width=200)
    if not rows:
        console.print("no groups yet")
        return
    console.print(status_table(rows))
