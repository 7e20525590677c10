"""Scenario tests built with ``protocol.builders`` (Kafka's record helpers) and replayed through the shard.

Each table case has an id and a comment on why its expectation is right.
"""

from __future__ import annotations

import pytest

from protocol import builders as b
from protocol.codec import decode_record, encode_record
from protocol.records import RecordType, UnknownRecord
from protocol._wire import Uuid
from streaming.model import events as ev
from streaming.model.describe import describe, render_text
from streaming.model.lag import EndOffsetHistory, EndOffsetSample, offset_lag
from streaming.model.verdicts import RebalanceConfig
from streaming.model.rules import Status, Thresholds
from streaming.model.shard import GroupCoordinatorShard, ModelConfig

T0 = 1_800_000_000_000
C = ev.RebalanceCause


class Log:
    """Appends records at increasing offsets; every record goes through the real encoder and decoder."""

    def __init__(self, config: ModelConfig = ModelConfig()):
        self.shard = GroupCoordinatorShard(7, config)
        self.offset = 0

    def add(self, record, ts: int, producer_id: int = -1, transactional: bool = False):
        key, value = encode_record(record)
        self.shard.replay(self.offset, ts, decode_record(key, value), producer_id, -1, transactional)
        self.offset += 1

    def marker(self, producer_id: int, kind: str, ts: int):
        self.shard.replay_end_txn_marker(producer_id, kind, self.offset, ts)
        self.offset += 1

    def events(self, *kinds):
        out = self.shard.drain_events()
        return [e for e in out if not kinds or isinstance(e, kinds)]


def member(mid, client, topics, assignment, instance=None, host="/10.0.0.1"):
    return b.new_classic_member(mid, client_id=client, client_host=host, group_instance_id=instance,
                                subscription=b.new_consumer_subscription(topics),
                                assignment=b.new_consumer_assignment(assignment))


def generation(g, gen, members, ts, leader=None):
    return b.new_group_metadata(g, generation=gen, protocol_type="consumer", protocol="range",
                                leader=leader or (members[0].member_id if members else None), members=members,
                                current_state_timestamp=ts)


A1 = member("a-1", "a", ["t"], {"t": [0, 1]})
B1 = member("b-1", "b", ["t"], {"t": [2, 3]})
A1_ALL = member("a-1", "a", ["t"], {"t": [0, 1, 2, 3]})
B1_ALL = member("b-1", "b", ["t"], {"t": [0, 1, 2, 3]})
A1_SUB = member("a-1", "a", ["t", "u"], {"t": [0, 1], "u": [0]})
S1 = member("s-1", "s", ["t"], {"t": [0, 1]}, instance="inst-s")
S2 = member("s-2", "s", ["t"], {"t": [0, 1]}, instance="inst-s")
X1 = member("x-1", "x", ["t"], {"t": [2, 3]})

# (id, generation N members, generation N+1 members, expected causes, moved, stayed)
CLASSIC_CAUSES = [
    # 1. b joins: a keeps 0,1 and gives 2,3 away? a held all four before, so 2 and 3 move to b.
    ("joined", [A1_ALL], [A1, B1], (C.MEMBER_JOINED,), 2, 2),
    # 2. a leaves (or expires: the log cannot tell): its partitions move to b; leader changes from a to b.
    ("left", [A1, B1], [B1_ALL], (C.MEMBER_LEFT, C.LEADER_CHANGED), 2, 2),
    # 3. a static member comes back under a new member id in a new generation: not a join plus a leave.
    ("static_rejoined", [S1, X1], [S2, X1], (C.STATIC_MEMBER_REJOINED, C.LEADER_CHANGED), 0, 4),
    # 4. a's subscription gains topic u.
    ("subscription_changed", [A1, B1], [A1_SUB, B1], (C.SUBSCRIPTION_CHANGED,), 0, 4),
    # 5. everybody left: the last rebalance writes an empty generation.
    ("emptied", [A1, B1], [], (C.MEMBER_LEFT, C.GROUP_EMPTIED), None, None),
]


@pytest.mark.parametrize("case", CLASSIC_CAUSES, ids=[c[0] for c in CLASSIC_CAUSES])
def test_classic_rebalance_causes(case):
    _, before, after, causes, moved, stayed = case
    log = Log()
    log.add(generation("g", 1, before, T0), T0)
    log.add(generation("g", 2, after, T0 + 5000), T0 + 5000)
    rb = log.events(ev.Rebalance)
    assert len(rb) == 1
    r = rb[0]
    assert (r.generation, r.previous_generation, r.causes) == (2, 1, causes)
    if moved is not None:
        assert (r.partitions_moved, r.partitions_stayed) == (moved, stayed)
    assert r.seconds_since_previous == 5.0


