"""Replaying a recording through the job's own step (``streaming.offline.recording.replay``): one micro-batch per
end-offset sample and shard, holding the records written up to the sample's time, and the verdict timeline read out
of the ``group_events`` rows those batches return."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.step import StepConfig
from streaming.offline.recording import load_recording
from streaming.offline.recording.load import EndOffsetSample, OffsetsRecord, Recording
from streaming.offline.recording.replay import TimelineEntry, replay_batches, timeline_from_events

T0 = 1_767_225_600_000


# ---- the timeline out of group_events rows -----------------------------------------------------------------------

def _row(t_ms: int, kind: str, group: str = "g", **kw) -> dict:
    base = {"event_time": dt.datetime.fromtimestamp(t_ms / 1000, dt.timezone.utc), "shard": 0, "offset": 0,
            "kind": kind, "group_id": group, "topic": None, "partition": None, "old": None, "new": None,
            "detail": None}
    return base | kw


def test_status_changes_are_partition_entries_with_their_old_status_as_previous():
    rows = [_row(T0, "StatusChanged", topic="t", partition=1, old="OK", new="STALL",
                 detail=json.dumps({"reason": "no commit for 5 min"}))]
    assert timeline_from_events(rows) == [TimelineEntry(T0, "g", "partition", "t", 1, "STALL", "OK",
                                                        "no commit for 5 min")]


def test_a_rebalance_verdicts_previous_is_the_groups_verdict_before_it():
    rows = [_row(T0 + 2000, "RebalanceStorm", detail=json.dumps({"reason": "5 rebalances"})),
            _row(T0 + 1000, "GroupFormed"), _row(T0 + 1500, "GroupFormed", group="h"),
            _row(T0 + 3000, "StormEnded")]
    got = [(e.t_ms - T0, e.group, e.verdict, e.previous, e.reason) for e in timeline_from_events(rows)]
    assert got == [(1000, "g", "formation", None, ""), (1500, "h", "formation", None, ""),
                   (2000, "g", "storm", "formation", "5 rebalances"), (3000, "g", "storm_ended", "storm", "")]


def test_kafka_unavailable_is_a_cluster_entry_and_other_kinds_are_not_verdicts():
    rows = [_row(T0, "MemberJoined"), _row(T0, "Rebalance"),
            _row(T0 + 5, "KafkaUnavailable", group="", detail=json.dumps({"reason": "no heartbeat for 60 s"}))]
    assert timeline_from_events(rows) == [TimelineEntry(T0 + 5, "", "cluster", None, None, "kafka_unavailable", None,
                                                        "no heartbeat for 60 s")]


def test_rows_at_the_same_time_are_ordered_by_shard_and_offset_and_times_may_be_epoch_ms():
    rows = [_row(T0, "GroupFormed", group="b", shard=2), _row(T0, "GroupFormed", group="a", shard=1, offset=9),
            {**_row(T0, "GroupFormed", group="c", shard=1, offset=3), "event_time": T0}]
    assert [e.group for e in timeline_from_events(rows)] == ["c", "a", "b"]


def test_an_entry_is_one_json_line():
    entry = TimelineEntry(T0, "g", "partition", "t", 0, "OK", None, "fine")
    assert json.loads(entry.to_json()) == {"t_ms": T0, "group": "g", "scope": "partition", "topic": "t",
                                           "partition": 0, "verdict": "OK", "previous": None, "reason": "fine"}
    assert "\n" not in entry.to_json() and ", " not in entry.to_json()


# ---- the micro-batches -------------------------------------------------------------------------------------------

def _commit(partition: int, offset: int, t_ms: int, committed: int) -> OffsetsRecord:
    key, value = encode_record(new_offset_commit("g", "orders", 0, committed, commit_timestamp=t_ms))
    return OffsetsRecord(partition, offset, t_ms, key, value)


def _recording() -> Recording:
    """Shard 1: commits at T0+1 s and T0+6 s; shard 4: one at T0+2 s. Samples at T0+5 s and T0+10 s."""
    ends = {("orders", 0): (100, 100, 0)}
    return Recording("hand-made", (_commit(1, 0, T0 + 1000, 10), _commit(1, 1, T0 + 6000, 20),
                                   _commit(4, 0, T0 + 2000, 30)),
                     (EndOffsetSample(T0 + 5000, ends), EndOffsetSample(T0 + 10_000, ends)))


def test_each_sample_is_a_batch_of_every_shard_with_the_records_written_up_to_it():
    batches = list(replay_batches(_recording()))
    assert [(t - T0, shard) for t, shard, _ in batches] == [(5000, 1), (5000, 4), (10_000, 1), (10_000, 4)]
    commits = [[] if "commits" not in tables else tables["commits"].column("committed_offset").to_pylist()
               for _, _, tables in batches]
    assert commits == [[10], [30], [20], []]


def test_after_sample_sees_every_shards_step_once_per_sample():
    seen: list[tuple[int, list[int]]] = []
    list(replay_batches(_recording(), after_sample=lambda seq, steps: seen.append((seq, sorted(steps)))))
    assert seen == [(0, [1, 4]), (1, [1, 4])]


@pytest.fixture(scope="module")
def storm(captures) -> Recording:
    """The first 50 s of a real crash-looping group (a sample a second): it forms, storms at 30 s, and its
    partitions change status several times."""
    whole = load_recording(captures / "conformance" / "verdicts" / "storm_crashloop")
    samples = whole.samples[:50]
    return Recording(whole.name, tuple(r for r in whole.records if r.timestamp <= samples[-1].t_ms), samples)


def test_restarting_from_saved_state_changes_no_event_of_a_real_recording(storm):
    """The job restarts from its checkpoint; rebuilding every step from its state every third sample must give the
    very rows a run without restarts gives."""
    def events(**kw):
        return [row for _, _, tables in replay_batches(storm, StepConfig(), **kw)
                for row in (tables["group_events"].to_pylist() if "group_events" in tables else [])]

    plain = events()
    assert {"GroupFormed", "RebalanceStorm"} <= {r["kind"] for r in plain}
    assert sum(r["kind"] == "StatusChanged" for r in plain) > 10
    assert events(restart_every=3) == plain

