"""``groupscope backfill`` on real broker files: the segment files of Kafka 4.0 recordings go through the real job
(local Spark, the segment source, the shard steps, the Delta writers), run as a user runs it, in a subprocess.

Oracles that do not share the job's path: the recording's own list of what the broker wrote (``records.jsonl``,
with each batch's header) for the commits table, row for row; and the offline segment replay (Kafka's loader
order, transactions settled by their markers) for each group's state, generation and members.
"""

from __future__ import annotations

import json
import struct

import pytest

from streaming.offline.segment_replay import replay_segments
from streaming.sinks.delta import DeltaSink
from tests.cli_helpers import run_cli

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Two partitions, a KIP-848 group beside classic ones, rebalances and offset rewinds: one recording keeps it quick.
RECORDINGS = ["kip848_storm_and_rolling"]


@pytest.mark.parametrize("name", RECORDINGS)
def test_backfill_writes_what_the_broker_holds(captures, tmp_path, name):
    recording = captures / "conformance" / "verdicts" / name
    segments = recording / "segments"
    done = run_cli("backfill", str(segments), "--delta-path", str(tmp_path / "delta"), "--checkpoint",
                   str(tmp_path / "checkpoint"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "groupscope backfill:" in done.stderr and "Traceback" not in done.stderr

    # Every offset commit and tombstone the broker wrote, once, with the committed offset it holds.
    expected = {}
    for line in (recording / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["visible_read_committed"] and r["key_version"] in (0, 1):  # as the broker's read_committed fetch
            value = None if r["tombstone"] else struct.unpack_from(">q", bytes.fromhex(r["value_hex"]), 2)[0]
            expected[(r["partition"], r["offset"])] = value
    delta = DeltaSink(str(tmp_path / "delta"))
    commits = delta.read("commits").to_pylist()
    got = {(c["shard"], c["offset"]): c["committed_offset"] for c in commits}
    assert len(got) == len(commits), "a commit row was written twice"
    assert set(got) == set(expected)
    assert got == expected

    # Each group as the offline replay of the same files has it.
    model, _ = replay_segments(segments)
    oracle = {g.group_id: g for s in model.snapshot() for g in s.groups}
    groups = {g["group_id"]: g for g in delta.read("groups").to_pylist()}
    assert set(groups) == set(oracle)
    for gid, snap in oracle.items():
        row = groups[gid]
        assert (row["state"], row["member_count"], row["generation"]) == \
            (snap.state, len(snap.members), snap.generation), gid

    # Segment files carry no end offsets: lag is unknown, never a reassuring 0.
    assert all(g["sum_lag"] is None for g in groups.values() if g["partition_count"]), groups

    # A second run with the same checkpoint finds nothing new and writes nothing twice.
    again = run_cli("backfill", str(segments), "--delta-path", str(tmp_path / "delta"), "--checkpoint",
                    str(tmp_path / "checkpoint"), timeout=300)
    assert again.returncode == 0, again.stderr
    assert delta.read("commits").num_rows == len(commits)


def test_backfill_says_what_is_wrong_in_one_line(tmp_path):
    done = run_cli("backfill", str(tmp_path / "missing"), "--delta-path", str(tmp_path / "d"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"groupscope backfill: {tmp_path / 'missing'}: no such file or directory"]
