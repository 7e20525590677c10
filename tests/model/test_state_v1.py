"""Version-1 checkpoints (positional tuples, ``streaming/model/state_v1.py``) migrated as they are read.

``tests/data/state-v1/`` holds states the positional format wrote (the code before the named format), each
``<recording>.<sample>.<shard>.bin`` taken by the job's own step after that sample of a recording, and
``synthetic_share_streams.model.bin``: a model alone (share, streams and consumer groups, which no recording has).
Restoring each must give the state a run that never stopped has at that point, and the same verdicts after it.
Costs about 10 s (one replay per recording, one more per restore point).
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from pathlib import Path

import pytest

from streaming.job.step import ShardStep, StepConfig
from streaming.model import state_format
from streaming.model.shard import GroupCoordinatorShard
from streaming.offline.recording import load_recording
from streaming.offline.recording.replay import replay_events, timeline_from_events
from tests.conftest import DATA, UNPACKED, captures_dir, unpack

from .synthetic_shard import share_and_streams_shard

V1 = DATA / "state-v1"


def _fixtures() -> dict[str, dict[int, dict[int, bytes]]]:
    """recording -> sample -> shard -> version-1 step state."""
    out: dict[str, dict[int, dict[int, bytes]]] = defaultdict(lambda: defaultdict(dict))
    for f in sorted(V1.glob("*.bin")):
        name, *rest = f.name.split(".")
        if len(rest) == 3:
            out[name][int(rest[0])][int(rest[1])] = f.read_bytes()
    return out


FIXTURES = _fixtures()


def _recording_dir(name: str) -> Path:
    for root in (captures_dir() / "conformance" / "verdicts", unpack(DATA / "outages.tar.zst", UNPACKED / "outages")):
        if (root / name).is_dir():
            return root / name
    pytest.fail(f"no recording {name} for the state fixture {V1}/{name}.*")


def test_there_are_version_1_states_to_restore():
    assert len(FIXTURES) >= 5 and all(s[:4] == b"GSS1" for r in FIXTURES.values() for p in r.values()
                                      for s in p.values())


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_version_1_checkpoint_restores_the_state_and_the_verdicts_of_a_run_that_never_stopped(name):
    recording = load_recording(_recording_dir(name))
    cfg = StepConfig()
    points = FIXTURES[name]
    live: dict[int, dict[int, dict]] = {}

    def keep(seq, steps):
        if seq in points:
            # a copy: ``to_state`` shares the model's containers, which the run goes on changing
            live[seq] = pickle.loads(pickle.dumps({p: s.model.to_state() for p, s in steps.items()}))

    expected = timeline_from_events(replay_events(recording, cfg, after_sample=keep))
    for seq, states in points.items():
        for p, blob in states.items():
            restored = ShardStep(p, cfg, state=blob)
            assert _comparable(restored.model.to_state()) == _comparable(live[seq][p]), \
                f"{name} shard {p} after sample {seq}"

        def restart(at, steps, seq=seq, states=states):
            if at == seq:
                steps.update({p: ShardStep(p, cfg, state=blob) for p, blob in states.items()})

        assert timeline_from_events(replay_events(recording, cfg, after_sample=restart)) == expected
    assert expected, "the recording gave no verdicts: nothing was compared"


def _comparable(state: dict) -> dict:
    """``state`` without the reason of an active storm: the release that wrote these states kept the reason a
    storm was called with, where a storm's reason now follows its count (rewritten at its next rebalance)."""
    for judgement in state["judge"]["groups"].values():
        if judgement["storm_since"] is not None:
            judgement["counters"]["last_reason"] = "(an active storm's)"
    return state


def test_a_version_1_model_of_every_group_type_is_migrated_and_written_back_in_the_current_version():
    expected = share_and_streams_shard().to_state()
    migrated = GroupCoordinatorShard.from_bytes((V1 / "synthetic_share_streams.model.bin").read_bytes())
    assert migrated.to_state() == expected
    again = migrated.to_bytes()
    assert again[:4] == state_format.MAGIC
    assert GroupCoordinatorShard.from_bytes(again).to_state() == expected
