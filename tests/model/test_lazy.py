"""Objects restored on first use (``streaming/model/lazy.py``): a group or judgement nothing used is saved as the
fields it was restored from; the first read or write builds it, and nothing a batch does to it is lost."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass

import pytest

from streaming.model import events as ev
from streaming.model.classic import ClassicGroup
from streaming.model.consumer import ConsumerGroup
from streaming.model.lazy import lazy_variant
from streaming.model.shard import GroupCoordinatorShard
from streaming.model.states import GroupType
from streaming.model.verdicts import RebalanceJudge

from .synthetic_shard import share_and_streams_shard

T0 = 1_800_000_000_000


def _restored(shard: GroupCoordinatorShard) -> GroupCoordinatorShard:
    return GroupCoordinatorShard.from_state(shard.to_state())


def test_a_group_nothing_used_is_saved_as_the_fields_it_was_restored_from():
    shard = share_and_streams_shard()
    back = _restored(shard)
    saved = {entry["group"]["group_id"]: entry["group"] for entry in back.to_state()["groups"]}
    for gid, g in back.groups.items():
        assert type(g).__name__.startswith("Lazy") and g.group_id == gid  # the id is read without building
        assert g.saved_state() is saved[gid]  # the very fields it was restored from, not built again
    assert back.to_state()["groups"] == shard.to_state()["groups"]


def test_the_first_read_builds_the_group_and_it_is_then_the_plain_class():
    shard = share_and_streams_shard()
    back = _restored(shard)
    for gid, original in shard.groups.items():
        g = back.groups[gid]
        assert g.state_name == original.state_name  # a property reading a field not restored yet
        assert type(g) is type(original) and g == original
        assert g.saved_state() == original.to_state()


def test_a_write_before_any_read_builds_first_and_is_kept():
    g = ClassicGroup("g", generation=3, rebalances=2)
    lazy = lazy_variant(ClassicGroup, lambda s: (("group_id", s["group_id"]),)).restore(g.to_state())
    lazy.rebalances = 7  # a write, no read: the other fields must still come from the saved ones
    assert type(lazy) is ClassicGroup
    assert lazy.saved_state() == ClassicGroup("g", generation=3, rebalances=7).to_state()


def test_the_heartbeat_tick_builds_no_quiet_group_and_gives_the_same_events():
    shard = share_and_streams_shard()
    now = max(shard.now_ms, 0) + 3_600_000
    back = _restored(shard)
    quiet = [gid for gid, g in shard.groups.items() if not isinstance(g, ConsumerGroup) or g.silence_due_ms is None]
    assert quiet
    shard.apply_heartbeat(now, {})
    back.apply_heartbeat(now, {})
    assert back.drain_events() == shard.drain_events()
    assert all(type(back.groups[gid]).__name__.startswith("Lazy") for gid in quiet)
    assert back.to_state() == shard.to_state()


def test_a_judgement_with_an_open_episode_is_built_by_the_tick_and_settles_alike():
    judge = RebalanceJudge()
    judge.baseline("g", 0, T0, {"a-0": "a@h", "b-0": "b@h"})
    judge.baseline("quiet", 0, T0, {"q-0": "q@h"})
    judge.tick(T0 + 600_000)  # both groups formed and settled: nothing open
    assert all(j.episode is None and j.storm_since is None for j in judge.groups.values())
    rb = ev.Rebalance("g", 1, T0 + 601_000, GroupType.CLASSIC, 2, 1, (ev.RebalanceCause.MEMBER_LEFT,), 2, 1, None,
                      None, None, (), ("b-0",))
    judge.observe(rb, {"a-0": "a@h", "b-0": "b@h"}, {"a-0": "a@h"})
    restored = RebalanceJudge()
    restored.load_state(judge.to_state())
    assert restored.groups["g"].episode is not None  # an open episode is built when read
    assert type(restored.groups["quiet"]).__name__.startswith("Lazy")
    later = T0 + 3_600_000
    assert restored.tick(later) == judge.tick(later)
    assert type(restored.groups["quiet"]).__name__.startswith("Lazy")  # the tick built nothing it did not need
    assert restored.to_state() == judge.to_state()


def test_only_a_restorable_class_gets_a_lazy_variant():
    @dataclass(slots=True)
    class Plain:
        x: int = 0

    with pytest.raises(TypeError, match="Restorable"):
        lazy_variant(Plain)


def test_a_restored_group_pickles_and_copies_as_the_plain_group():
    shard = share_and_streams_shard()
    for gid, original in shard.groups.items():
        for copied in (pickle.loads(pickle.dumps(_restored(shard).groups[gid])),
                       copy.deepcopy(_restored(shard).groups[gid])):
            assert type(copied) is type(original) and copied == original
