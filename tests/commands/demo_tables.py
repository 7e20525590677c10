"""The tables a demo run leaves behind, built without running the demo: what ``status`` and ``maintain`` find with
no flags (both look in ``$GROUPSCOPE_DEMO_DIR``), with one verdict of each kind and a reason too long for a narrow
terminal."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa

from streaming.model import events as ev
from streaming.schema.tables import GROUPS, event_row
from streaming.sinks.delta import DeltaSink

LONG_REASON = ("orders:3: 4,210 behind and growing for 95 s while the partition's end moved 4,300 offsets; the last "
               "commit came 95 s ago from a member that has not polled since")


def _group(gid: str, **over) -> dict:
    g = dict.fromkeys(GROUPS.names)
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    g.update(group_id=gid, shard=1, group_type="CLASSIC", state="STABLE", member_count=3, members=[], topics=[],
             partition_count=6, sum_lag=4210, max_lag=4210, max_lag_seconds=95.0, status="WARN", deleted=False,
             updated_time=now, status_reason=LONG_REASON, storm_active=False, rebalances=2)
    g.update(over)
    return g


def demo_tables(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The tables a demo run leaves under its folder, and the environment of a shell that has nothing configured."""
    demo = tmp_path / "demo"
    sink = DeltaSink(demo / "delta", app_id="groupscope-demo")
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    deploy = ev.RollingRestart("deployed", 1, now - 60_000, 6, 30.0, now - 90_000, (),
                               reason="3 of 3 members restarted one at a time in 30 s, size back to 3")
    sink.write_batch(0, {"group_events": pa.Table.from_pylist([event_row(deploy, shard=1)]),
                         "groups": pa.Table.from_pylist([
        _group("a-consumer-group-with-a-rather-long-name-for-its-service"),
        _group("storming", storm_active=True, verdict="storm", verdict_reason="9 rebalances in 40 s", status="OK",
               status_reason=None),
        _group("deployed", verdict="rolling_restart", status="OK", status_reason=None, verdict_reason=deploy.reason)],
        schema=GROUPS)})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_") and k not in ("COLUMNS", "LINES")}
    return demo / "delta", {**env, "GROUPSCOPE_DEMO_DIR": str(demo)}


def age_commits(table: Path, hours: float) -> None:
    """Moves every commit of ``table`` ``hours`` back in time, as if the job that wrote it had stopped then."""
    shift = int(hours * 3_600_000)
    for log in (table / "_delta_log").glob("*.json"):
        lines = []
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] -= shift
            lines.append(json.dumps(action))
        log.write_text("\n".join(lines) + "\n")