def test_leader_change_alone():
    """Same members, new leader: the only visible cause is LEADER_CHANGED."""
    log = Log()
    log.add(generation("g", 1, [A1, B1], T0, leader="a-1"), T0)
    log.add(generation("g", 2, [A1, B1], T0 + 1, leader="b-1"), T0 + 1)
    assert log.events(ev.Rebalance)[0].causes == (C.LEADER_CHANGED,)


def test_static_member_replaced_without_rebalance():
    """KIP-345: same generation, same instance id, new member id: a replacement event, no rebalance."""
    log = Log()
    log.add(generation("g", 3, [S1, X1], T0), T0)
    log.add(generation("g", 3, [S2, X1], T0 + 100), T0 + 100)
    out = log.events()
    assert not [e for e in out if isinstance(e, ev.Rebalance)]
    rep = [e for e in out if isinstance(e, ev.StaticMemberReplaced)]
    assert [(e.instance_id, e.old_member_id, e.new_member_id) for e in rep] == [("inst-s", "s-1", "s-2")]
    d = describe(log.shard)["groups"]["g"]
    assert {m["member_id"] for m in d["members"]} == {"s-2", "x-1"} and d["state"] == "STABLE"


TID = Uuid(b"\x01" * 16)


def kip848_join(log, g, mid, epoch, parts, ts, n_partitions=4, client="c"):
    log.add(b.new_consumer_group_member(g, mid, client_id=client, subscribed_topic_names=["t"]), ts)
    log.add(b.new_consumer_group_partition_metadata(g, [(TID, "t", n_partitions)]), ts)
    log.add(b.new_consumer_group_epoch(g, epoch), ts)
    log.add(b.new_target_assignment_member(g, mid, {TID: parts}), ts)
    log.add(b.new_target_assignment_epoch(g, epoch), ts)
    log.add(b.new_current_assignment(g, mid, member_epoch=epoch, previous_member_epoch=epoch - 1,
                                     assigned={TID: parts}), ts)


def test_kip848_states_and_partitions_added():
    """Records of one heartbeat: Assigning is not visible between operations (≤ 4.2), but Reconciling is while
    a member's current assignment lags; a partition-count rise is PARTITIONS_ADDED."""
    log = Log()
    kip848_join(log, "k", "m1", 1, [0, 1, 2, 3], T0)
    assert describe(log.shard)["groups"]["k"]["state"] == "STABLE"
    log.events()
    # topic t grows to 6 partitions: metadata, epoch bump, new target, member reconciles later
    log.add(b.new_consumer_group_partition_metadata("k", [(TID, "t", 6)]), T0 + 1000)
    log.add(b.new_consumer_group_epoch("k", 2), T0 + 1000)
    assert describe(log.shard)["groups"]["k"]["state"] == "ASSIGNING"
    log.add(b.new_target_assignment_member("k", "m1", {TID: [0, 1, 2, 3, 4, 5]}), T0 + 1000)
    log.add(b.new_target_assignment_epoch("k", 2), T0 + 1000)
    assert describe(log.shard)["groups"]["k"]["state"] == "RECONCILING"
    rb = log.events(ev.Rebalance)
    assert rb and rb[0].causes == (C.PARTITIONS_ADDED,) and (rb[0].partitions_moved, rb[0].partitions_stayed) == (0, 4)
    log.add(b.new_current_assignment("k", "m1", member_epoch=2, previous_member_epoch=1,
                                     assigned={TID: [0, 1, 2, 3, 4, 5]}), T0 + 1500)
    d = describe(log.shard)["groups"]["k"]
    assert d["state"] == "STABLE" and d["members"][0]["assignment"] == [["t", p] for p in range(6)]
    assert d["partition_assignor"] == "uniform"  # no member names a server assignor: Kafka's default


def test_kip848_member_tombstone_order_is_enforced():
    """A member-metadata tombstone before the current-assignment tombstone is what Kafka rejects: an Anomaly."""
    log = Log()
    kip848_join(log, "k", "m1", 1, [0, 1], T0)
    log.events()
    log.add(b.new_target_assignment_member_tombstone("k", "m1"), T0 + 1)
    log.add(b.new_consumer_group_member_tombstone("k", "m1"), T0 + 1)
    anomalies = log.events(ev.Anomaly)
    assert len(anomalies) == 1 and "InvalidTransition" in anomalies[0].reason
    # the proper order removes the member
    log.add(b.new_current_assignment_tombstone("k", "m1"), T0 + 2)
    log.add(b.new_consumer_group_member_tombstone("k", "m1"), T0 + 2)
    log.add(b.new_consumer_group_epoch("k", 2), T0 + 2)
    d = describe(log.shard)["groups"]["k"]
    assert d["state"] == "EMPTY" and d["members"] == []
    assert C.GROUP_EMPTIED in log.events(ev.Rebalance)[0].causes


