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
from streaming.model import state_format, state_v1
from streaming.model.availability import AvailabilityTracker
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
            assert _comparable(restored.model.to_state(), name) == _comparable(live[seq][p], name), \
                f"{name} shard {p} after sample {seq}"

        def restart(at, steps, seq=seq, states=states):
            if at == seq:
                steps.update({p: ShardStep(p, cfg, state=blob) for p, blob in states.items()})

        assert timeline_from_events(replay_events(recording, cfg, after_sample=restart)) == expected
    assert expected, "the recording gave no verdicts: nothing was compared"


# Groups whose judgement a later rule changed, so the state the release that wrote these files kept for them is not
# the one a run judges now: young members stopping a whole group are a flap only once the group comes back (the
# crash loop's storm is called a second later, at its first return; the static group's last member leaving is a
# scale-in). Their verdicts after a restart are still compared, with everything else.
JUDGED_ANEW = {"outage_freeze": {"crashloop", "ok-static"}}


def _comparable(state: dict, recording: str = "") -> dict:
    """``state`` without the reason of an active storm: the release that wrote these states kept the reason a
    storm was called with, where a storm's reason now follows its count (rewritten at its next rebalance); and
    without the judgements of :data:`JUDGED_ANEW`."""
    groups = state["judge"]["groups"]
    for gid in JUDGED_ANEW.get(recording, ()):
        groups.pop(gid, None)
    for judgement in groups.values():
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


# ---- state_v1's own readers, on the version-1 tuples the fixtures hold --------------------------------------------


def _v1_model(path: Path) -> tuple:
    """The positional model tuple of a version-1 step or model blob."""
    return state_format.decode(path.read_bytes()).v1_shard


def _step_fixtures() -> list[Path]:
    return sorted(p for p in V1.glob("*.bin") if len(p.name.split(".")) == 4)


@pytest.mark.parametrize("path", _step_fixtures(), ids=lambda p: p.name)
def test_migrate_keeps_the_shard_its_groups_and_its_position(path):
    """The file is named ``<recording>.<sample>.<shard>.bin``: the migrated state is that shard's, holds the same
    groups by id and type as the tuple, and loads as a shard that reads back the same position."""
    t = _v1_model(path)
    migrated = state_v1.migrate(t)
    assert migrated["partition"] == int(path.name.split(".")[2])
    assert [(g["type"], g["group"]["group_id"]) for g in migrated["groups"]] == [(gtype, gt[0]) for gtype, gt in t[4]]
    assert migrated["topic_names"] == dict(t[7])
    shard = GroupCoordinatorShard.from_state(migrated)
    assert (shard.partition, shard.last_offset, shard.last_timestamp, shard.now_ms) == tuple(t[:4])
    assert set(shard.groups) == {gt[0] for _, gt in t[4]}


def _with_field(t: tuple, index: int, value) -> tuple:
    return (*t[:index], value, *t[index + 1:])


def test_a_state_from_before_outages_were_tracked_starts_with_a_fresh_tracker():
    t = _v1_model(_step_fixtures()[0])
    fresh = AvailabilityTracker(1, 1).to_state()
    assert len(t) == 14 and t[13], "the fixture should carry an availability tuple to drop"
    assert state_v1.migrate(t[:13])["availability"] == fresh  # the tuple before the field existed
    assert state_v1.migrate(_with_field(t, 13, ()))["availability"] == fresh  # an empty one: nothing tracked yet
    assert state_v1.migrate(t)["availability"] != fresh


def test_an_availability_tuple_without_the_outage_count_counts_none():
    seven = ("away", 1_000, -1, ("g1", "g2"), 1_000, -1, 500)
    without = state_v1.migrate(_with_field(_v1_model(_step_fixtures()[0]), 13, seven))["availability"]
    assert without == {"state": "away", "since_ms": 1_000, "back_ms": -1, "groups": ("g1", "g2"),
                       "last_since_ms": 1_000, "last_back_ms": -1, "interval_ms": 500, "outages": 0}
    counted = state_v1.migrate(_with_field(_v1_model(_step_fixtures()[0]), 13, (*seven, 3)))["availability"]
    assert counted == {**without, "outages": 3}


def test_an_end_offset_history_from_before_quiet_tails_has_no_quiet_tail():
    ((_, history), *_) = _v1_model(_step_fixtures()[0])[6]
    assert len(history) == 9
    newer = state_v1._end_offsets((*history[:8], 12_345)).to_state()
    older = state_v1._end_offsets(history[:8]).to_state()
    assert newer["quiet_from"] == 12_345 and older["quiet_from"] == -1  # -1: no quiet tail known
    assert {k: v for k, v in older.items() if k != "quiet_from"} == {k: v for k, v in newer.items()
                                                                       if k != "quiet_from"}
    assert (older["hwm"], older["lso"], older["lwm"]) == tuple(history[:3])


def test_offsets_from_before_statuses_were_kept_start_as_never_evaluated():
    """Committed offsets are 8 bytes per partition; the status kept beside them is one byte per partition, 0xff
    for one never evaluated."""
    store = _v1_model(V1 / "kip848_storm_and_rolling.50.7.bin")[5]
    (_, ((topic, offsets), *_)), *_ = store[2]
    assert len(offsets) == 11
    partitions = len(offsets[0]) // 8
    older, newer = state_v1._topic_offsets(offsets[:10]), state_v1._topic_offsets(offsets)
    assert bytes(older.status) == b"\xff" * partitions and bytes(newer.status) == offsets[10]
    older.status[:] = newer.status
    assert older.to_state() == newer.to_state()


def test_a_judge_without_its_version_tag_starts_empty():
    """Verdicts judged before the ``judge1`` layout are not read: the judge starts with no group."""
    path = V1 / "kip848_storm_and_rolling.50.7.bin"
    t = _v1_model(path)
    assert t[8][0] == "judge1" and t[8][1], "the fixture should hold a judged group"
    groups = state_v1.migrate(t)["judge"]["groups"]
    assert set(groups) == {g for g, _ in t[8][1]}
    assert state_v1.migrate(_with_field(t, 8, ()))["judge"] == {"groups": {}}
    assert state_v1.migrate(_with_field(t, 8, ("judge0", t[8][1])))["judge"] == {"groups": {}}


def test_members_judged_before_wholesale_replacements_were_judged_are_not_replaced():
    """A member entry of two fields (joined ms, identity) gains the third, False, as the newer layout has it."""
    t = _v1_model(V1 / "kip848_storm_and_rolling.50.7.bin")
    (group, judgement), *_ = t[8][1]
    assert judgement[0], "the fixture should judge members"
    short = ((mid, entry[:2]) for mid, entry in judgement[0])
    migrated = state_v1._judgement((tuple(short), *judgement[1:]))
    assert migrated.members == {mid: (*entry[:2], False) for mid, entry in judgement[0]}
    assert state_v1._judgement(judgement).members == {mid: tuple(entry) for mid, entry in judgement[0]}
