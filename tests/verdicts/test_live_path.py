"""The live path: the streaming job itself (groupscope_kafka source over a Kafka-protocol broker, local Spark,
``applyInPandasWithState``, Delta sink) turns a real Kafka 4.0 recording into the same verdict timeline as the
offline replay of that recording (:func:`streaming.offline.recording.replay_recording`).

The recording's ``__consumer_offsets`` records are produced into librdkafka's mock cluster at their own partitions,
offsets and timestamps, one end-offset sample at a time, each followed by one heartbeat carrying the sample, and the
job is held between samples so each of its micro-batches is exactly one replay batch (see ``live_harness``). The
``group_events`` table the job wrote to Delta is read back and turned into a timeline with the same function the
replay uses; the two must be equal entry by entry.
"""

from __future__ import annotations

import dataclasses
import os
import shutil

import pytest
from deltalake import DeltaTable

from streaming.offline.recording import Recording, load_recording, replay_recording
from streaming.offline.recording.replay import replay_events, timeline_from_events
from streaming.spark.job import step_config
from streaming.job.step import StepConfig
from tests.conftest import captures_dir

from .live_harness import live_settings, play_live, sample_batches, timeline_diff

pytestmark = pytest.mark.spark

SCENARIOS = ["stalled_consumer", "storm_crashloop"]
# What each recording's timeline must contain for the comparison to mean something (the verdict kinds the brief of
# this test is about); whether they are right is tests/verdicts/test_recordings.py's business.
COVERS = {"stalled_consumer": {"STALL", "STOP", "OK", "formation"}, "storm_crashloop": {"storm", "OK"}}
#: The live run plays every third end-offset sample of a recording (and its last): each micro-batch costs Spark's
#: fixed per-batch time, and what the test compares does not depend on the heartbeat cadence. The replay it is
#: compared with is given the same samples, so each live batch is still exactly one replay batch.
SAMPLE_STRIDE = 3


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin", "java"))))


def recording_path(name: str):
    path = captures_dir() / "conformance" / "verdicts" / name
    if not path.is_dir():
        pytest.fail(f"recording {name} not found at {path}")
    return path


def played(recording: Recording) -> Recording:
    """The recording with the samples the live run plays (:data:`SAMPLE_STRIDE`); its records are all kept, each
    falling into the first kept sample at or after its timestamp."""
    kept = recording.samples[::SAMPLE_STRIDE]
    if kept[-1] != recording.samples[-1]:
        kept = (*kept, recording.samples[-1])
    return dataclasses.replace(recording, samples=tuple(kept))


def test_played_samples_keep_every_record_and_the_last_sample():
    rec = load_recording(recording_path("stalled_consumer"))
    thin = played(rec)
    last = len(rec.samples) - 1
    assert list(thin.samples) == [s for i, s in enumerate(rec.samples) if i % SAMPLE_STRIDE == 0 or i == last]
    assert len(thin.samples) < len(rec.samples)
    fed = [r for _, records in sample_batches(thin) for r in records]
    assert sorted(fed, key=lambda r: (r.partition, r.offset)) == sorted(
        [r for _, records in sample_batches(rec) for r in records], key=lambda r: (r.partition, r.offset))


def test_live_settings_give_the_replay_step_config(tmp_path):
    """The live run uses exactly the step and model configuration the replay uses (``StepConfig()``)."""
    assert step_config(live_settings("127.0.0.1:9", tmp_path)) == StepConfig()


def test_a_dropped_sample_changes_the_timeline():
    """The equality is not vacuous: one heartbeat fewer (its records folded into the next batch) moves verdicts, and
    the diff says where. Replay only, no Spark."""
    rec = load_recording(recording_path("stalled_consumer"))
    want = replay_recording(rec)
    stall = next(e.t_ms for e in want if e.verdict == "STALL")
    dropped = dataclasses.replace(rec, samples=tuple(s for s in rec.samples if s.t_ms != stall))
    got = replay_recording(dropped)
    assert got != want
    diff = timeline_diff(want, got)
    assert f"replay: {stall} stl-stall stl-orders:2 OK -> STALL" in diff, diff


def test_live_batches_are_the_replay_batches():
    """The feed cuts the recording as ``replay_events`` does: one batch per sample, in order; every record once, in
    offset order per partition, never before its own timestamp."""
    rec = load_recording(recording_path("stalled_consumer"))
    plan = sample_batches(rec)
    assert [s for s, _ in plan] == list(rec.samples)
    fed = [r for _, records in plan for r in records]
    assert sorted(fed, key=lambda r: (r.partition, r.offset)) == list(rec.records)
    for sample, records in plan:
        assert all(r.timestamp <= sample.t_ms for r in records)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_live_job_timeline_equals_replay(scenario, tmp_path):
    if not _java_available():
        pytest.skip("Java is not installed (no java on PATH, no JAVA_HOME): local Spark cannot start")
    rec = played(load_recording(recording_path(scenario)))
    want = replay_recording(rec)
    missing = COVERS[scenario] - {e.verdict for e in want}
    assert not missing, f"the replay of {scenario} no longer reports {sorted(missing)}: nothing to compare them on"
    settings = live_settings("127.0.0.1:9", tmp_path)
    assert step_config(settings) == StepConfig(), "the live job must judge with the replay's configuration"

    run = play_live(rec, tmp_path)
    assert len(run.batches) == len(rec.samples)

    rows = DeltaTable(str(run.delta_path / "group_events")).to_pyarrow_table().to_pylist()
    got = timeline_from_events(rows)
    print(f"\n== {scenario}: {len(rec.samples)} samples, {len(rec.records)} records -> {len(run.batches)} "
          f"micro-batches in {run.seconds:.0f} s; {len(rows)} group_events rows; timeline {len(got)} entries "
          f"(replay {len(want)})")
    assert got == want, f"{scenario}: the live job's timeline differs from the replay:\n{timeline_diff(want, got)}"
    # Beyond verdicts: every event row (rebalances, members, offsets deleted, ...) is the replay's, field by field.
    key = lambda r: (r["shard"], r["offset"], r["kind"], r["detail"])  # noqa: E731
    replayed = sorted(replay_events(rec), key=key)
    live = sorted(rows, key=key)
    assert [key(r) for r in live] == [key(r) for r in replayed]
    assert live == replayed