def _restart(log, g, gen, members, ts):
    log.add(generation(g, gen, members, ts), ts)


def test_rolling_restart_is_not_a_storm():
    """Five members restart one after another (each leaves and a new instance joins): a RollingRestart."""
    cfg = ModelConfig(rebalance=RebalanceConfig(storm_rebalances=5, storm_window_ms=600_000))
    log = Log(cfg)
    ms = [member(f"p{i}-old", f"p{i}", ["t"], {"t": [i]}, host=f"/10.0.0.{i}") for i in range(5)]
    gen, ts = 1, T0
    _restart(log, "g", gen, ms, ts)
    for i in range(5):  # pod i goes away (one rebalance) and comes back with a new IP (another)
        gen += 1; ts += 20_000
        ms = [m for m in ms if m.client_id != f"p{i}"]
        _restart(log, "g", gen, ms, ts)
        gen += 1; ts += 20_000
        ms = ms + [member(f"p{i}-new", f"p{i}", ["t"], {"t": [i]}, host=f"/10.0.1.{i}")]
        _restart(log, "g", gen, ms, ts)
    out = log.events()
    assert [type(e).__name__ for e in out if isinstance(e, (ev.RebalanceStorm, ev.RollingRestart))] == \
        ["RollingRestart"]


def test_flapping_member_is_a_storm():
    """The same member (same client id and host) leaves and rejoins again and again: a RebalanceStorm."""
    log = Log(ModelConfig(rebalance=RebalanceConfig(storm_rebalances=5, storm_window_ms=600_000)))
    stable = member("a-1", "a", ["t"], {"t": [0]})
    gen, ts = 1, T0
    _restart(log, "g", gen, [stable], ts)
    for i in range(4):
        gen += 1; ts += 10_000
        _restart(log, "g", gen, [stable, member(f"f-{i}", "flappy", ["t"], {"t": [1]}, host="/10.9.9.9")], ts)
        gen += 1; ts += 10_000
        _restart(log, "g", gen, [stable], ts)
    storms = log.events(ev.RebalanceStorm)
    # flaps from the 2nd departure on (the flappy member leaves 10 s after joining); with storm_rebalances=5 the
    # storm is called at the 5th membership change
    assert [(s.timestamp - T0, s.rebalances) for s in storms] == [(50_000, 5)]


def test_a_storm_is_active_while_it_lasts_and_ends_after_a_quiet_minute():
    """A member flapping every 10 s for 3 minutes: one storm, active (and counted once) while it lasts, across a
    state round trip in the middle; StormEnded one quiet minute after the last flap."""
    cfg = ModelConfig()
    log = Log(cfg)
    stable = member("a-1", "a", ["t"], {"t": [0]})
    seen = []
    for i in range(18):
        ms = [stable] if i % 2 else [stable, member(f"f-{i}", "flappy", ["t"], {"t": [1]}, host="/10.9.9.9")]
        _restart(log, "g", i + 1, ms, T0 + i * 10_000)
        seen += log.events(ev.RebalanceStorm, ev.StormEnded)
        if i == 11:
            log.shard = type(log.shard).from_bytes(log.shard.to_bytes(), cfg)
            assert log.shard.judge.counters("g").storm_active
    assert [type(e).__name__ for e in seen] == ["RebalanceStorm"]
    log.shard.apply_heartbeat(T0 + 170_000 + 59_000, {})
    assert not log.events(ev.StormEnded)
    log.shard.apply_heartbeat(T0 + 170_000 + 60_000, {})
    ended = log.events(ev.StormEnded)
    assert [(e.timestamp - T0, e.offset) for e in ended] == [(230_000, log.shard.judge.groups["g"].storm_last_offset)]
    c = log.shard.judge.counters("g")
    assert (c.storms, c.storm_active, c.last_verdict) == (1, False, "storm_ended")


def test_offset_tombstone_and_group_tombstone_mirror_kafka():
    """Offset tombstones delete offsets; a group tombstone deletes the group metadata but not the offsets
    (Kafka deletes those with their own tombstones first), so the group shows as DEAD until they go too."""
    log = Log()
    log.add(generation("g", 1, [A1], T0), T0)
    log.add(b.new_offset_commit("g", "t", 0, 10, commit_timestamp=T0), T0)
    log.add(b.new_offset_commit("g", "t", 1, 20, commit_timestamp=T0), T0)
    log.add(b.new_offset_commit_tombstone("g", "t", 0), T0 + 1)
    assert [o["partition"] for o in describe(log.shard)["groups"]["g"]["offsets"]] == [1]
    log.add(b.new_group_metadata_tombstone("g"), T0 + 2)
    d = describe(log.shard)["groups"]["g"]
    assert d["state"] == "DEAD" and d["members"] == [] and len(d["offsets"]) == 1
    log.add(b.new_offset_commit_tombstone("g", "t", 1), T0 + 3)
    assert "g" not in describe(log.shard)["groups"]
    kinds = [type(e).__name__ for e in log.events()]
    assert kinds.count("OffsetDeleted") == 2 and "GroupDeleted" in kinds


