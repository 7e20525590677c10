"""What ``groupscope status`` and the demo's live view put first: who is in trouble, and why."""

from __future__ import annotations

from rich.console import Console

from streaming.commands.status_view import sort_by_severity, status_table, verdict_columns


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
    assert (storm["verdict"], storm["why"]) == ("STORM", "R1")
    stuck = verdict_columns({"status": "STOP", "verdict": "formation", "status_reason": "stuck consumer"})
    assert (stuck["verdict"], stuck["why"]) == ("formation", "stuck consumer")
    deploy = verdict_columns({"status": "OK", "verdict": "rolling_restart", "verdict_reason": "4 of 4 restarted"})
    assert deploy["why"] == "4 of 4 restarted"
    formed = verdict_columns({"status": "OK", "verdict": "formation", "verdict_reason": "formed"})
    assert formed["why"] == ""


def test_table_has_verdict_and_why_columns():
    console = Console(width=200, record=True)
    console.print(status_table([row("g", "STOP", 5, status_reason="owner left")]))
    text = console.export_text()
    assert "VERDICT" in text and "WHY" in text and "owner left" in text
