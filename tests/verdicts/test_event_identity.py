"""Events have one identity each, restarts change nothing, and a batch that folds a commit and its tombstone still
reports the deletion. All on real recordings, through the job's own step."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

from protocol import builders as b
from protocol.codec import encode_record
from streaming.offline.recording import load_recording
from streaming.offline.recording.replay import _source_rows, replay_batches, replay_events
from streaming.job.step import ShardStep, StepConfig
from tests.conftest import captures_dir

from .test_recordings import DIRS

# Time-driven events (statuses, settled verdicts) are identified by their time as well: the same shard offset can
# carry several evaluations. Events a record implies several of (members joining in one generation) say which
# member they are about.
TIME_DRIVEN = {"StatusChanged", "StormEnded", "RollingRestart", "ScaleOut", "ScaleIn", "GroupFormed"}


def identity(row: dict) -> tuple:
    when = row["event_time"] if row["kind"] in TIME_DRIVEN else None
    return (row["shard"], row["offset"], row["kind"], row["group_id"], row["member_id"], row["topic"],
            row["partition"], when)


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_event_identity_is_unique(path):
    rows = list(replay_events(load_recording(path)))
    assert sum(r["kind"] == "Rebalance" for r in rows) >= 2, "every recording has rebalances: events were lost"
    dupes = [k for k, n in Counter(identity(r) for r in rows).items() if n > 1]
    assert not dupes, dupes[:5]
    rebalances = Counter((r["shard"], r["offset"]) for r in rows if r["kind"] == "Rebalance")
    assert all(n == 1 for n in rebalances.values()), "two Rebalance events on one record"


def _replay_with_restarts(rec, restart_every: int | None) -> tuple[list[dict], dict[str, dict]]:
    """The recording's events, and the last ``groups`` row per group, with the steps restarted from their saved
    state every ``restart_every`` samples (as the job does after a restart)."""
    events: list[dict] = []
    groups: dict[str, dict] = {}
    for _, _, tables in replay_batches(rec, StepConfig(), restart_every):
        if "group_events" in tables:
            events += tables["group_events"].to_pylist()
        for row in tables["groups"].to_pylist() if "groups" in tables else ():
            groups[row["group_id"]] = row
    return events, groups


@pytest.mark.parametrize("name", ["storm_crashloop", "kip848_storm_and_rolling", "stalled_consumer"])
def test_restarts_change_no_event_and_no_counter(name):
    """A job restarted every 7 s (state saved and restored, as Spark's state store does) writes exactly the events
    and verdict counters of one that never stopped."""
    rec = load_recording(captures_dir() / "conformance" / "verdicts" / name)
    straight, groups = _replay_with_restarts(rec, None)
    restarted, groups_r = _replay_with_restarts(rec, 7)
    assert restarted == straight
    fields = ("rebalances", "storms", "rolling_restarts", "scale_outs", "scale_ins", "storm_active", "verdict")
    assert {g: tuple(r[f] for f in fields) for g, r in groups_r.items()} == \
        {g: tuple(r[f] for f in fields) for g, r in groups.items()}
    assert any(r["verdict"] for r in groups.values()), "this recording has verdicts"


def test_commit_and_tombstone_folded_in_one_batch_still_delete():
    """A batch holding a commit and, later, its tombstone (a live run may read them in two batches) reports the
    deletion: the fold keeps the commit before the tombstone."""
    step = ShardStep(0)
    recs = [b.new_offset_commit("g", "t", 0, 10, commit_timestamp=1000), b.new_offset_commit_tombstone("g", "t", 0)]
    encoded = [encode_record(r) for r in recs]
    table = pa.Table.from_pydict({
        "key": [k for k, _ in encoded], "value": [v for _, v in encoded], "topic": ["__consumer_offsets"] * 2,
        "partition": [0, 0], "offset": [0, 1], "timestamp": [1_000_000, 1_001_000]}, schema=_source_rows([], b"",
                                                                                                       "hb", 0).schema)
    tables, _ = step.process(table, wall_ms=2000)
    kinds = [(r["kind"], r["offset"]) for r in tables["group_events"].to_pylist()]
    assert kinds == [("GroupCreated", 0), ("OffsetDeleted", 1)], kinds