# (id, steps, expected committed offset of ("g", "t", 0)) — Kafka's OffsetMetadataManager replay rules.
TXN_CASES = [
    # 1. COMMIT applies the pending offset.
    ("commit", [("txn", 5), ("COMMIT",)], 5),
    # 2. ABORT drops it: the earlier plain commit stays.
    ("abort", [("plain", 3), ("txn", 5), ("ABORT",)], 3),
    # 3. A plain commit written after the transactional one is newer by record offset: it wins at COMMIT.
    ("plain_after_txn_wins", [("txn", 5), ("plain", 4), ("COMMIT",)], 4),
    # 4. A tombstone between the commit and the marker also drops the pending offset.
    ("tombstone_clears_pending", [("txn", 5), ("tomb",), ("COMMIT",)], None),
    # 5. Still open: nothing visible yet.
    ("open", [("plain", 2), ("txn", 5)], 2),
]


@pytest.mark.parametrize("case", TXN_CASES, ids=[c[0] for c in TXN_CASES])
def test_transactional_replay(case):
    _, steps, want = case
    log = Log()
    for i, step in enumerate(steps):
        ts = T0 + i
        if step[0] == "txn":
            log.add(b.new_offset_commit("g", "t", 0, step[1], commit_timestamp=ts), ts, producer_id=42,
                    transactional=True)
        elif step[0] == "plain":
            log.add(b.new_offset_commit("g", "t", 0, step[1], commit_timestamp=ts), ts)
        elif step[0] == "tomb":
            log.add(b.new_offset_commit_tombstone("g", "t", 0), ts)
        else:
            log.marker(42, step[0], ts)
    got = log.shard.offsets.get("g", "t", 0)
    assert (got[0] if got else None) == want


# (id, committed, hwm, lso, transactional, expected lag)
LAG_CASES = [
    ("behind", 90, 100, 100, False, 10),
    ("clamped_never_negative", 120, 100, 100, False, 0),  # commit raced ahead of a stale HWM sample
    ("open_txn_uses_lso", 80, 100, 85, True, 5),  # a read_committed consumer cannot pass the LSO
    ("only_marker_left", 99, 100, 100, True, 0),  # the last record is the COMMIT marker
    ("marker_rule_needs_txn_topic", 99, 100, 100, False, 1),  # a plain topic: one real record left
    ("lso_above_hwm_race", 50, 50, 51, False, 0),  # seen in the capture: LSO sampled after the HWM
]


@pytest.mark.parametrize("case", LAG_CASES, ids=[c[0] for c in LAG_CASES])
def test_offset_lag(case):
    _, committed, hwm, lso, txn, want = case
    assert offset_lag(committed, hwm, lso, txn)[1] == want


def test_time_lag_interpolates_and_is_bounded_on_replays():
    h = EndOffsetHistory(8)
    for i in range(8):
        h.observe(EndOffsetSample(100 * (i + 1), -1, -1, T0 + i * 10_000))
    now = T0 + 70_000
    # committed 450: the end passed 450 between samples 4 (t=30 s, 400) and 5 (t=40 s, 500): at ~35.1 s
    secs, lower = h.time_lag(450, now)
    assert not lower and 34.0 < secs < 35.5
    # a group replaying old data (offset 0, far older than the history): at least the history span, flagged
    secs, lower = h.time_lag(0, now)
    assert lower and secs == 70.0
    # caught up: 0 even though the producer has been silent
    assert h.time_lag(800, now + 3_600_000) == (0.0, False)
    # the lag a caller already has gives the same answers
    for committed in (0, 450, 800):
        assert h.time_lag(committed, now, h.lag(committed)[1]) == h.time_lag(committed, now)


