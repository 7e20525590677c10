"""Reads version 1 of the checkpointed state: positional tuples, the layout every release before the named format
(:mod:`.state_format`) wrote. A checkpoint of such a release is migrated as it is read; the next write is the
current version. This is the only place that knows the old positions, and the layouts version 1 itself grew
through (a tuple shorter than the newest version-1 layout: the fields added later take their defaults).
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from . import events as ev
from .availability import AvailabilityTracker
from .classic import ClassicGroup, ClassicMember
from .consumer import ConsumerGroup, ConsumerMember
from .lag import EndOffsetHistory
from .offsets import OffsetStore, TopicOffsets
from .rebalance import MemberView
from .share import ShareGroup, ShareMember
from .states import (ClassicGroupState, ConsumerGroupState, GroupType, KafkaAvailability, MemberLifecycle,
                     ShareGroupState, StreamsGroupState)
from .streams import StreamsGroup, StreamsMember
from .verdicts import RebalanceJudge, _Episode, _GroupJudgement

__all__ = ["migrate"]


def migrate(t: tuple) -> dict[str, Any]:
    """The current version's named shard state (``GroupCoordinatorShard.to_state``) of a version-1 model tuple."""
    judge = RebalanceJudge()
    _judge(judge, t[8])  # t[9] held non-OK statuses before they moved into the offset store
    availability = AvailabilityTracker(1, 1)  # the gap and rejoin window are settings, not state
    if len(t) > 13:  # states written before Kafka's outages were tracked have none
        _availability(availability, t[13])
    return {
        "partition": t[0], "last_offset": t[1], "last_timestamp": t[2], "now_ms": t[3],
        "groups": [{"type": gtype, "group": _GROUPS[GroupType(gtype)](gt).to_state()} for gtype, gt in t[4]],
        "offsets": _offset_store(t[5]).to_state(), "ends": {k: _end_offsets(h).to_state() for k, h in t[6]},
        "topic_names": dict(t[7]), "judge": judge.to_state(), "deleted": {k: tuple(v) for k, v in t[10]},
        "unknown_records": t[11], "tracked_topics": tuple(t[12]), "availability": availability.to_state(),
    }


# ---- groups ---------------------------------------------------------------------------------------------------


def _classic(t: tuple) -> ClassicGroup:
    members = {m[0]: ClassicMember(*m) for m in t[7]}
    return ClassicGroup(t[0], ClassicGroupState(t[1]), t[2], t[3], t[4], t[5], t[6], members, t[8], t[9], t[10],
                        t[11])


def _consumer_member(t: tuple) -> ConsumerMember:
    # States written before liveness was kept end at t[16]: such a member counts as seen, missing nothing.
    return ConsumerMember(t[0], MemberLifecycle(t[1]), *t[2:15], dict(t[15]), dict(t[16]), *t[17:19])


def _views(t: tuple) -> dict[str, MemberView]:
    return {v[0]: MemberView(v[0], v[1], v[2], v[3], frozenset(v[4]), None) for v in t}


def _consumer(t: tuple) -> ConsumerGroup:
    g = ConsumerGroup(t[0], t[1], t[2], t[3])
    g.members = {m[0]: _consumer_member(m) for m in t[4]}
    g.target = {k: dict(v) for k, v in t[5]}
    g.subscription_metadata = dict(t[6])
    g.regexes = dict(t[7])
    g.state = ConsumerGroupState(t[8])
    g.rebalances, g.last_rebalance_ts = t[9], t[10]
    g.epoch_views = None if t[11] is None else _views(t[11])
    g.epoch_target = {k: dict(v) for k, v in t[12]}
    g.epoch_partitions = dict(t[13])
    g.epoch_ts, g.pending_epoch = t[14], t[15]
    g.pending_views = _views(t[16]) if len(t) > 16 and t[16] is not None else None
    g.departed_static = tuple(t[17]) if len(t) > 17 and t[17] is not None else None  # type: ignore[assignment]
    g.departed_silent = dict(t[18]) if len(t) > 18 else {}
    g.silence_due_ms = t[19] if len(t) > 19 else None
    return g


