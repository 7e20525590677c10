"""The checkpointed state format (``streaming/model/state_format.py``): named fields under a version, version-1
checkpoints (positional tuples) migrated as they are read, newer versions refused with one line.

``tests/data/state-v1/`` holds states the positional format wrote (the code before the named format), each
``<recording>.<sample>.<shard>.bin`` taken by the job's own step after that sample of a recording, and
``synthetic_share_streams.model.bin``: a model alone (share, streams and consumer groups, which no recording has).
Restoring each must give the state a run that never stopped has at that point, and the same verdicts after it.
Costs about 10 s (one replay per recording, one more per restore point).
"""

from __future__ import annotations

import pickle
import pickletools
from collections import defaultdict
from pathlib import Path

import cramjam
import pytest

from streaming.job.step import ShardStep, StepConfig
from streaming.model import state_format
from streaming.model.consumer import ConsumerGroup, ConsumerMember
from streaming.model.rebalance import MemberView
from streaming.model.shard import GroupCoordinatorShard
from streaming.model.share import ShareGroup, ShareMember
from streaming.model.states import ConsumerGroupState, MemberLifecycle, ShareGroupState, StreamsGroupState
from streaming.model.streams import StreamsGroup, StreamsMember
from streaming.offline.recording import load_recording
from streaming.offline.recording.replay import replay_events, timeline_from_events
from tests.conftest import DATA, UNPACKED, captures_dir, unpack

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


def share_and_streams_shard() -> GroupCoordinatorShard:
    """The model ``synthetic_share_streams.model.bin`` was written from: a share group and a streams group with
    members, a consumer group mid-rebalance with a silent member, offsets with a pending transactional commit."""
    tid = bytes(range(16))
    s = GroupCoordinatorShard(3)
    sh = ShareGroup("sh", 4, 4, state=ShareGroupState.STABLE, rebalances=2, last_rebalance_ts=1_700_000_000_000)
    sh.members["s1"] = ShareMember("s1", MemberLifecycle.ACTIVE, None, "c1", "/h1", ("t",), 4, 3, 0, {tid: (0, 1)})
    sh.target["s1"] = {tid: (0, 1)}
    sh.subscription_metadata["t"] = (tid, 2)
    st = StreamsGroup("st", 2, 2, 1, state=StreamsGroupState.STABLE, rebalances=1,
                      last_rebalance_ts=1_700_000_001_000)
    st.members["x1"] = StreamsMember("x1", MemberLifecycle.ACTIVE, "inst", None, "app", "/h2", "proc", 1, 2, 1, 1,
                                     (("0", 0), ("0", 1)))
    st.target["x1"] = (("0", 0), ("0", 1))
    cg = ConsumerGroup("cg", 5, 4, 77, state=ConsumerGroupState.ASSIGNING, rebalances=3,
                       last_rebalance_ts=1_700_000_002_000)
    cg.members["m1"] = ConsumerMember("m1", MemberLifecycle.ACTIVE, None, "r", "cl", "/h3", ("t",), "", 300_000,
                                      "uniform", None, (), 4, 3, 0, {tid: (0,)}, {tid: (1,)}, 1_700_000_002_000,
                                      1_700_000_002_500)
    cg.regexes["t.*"] = ("t",)
    cg.epoch_views = {"m1": MemberView("m1", None, "cl", "/h3", frozenset({"t"}), None)}
    cg.epoch_target = {"m1": {tid: (0, 1)}}
    cg.epoch_partitions = {"t": 2}
    cg.epoch_ts, cg.pending_epoch = 1_700_000_001_500, (5, 4, 17, 1_700_000_002_000)
    cg.pending_views = dict(cg.epoch_views)
    cg.departed_static = ("inst-9", "m9")
    cg.departed_silent = {"m8": 1_700_000_001_800}
    cg.silence_due_ms = 1_700_000_022_500
    for g in (sh, st, cg):
        s.groups[g.group_id] = g
    s.replay_offset_commit(10, "cg", "t", 0, 42, 1, "meta", 1_700_000_002_100, 1_700_000_002_100)
    s.replay_offset_commit(11, "cg", "t", 1, 40, 1, "", 1_700_000_002_200, 1_700_000_002_200, producer_id=7,
                           transactional=True)
    s.apply_heartbeat(1_700_000_003_000, {("t", 0): (50, 50, 0), ("t", 1): (45, -1, 3)})
    s.topic_names[tid] = "t"
    return s


def test_a_version_1_model_of_every_group_type_is_migrated_and_written_back_in_the_current_version():
    expected = share_and_streams_shard().to_state()
    migrated = GroupCoordinatorShard.from_bytes((V1 / "synthetic_share_streams.model.bin").read_bytes())
    assert migrated.to_state() == expected
    again = migrated.to_bytes()
    assert again[:4] == state_format.MAGIC
    assert GroupCoordinatorShard.from_bytes(again).to_state() == expected


def test_a_step_state_is_pickled_and_compressed_once_with_named_fields():
    step = ShardStep(3)
    step.model = share_and_streams_shard()
    step.meta.last_offset = 11
    blob = step.state()
    doc = pickle.loads(cramjam.zstd.decompress(blob[4:]))
    assert (doc["format"], doc["version"]) == ("groupscope-state", state_format.VERSION)
    assert isinstance(doc["shard"]["offsets"], dict) and doc["step"]["last_offset"] == 11
    restored = ShardStep(3, state=blob)
    assert restored.meta == step.meta and restored.model.to_state() == step.model.to_state()
    # builtins only: a state that named a class (an enum member, a dataclass) would break when the class moves
    classes = [op.name for op, *_ in pickletools.genops(pickle.dumps(doc, protocol=5)) if "GLOBAL" in op.name]
    assert not classes


def _with_version(version) -> bytes:
    doc = {"format": "groupscope-state", "version": version, "shard": {}, "step": None}
    return state_format.MAGIC + bytes(cramjam.zstd.compress(pickle.dumps(doc), 3))


@pytest.mark.parametrize("blob", [_with_version(3), b"GSV3" + b"\x00" * 8], ids=["version field", "magic"])
def test_a_newer_state_is_refused_with_one_line_saying_what_to_do(blob):
    with pytest.raises(state_format.StateFormatError) as err:
        ShardStep(0, state=blob)
    message = str(err.value)
    assert "\n" not in message and "version 3" in message and "fresh checkpoint" in message


@pytest.mark.parametrize("blob", [b"nope", b"GSV2not-zstd", b"GSM1not-zlib"])
def test_bytes_that_are_no_state_are_refused_with_one_line(blob):
    with pytest.raises(ValueError) as err:
        GroupCoordinatorShard.from_bytes(blob)
    assert "\n" not in str(err.value) and "groupscope state" in str(err.value)


def test_a_field_added_after_the_state_was_written_takes_its_default():
    state = share_and_streams_shard().to_state()
    member = next(g for g in state["groups"] if g["type"] == "CONSUMER")["group"]["members"][0]
    del member["missed_bump_ms"]  # as if the field had been added after this state was written
    member["a_field_since_removed"] = 1
    restored = GroupCoordinatorShard.from_state(state)
    assert restored.groups["cg"].members["m1"].missed_bump_ms is None