def test_a_consumer_stopped_for_an_hour_shows_an_hour_not_the_history_span():
    """Default history (64 samples) and heartbeats every 5 s, a producer writing 10 records/s with bursts: a
    consumer that stopped 60 minutes ago is 3,600 s behind within a few percent, not a lower bound of the ~5
    minutes 64 samples would span if the oldest were simply dropped, so a 10-minute time-lag alert can fire."""
    h = EndOffsetHistory()
    end = 0
    for i in range(2 * 720):  # two hours of heartbeats
        end += 50 + (200 if i % 97 == 0 else 0)
        h.observe(EndOffsetSample(end, -1, -1, T0 + i * 5_000))
    now = T0 + (2 * 720 - 1) * 5_000
    assert len(h.times) <= 64
    ends = list(h.ends)
    for minutes in (3, 12, 60, 110):
        t = now - minutes * 60_000
        # the true end offset at t, from the same producer
        true_end = sum(50 + (200 if i % 97 == 0 else 0) for i in range((t - T0) // 5_000 + 1))
        secs, lower = h.time_lag(true_end - 1, now)
        assert not lower, minutes
        assert abs(secs - minutes * 60) <= 0.05 * minutes * 60 + 10, (minutes, secs)
    assert ends == sorted(ends)
    secs, lower = h.time_lag(0, now)
    assert lower and secs == (now - T0) / 1000, "older than the first heartbeat: at least the whole span"


def test_the_samples_the_rules_read_follow_every_change_of_the_history():
    """``samples()`` is kept between heartbeats (every group of a partition reads it at every snapshot); each kind
    of change must show in it: a new sample, a flat line moved forward, thinning, a log that went back."""
    h = EndOffsetHistory(8)

    def pairs():
        return list(zip(h.times, h.ends))

    assert h.samples() == ()
    h.observe(EndOffsetSample(100, -1, -1, T0))
    assert list(h.samples()) == pairs() == [(T0, 100)]
    h.observe(EndOffsetSample(100, -1, -1, T0 + 5_000))
    h.observe(EndOffsetSample(100, -1, -1, T0 + 10_000))  # flat: the newest sample's time moves forward
    assert list(h.samples()) == pairs() and h.samples()[-1] == (T0 + 10_000, 100)
    for i in range(3, 20):  # past the capacity: thinned
        h.observe(EndOffsetSample(100 * i, -1, -1, T0 + i * 5_000))
        assert list(h.samples()) == pairs()
    h.observe(EndOffsetSample(5, -1, -1, T0 + 200_000))  # the log went back: the history starts over
    assert list(h.samples()) == pairs() == [(T0 + 200_000, 5)]
    h.observe(EndOffsetSample(7, -1, -1, T0 + 100_000))  # older than the latest: ignored
    assert list(h.samples()) == [(T0 + 200_000, 5)]
    assert list(EndOffsetHistory.from_state(h.to_state()).samples()) == [(T0 + 200_000, 5)]


def test_lag_is_unknown_until_a_heartbeat_gives_the_end_offsets():
    """No end offsets yet (before the first heartbeat, a topic left out of heartbeats, a backfill from files):
    the lag is unknown, not 0, which would read as caught up."""
    log = Log(ModelConfig())
    log.add(b.new_offset_commit("g", "t", 0, 100, commit_timestamp=T0), T0)
    log.add(b.new_offset_commit("g", "u", 0, 7, commit_timestamp=T0), T0)
    snap = next(g for g in log.shard.snapshot(T0).groups if g.group_id == "g")
    assert (snap.sum_lag, snap.max_lag) == (None, None)
    assert all((t.sum_lag, t.max_lag) == (None, None) for t in snap.topics)
    log.shard.apply_heartbeat(T0 + 1_000, {("t", 0): (150, 150, 0)})
    snap = next(g for g in log.shard.snapshot().groups if g.group_id == "g")
    assert (snap.sum_lag, snap.max_lag) == (50, 50), "the known partition counts; the other stays unknown"
    assert {t.topic: t.sum_lag for t in snap.topics} == {"t": 50, "u": None}


def test_idle_partition_never_alarms_and_stopped_consumer_does():
    cfg = ModelConfig(thresholds=Thresholds(stop_after_ms=60_000))
    log = Log(cfg)
    log.add(b.new_offset_commit("idle", "t", 0, 100, commit_timestamp=T0), T0)
    log.add(b.new_offset_commit("dead", "t", 1, 100, commit_timestamp=T0), T0)
    for i in range(12):  # two hours of heartbeats: partition 0 silent, partition 1 keeps growing
        log.shard.apply_heartbeat(T0 + i * 600_000, {("t", 0): (100, 100, 0), ("t", 1): (100 + 50 * i, 100 + 50 * i, 0)})
    assert log.shard.snapshot() == log.shard.snapshot() and not log.events(ev.StatusChanged), "a query records none"
    snap = {g.group_id: g for g in log.shard.evaluate().groups}
    assert snap["idle"].status == Status.OK and snap["idle"].partitions[0].lag_seconds == 0.0
    assert snap["dead"].status == Status.STOP
    changed = log.events(ev.StatusChanged)
    # the first evaluation (after two hours) is each partition's first status, printed with no previous one
    assert sorted((e.group_id, e.old, e.new) for e in changed) == [("dead", None, Status.STOP),
                                                                    ("idle", None, Status.OK)]
    # while the source is still replaying history, STOP is held back
    assert {g.status for g in log.shard.snapshot(caught_up=False).groups} == {Status.OK}


def test_stalled_consumer():
    log = Log(ModelConfig(thresholds=Thresholds(min_distance_ms=0)))
    for i in range(5):
        ts = T0 + i * 30_000
        log.add(b.new_offset_commit("g", "t", 0, 50, commit_timestamp=ts), ts)
        log.shard.apply_heartbeat(ts, {("t", 0): 60 + 10 * i})
    assert log.shard.snapshot().groups[0].status == Status.STALL


def test_rewind_detected():
    log = Log(ModelConfig(thresholds=Thresholds(min_distance_ms=0)))
    for i, off in enumerate([400, 500, 100, 150]):
        ts = T0 + i * 30_000
        log.add(b.new_offset_commit("g", "t", 0, off, commit_timestamp=ts), ts)
        log.shard.apply_heartbeat(ts, {("t", 0): 600})
    assert log.shard.snapshot().groups[0].status == Status.REWIND


def test_data_loss_risk():
    log = Log()
    log.add(b.new_offset_commit("g", "t", 0, 10, commit_timestamp=T0), T0)
    log.shard.apply_heartbeat(T0, {("t", 0): EndOffsetSample(500, 500, 200)})
    p = log.shard.snapshot().groups[0].partitions[0]
    assert p.data_loss_risk and p.status == Status.ERR
    # Data loss is not held back while the job replays history (the other statuses are): retention deleted the
    # records whatever the job has caught up with, and the reason is the rule's.
    replaying = log.shard.snapshot(caught_up=False).groups[0].partitions[0]
    assert (replaying.status, replaying.status_reason) == (p.status, p.status_reason)


def test_unknown_records_are_skipped_once_visibly():
    log = Log()
    for _ in range(3):
        log.shard.replay(log.offset, T0, UnknownRecord(99, 0, b"\x00\x63", b"\x00\x00", "unknown record type 99"))
        log.offset += 1
    assert len(log.events(ev.Anomaly)) == 1 and log.shard.unknown_records == 3


def test_share_group_is_not_a_consumer_group():
    from protocol.records import GroupKey, GroupMemberKey, ShareGroupMemberMetadataValue, ShareGroupMetadataValue_4_0
    from protocol.records import CoordinatorRecord
    log = Log()
    log.shard.replay(0, T0, CoordinatorRecord(RecordType.SHARE_GROUP_MEMBER_METADATA, GroupMemberKey(
        group_id="sh", member_id="m"), ShareGroupMemberMetadataValue(rack_id=None, client_id="c", client_host="/h",
                                                                     subscribed_topic_names=("t",)), 0))
    log.shard.replay(1, T0, CoordinatorRecord(RecordType.SHARE_GROUP_METADATA, GroupKey(group_id="sh"),
                                              ShareGroupMetadataValue_4_0(epoch=1), 0))
    d = describe(log.shard)["groups"]["sh"]
    assert (d["type"], d["state"], d["group_epoch"]) == ("SHARE", "STABLE", 1)
    # a consumer-group record for the same id is an inconsistency, never a silent conversion
    log.add(b.new_consumer_group_epoch("sh", 2), T0)
    assert "not a consumer group" in log.events(ev.Anomaly)[0].reason


def test_state_round_trip_and_text_render():
    log = Log()
    log.add(generation("g", 1, [A1, B1], T0), T0)
    kip848_join(log, "k", "m1", 1, [0, 1], T0)
    for p in range(4):
        log.add(b.new_offset_commit("g", "t", p, 10 + p, commit_timestamp=T0, metadata="x" if p else ""), T0)
    log.add(b.new_offset_commit("g", "t", 0, 5, commit_timestamp=T0), T0, producer_id=9, transactional=True)
    log.shard.apply_heartbeat(T0 + 1000, {("t", p): 20 for p in range(4)})
    before = describe(log.shard)
    blob = log.shard.to_bytes()
    restored = GroupCoordinatorShard.from_bytes(blob)
    assert describe(restored) == before
    assert restored.offsets.pending == log.shard.offsets.pending
    text = render_text(describe(log.shard, {("t", p): 20 for p in range(4)}))
    assert "CURRENT-OFFSET" in text and "a-1" in text and "LOG-END-OFFSET" in text
    with pytest.raises(ValueError):
        GroupCoordinatorShard.from_bytes(b"nope")


def test_what_if_with_assignors():
    from streaming.model.assignment import what_if
    log = Log()
    lopsided = [member("a-1", "a", ["t"], {"t": [0, 1, 2]}), member("b-1", "b", ["t"], {"t": [3]})]
    log.add(generation("g", 1, lopsided, T0), T0)
    results = {w.strategy: w for w in what_if(log.shard, "g")}
    assert set(results) == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    assert results["range"].skew == 0 and results["range"].is_balanced
    assert results["sticky"].moved == 1 and results["sticky"].stayed == 3  # sticky moves only one partition


def test_model_imports_without_spark_or_kafka_client():
    import subprocess
    import sys
    code = ("import sys\n"
            "class Block:\n"
            "    def find_module(self, name, path=None): return None\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('pyspark', 'confluent_kafka', 'deltalake'): raise ImportError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import streaming.model.shard, streaming.model.describe, streaming.model.assignment\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))


def test_cooperative_follow_up_is_one_rebalance_not_two():
    """Incremental cooperative rebalancing: generation N revokes (b gets nothing yet), N+1 hands the partitions
    over with unchanged membership. The second is a COOPERATIVE_FOLLOW_UP and does not count towards storms."""
    log = Log()
    a_all = member("a-1", "a", ["t"], {"t": [0, 1, 2, 3]})
    a_half = member("a-1", "a", ["t"], {"t": [0, 1]})
    b_none = member("b-1", "b", ["t"], {})
    log.add(generation("g", 1, [a_all], T0), T0)
    log.add(generation("g", 2, [a_half, b_none], T0 + 100), T0 + 100)
    log.add(generation("g", 3, [a_half, B1], T0 + 200), T0 + 200)
    causes = [r.causes for r in log.events(ev.Rebalance)]
    assert causes == [(C.MEMBER_JOINED,), (C.COOPERATIVE_FOLLOW_UP,)]
    assert len(log.shard.judge.groups["g"].churn) == 1


def test_static_members_restarted_one_by_one_are_a_rolling_restart_without_a_rebalance():
    """Three static members (group.instance.id) each come back under a new member id within their session timeout:
    Kafka keeps the generation (no rebalance), the model reports each replacement, and the second one makes it a
    rolling restart, reported once. Never a storm."""
    log = Log()
    ms = [member(f"s{i}-a", f"s{i}", ["t"], {"t": [i]}, instance=f"inst-{i}") for i in range(3)]
    log.add(generation("g", 1, ms, T0), T0)
    for i in range(3):
        ts = T0 + 60_000 + i * 20_000
        ms[i] = member(f"s{i}-b", f"s{i}", ["t"], {"t": [i]}, instance=f"inst-{i}")
        log.add(generation("g", 1, list(ms), ts), ts)
    out = log.events(ev.StaticMemberReplaced, ev.RollingRestart, ev.RebalanceStorm, ev.Rebalance)
    assert [type(e).__name__ for e in out] == ["StaticMemberReplaced", "StaticMemberReplaced", "RollingRestart",
                                               "StaticMemberReplaced"]
    assert log.shard.judge.counters("g").rolling_restarts == 1


def _kip848_static_group(log, g, ids):
    """A consumer-protocol group whose members carry group.instance.id, formed one member per epoch."""
    for epoch, (inst, mid) in enumerate(ids.items(), start=1):
        log.add(b.new_consumer_group_member(g, mid, client_id=inst, subscribed_topic_names=["t"], instance_id=inst),
                T0)
        log.add(b.new_consumer_group_partition_metadata(g, [(TID, "t", 6)]), T0)
        log.add(b.new_consumer_group_epoch(g, epoch), T0)
        log.add(b.new_target_assignment_member(g, mid, {TID: [epoch - 1]}), T0)
        log.add(b.new_target_assignment_epoch(g, epoch), T0)
        log.add(b.new_current_assignment(g, mid, member_epoch=epoch, previous_member_epoch=epoch - 1,
                                         assigned={TID: [epoch - 1]}), T0)


def _kip848_static_replace(log, g, old, new, inst, epoch, part, ts):
    """What the coordinator writes when a static member that left with epoch -2 comes back under a new member id
    before its session expires: the old member's three tombstones, then the new one, no epoch record."""
    log.add(b.new_current_assignment(g, old, member_epoch=-2, previous_member_epoch=epoch, assigned={TID: [part]}),
            ts - 8_000)
    log.add(b.new_current_assignment_tombstone(g, old), ts)
    log.add(b.new_target_assignment_member_tombstone(g, old), ts)
    log.add(b.new_consumer_group_member_tombstone(g, old), ts)
    log.add(b.new_consumer_group_member(g, new, client_id=inst, subscribed_topic_names=["t"], instance_id=inst), ts)
    log.add(b.new_target_assignment_member(g, new, {TID: [part]}), ts)
    log.add(b.new_current_assignment(g, new, member_epoch=0, previous_member_epoch=0, assigned={}), ts)
    log.add(b.new_current_assignment(g, new, member_epoch=epoch, previous_member_epoch=0, assigned={TID: [part]}),
            ts + 10)


def test_kip848_static_members_replaced_in_place_are_a_rolling_restart_and_a_later_join_a_scale_out():
    """Consumer protocol with group.instance.id: a deploy replaces each static member in place (no epoch bump).
    The model reports each replacement, the second makes a rolling restart, and the new member ids take the old
    ones' places, so a member added minutes later is a plain join (a scale-out), not three departures."""
    log = Log()
    ids = {"inst-0": "m0", "inst-1": "m1", "inst-2": "m2"}
    _kip848_static_group(log, "k", ids)
    log.events()
    for i, (inst, old) in enumerate(list(ids.items())):
        ids[inst] = f"{old}-b"
        _kip848_static_replace(log, "k", old, ids[inst], inst, 3, i, T0 + 60_000 + i * 20_000)
    out = log.events(ev.StaticMemberReplaced, ev.RollingRestart, ev.RebalanceStorm, ev.Rebalance)
    assert [type(e).__name__ for e in out] == ["StaticMemberReplaced", "StaticMemberReplaced", "RollingRestart",
                                               "StaticMemberReplaced"]
    assert [(e.old_member_id, e.new_member_id) for e in out if isinstance(e, ev.StaticMemberReplaced)] == \
        [("m0", "m0-b"), ("m1", "m1-b"), ("m2", "m2-b")]
    ts = T0 + 480_000
    log.add(b.new_consumer_group_member("k", "d", client_id="extra", subscribed_topic_names=["t"]), ts)
    log.add(b.new_consumer_group_epoch("k", 4), ts)
    log.add(b.new_target_assignment_member("k", "d", {TID: [3]}), ts)
    log.add(b.new_target_assignment_epoch("k", 4), ts)
    rebalance, = log.events(ev.Rebalance)
    assert (rebalance.causes, rebalance.joined, rebalance.left) == ((C.MEMBER_JOINED,), ("d",), ())
    assert rebalance.partitions_moved == 0 and rebalance.partitions_stayed == 3
    log.shard.judge.tick(ts + 120_000)
    counters = log.shard.judge.counters("k")
    assert (counters.rolling_restarts, counters.scale_outs, counters.scale_ins, counters.storms) == (1, 1, 0, 0)


def test_kip848_static_member_expired_then_back_is_a_departure_and_a_join_not_a_replacement():
    """A static member away past its session timeout is removed with an epoch bump; coming back later under the
    same instance id is a new join (its own epoch bump), never a replacement."""
    log = Log()
    _kip848_static_group(log, "k", {"inst-0": "m0", "inst-1": "m1"})
    log.events()
    ts = T0 + 60_000
    log.add(b.new_current_assignment_tombstone("k", "m1"), ts)
    log.add(b.new_target_assignment_member_tombstone("k", "m1"), ts)
    log.add(b.new_consumer_group_member_tombstone("k", "m1"), ts)
    log.add(b.new_consumer_group_epoch("k", 3), ts)
    log.add(b.new_target_assignment_member("k", "m0", {TID: [0, 1]}), ts)
    log.add(b.new_target_assignment_epoch("k", 3), ts)
    ts += 30_000
    log.add(b.new_consumer_group_member("k", "m1-b", client_id="inst-1", subscribed_topic_names=["t"],
                                        instance_id="inst-1"), ts)
    log.add(b.new_consumer_group_epoch("k", 4), ts)
    log.add(b.new_target_assignment_member("k", "m0", {TID: [0]}), ts)
    log.add(b.new_target_assignment_member("k", "m1-b", {TID: [1]}), ts)
    log.add(b.new_target_assignment_epoch("k", 4), ts)
    out = log.events(ev.StaticMemberReplaced, ev.Rebalance)
    assert [type(e).__name__ for e in out] == ["Rebalance", "Rebalance"]
    assert [(e.left, e.joined) for e in out] == [(("m1",), ()), ((), ("m1-b",))]


def test_without_heartbeats_a_storm_ends_by_the_clock_of_the_records():
    """A backfill of old segment files has no heartbeats: the time-driven verdicts follow the records' own clock,
    so a storm of four days ago is over by the time the log shows a later record, not active for ever."""
    log = Log()
    stable = member("a-1", "a", ["t"], {"t": [0]})
    for i in range(8):
        ms = [stable] if i % 2 else [stable, member(f"f-{i}", "flappy", ["t"], {"t": [1]}, host="/10.9.9.9")]
        _restart(log, "g", i + 1, ms, T0 + i * 10_000)
    assert log.shard.now_ms < 0 and log.shard.judge.counters("g").storm_active
    log.events()
    log.add(b.new_offset_commit("other", "t", 0, 5, commit_timestamp=T0 + 600_000), T0 + 600_000)
    ended = log.events(ev.StormEnded)
    assert [(e.group_id, e.timestamp - T0) for e in ended] == [("g", 70_000 + 60_000)]
    assert not log.shard.judge.counters("g").storm_active