def _share(t: tuple) -> ShareGroup:
    g = ShareGroup(t[0], t[1], t[2])
    g.members = {m[0]: ShareMember(m[0], MemberLifecycle(m[1]), *m[2:9], dict(m[9])) for m in t[3]}
    g.target = {k: dict(v) for k, v in t[4]}
    g.subscription_metadata = dict(t[5])
    g.state = ShareGroupState(t[6])
    g.rebalances, g.last_rebalance_ts = t[7], t[8]
    return g


def _streams(t: tuple) -> StreamsGroup:
    g = StreamsGroup(t[0], t[1], t[2], t[3])
    g.members = {m[0]: StreamsMember(m[0], MemberLifecycle(m[1]), *m[2:]) for m in t[4]}
    g.target = dict(t[5])
    g.state = StreamsGroupState(t[6])
    g.rebalances, g.last_rebalance_ts = t[7], t[8]
    return g


_GROUPS = {GroupType.CLASSIC: _classic, GroupType.CONSUMER: _consumer, GroupType.SHARE: _share,
           GroupType.STREAMS: _streams}


# ---- offsets and end offsets ----------------------------------------------------------------------------------


def _topic_offsets(t: tuple) -> TopicOffsets:
    state = {"offset": t[0], "epoch": t[1], "commit_ts": t[2], "record_offset": t[3], "metadata": t[4],
             "hist_ts": t[5], "hist_off": t[6], "hist_head": t[7], "hist_len": t[8], "count": t[9],
             # states written before statuses were kept here start as "never evaluated"
             "status": t[10] if len(t) > 10 else b"\xff" * (len(t[0]) // 8)}
    return TopicOffsets.from_state(state)


def _offset_store(t: tuple) -> OffsetStore:
    store = OffsetStore(t[0], t[1])
    for g, topics in t[2]:
        store.groups[g] = {sys.intern(tp): _topic_offsets(v) for tp, v in topics}
    store.restore_pending({pid: dict(entries) for pid, entries in t[3]})
    return store


def _end_offsets(t: tuple) -> EndOffsetHistory:
    state = {"hwm": t[0], "lso": t[1], "lwm": t[2], "time_ms": t[3], "transactional": t[4], "times": t[5],
             "ends": t[6], "capacity": t[7]}
    if len(t) > 8:  # state written before quiet tails were known has none
        state["quiet_from"] = t[8]
    return EndOffsetHistory.from_state(state)


def _availability(tracker: AvailabilityTracker, t: tuple) -> None:
    if t:  # an empty tuple: a state written before outages were tracked
        tracker.state = KafkaAvailability(t[0])
        tracker.since_ms, tracker.back_ms, tracker.groups = t[1], t[2], set(t[3])
        tracker.last_since_ms, tracker.last_back_ms, tracker.interval_ms = t[4], t[5], t[6]
        tracker.outages = t[7] if len(t) > 7 else 0  # states written before the count have none


# ---- rebalance judge ------------------------------------------------------------------------------------------


def _judge(judge: RebalanceJudge, t: tuple) -> None:
    """A state written before verdicts were judged this way (no ``judge1`` tag) starts empty."""
    if t and t[0] == "judge1":
        judge.groups = {g: _judgement(x) for g, x in t[1]}


def _episode(t: tuple) -> _Episode:
    return _Episode(t[0], t[1], t[2], t[3], t[4], frozenset(t[5]), *t[6:])


def _judgement(t: tuple) -> _GroupJudgement:
    # States written before wholesale replacements were judged hold (joined ms, identity) per member.
    members = {mid: (*entry, False) if len(entry) == 2 else entry for mid, entry in t[0]}
    j = _GroupJudgement(members, deque(t[1]), deque(t[2]), None if t[3] is None else _episode(t[3]),
                        t[4], t[5], t[6], t[7], list(t[8]), t[9])
    j.counters = ev.GroupVerdicts(*t[10])
    if len(t) > 11:  # states written before shared identities were kept have neither
        j.shared, j.restarts = set(t[11]), deque(t[12])
    if len(t) > 13:
        j.storm_gap = t[13]
    if len(t) > 14:
        j.silenced = deque(t[14])
    if len(t) > 15:
        j.ghosts = set(t[15])
    if len(t) > 16:
        j.last_offset = t[16]
    if len(t) > 17:
        j.kafka = t[17]
    return j
