"""Kafka's outages as the model sees them: the availability table, and the judge leaving Kafka's rejoins out of
every group's churn while a real crash loop stays a storm."""

from __future__ import annotations

from streaming.model import events as ev
from streaming.model import state_v1
from streaming.model.availability import AvailabilityTracker
from streaming.model.states import KAFKA_AVAILABILITY, GroupType, KafkaAvailability, KafkaTrigger
from streaming.model.verdicts import RebalanceConfig, RebalanceJudge

T0 = 1_700_000_000_000


def beats(tracker: AvailabilityTracker, start: int, end: int, last_ts: int, step: int = 5_000) -> list:
    out = []
    for t in range(start + step, end + 1, step):
        out += tracker.on_heartbeat(t, t - step, last_ts)
    return out


def test_every_state_answers_every_trigger_it_can_meet():
    for state in KafkaAvailability:
        assert KafkaTrigger.LATE_RECORD in KAFKA_AVAILABILITY[state]
        assert KafkaTrigger.LATE_HEARTBEAT in KAFKA_AVAILABILITY[state]


def test_a_gap_with_a_silent_log_is_an_outage_reported_once_after_the_rejoin_window():
    tr = AvailabilityTracker(gap_ms=15_000, rejoin_ms=60_000)
    assert beats(tr, T0, T0 + 30_000, last_ts=T0) == []
    # Kafka away 40 s: the rejoin records come first, stamped after the silence.
    assert tr.on_record(T0 + 72_000, T0 + 30_000, last_ts=T0 + 29_000) == []
    assert tr.state is KafkaAvailability.AWAY and tr.window()[0] == T0 + 30_000
    tr.groups.add("g1")
    assert tr.on_heartbeat(T0 + 75_000, T0 + 30_000, T0 + 72_000) == []
    assert tr.state is KafkaAvailability.REJOINING and tr.returned() == (T0 + 30_000, T0 + 75_000)
    reports = beats(tr, T0 + 75_000, T0 + 140_000, last_ts=T0 + 72_000)
    assert len(reports) == 1 and isinstance(reports[0], ev.KafkaUnavailable)
    assert reports[0].seconds == 45.0 and reports[0].groups == ("g1",)
    assert tr.state is KafkaAvailability.AVAILABLE and tr.window() is None


def test_outages_are_counted_once_each_and_the_count_survives_the_state():
    """``groupscope_kafka_outages_total`` comes from this count: one per reported outage, never per heartbeat of
    it, and a job restarted from its checkpoint goes on from where it was."""
    tr = AvailabilityTracker(gap_ms=15_000, rejoin_ms=60_000)
    last = T0
    beats(tr, T0, T0 + 30_000, last_ts=last)
    for n, start in enumerate((T0 + 30_000, T0 + 200_000), 1):
        tr.on_heartbeat(start + 40_000, start, last)  # away 40 s: late heartbeat
        beats(tr, start + 40_000, start + 170_000, last_ts=last)
        assert tr.outages == n and tr.state is KafkaAvailability.AVAILABLE
    again = AvailabilityTracker(gap_ms=15_000, rejoin_ms=60_000)
    again.load_state(tr.to_state())
    assert again.outages == 2
    old = (tr.state.value, tr.since_ms, tr.back_ms, (), tr.last_since_ms, tr.last_back_ms, tr.interval_ms)
    state_v1._availability(again, old)  # a version-1 state written before outages were counted
    assert again.outages == 0


def test_a_gap_while_the_log_was_written_is_the_jobs_own_downtime_not_kafkas():
    tr = AvailabilityTracker(gap_ms=15_000, rejoin_ms=60_000)
    beats(tr, T0, T0 + 30_000, last_ts=T0)
    # commits kept coming during the gap (each close to the one before): Kafka was there
    for t in range(T0 + 31_000, T0 + 90_000, 2_000):
        assert tr.on_record(t, T0 + 30_000, last_ts=t - 2_000) == []
    tr.on_heartbeat(T0 + 90_000, T0 + 30_000, last_ts=T0 + 89_000)
    assert tr.state is KafkaAvailability.AVAILABLE and tr.returned() is None


def test_a_slow_emitter_sets_the_gap():
    tr = AvailabilityTracker(gap_ms=15_000, rejoin_ms=60_000)
    beats(tr, T0, T0 + 1_800_000, last_ts=T0, step=600_000)  # heartbeats every 10 minutes
    assert tr.state is KafkaAvailability.AVAILABLE


def rebalance(gid: str, ts: int, gen: int, before: dict, after: dict) -> ev.Rebalance:
    causes = tuple(c for c, on in ((ev.RebalanceCause.MEMBER_JOINED, set(after) - set(before)),
                                   (ev.RebalanceCause.MEMBER_LEFT, set(before) - set(after))) if on)
    return ev.Rebalance(gid, gen, ts, GroupType.CLASSIC, gen, gen - 1,
                        causes, len(before), len(after), None, None, None)


def test_rejoins_after_kafka_was_away_are_no_churn_but_a_crash_loop_after_it_is_a_storm():
    judge = RebalanceJudge(RebalanceConfig())
    members = {"a-1": "a@h", "b-1": "b@h"}
    judge.baseline("ok", 0, T0, members)
    judge.baseline("loop", 0, T0, members)
    judge.tick(T0 + 60_000)
    judge.away = (T0 + 100_000, T0 + 200_000)  # away from 100 s, back at 140 s, rejoin window to 200 s
    out = []
    for gid in ("ok", "loop"):
        # every member rejoins under a new id beside its ghost, then the ghosts expire
        both = {**members, "a-2": "a@h", "b-2": "b@h"}
        out += judge.observe(rebalance(gid, T0 + 142_000, 2, members, both), members, both)
        out += judge.observe(rebalance(gid, T0 + 152_000, 3, both, {"a-2": "a@h", "b-2": "b@h"}), both,
                             {"a-2": "a@h", "b-2": "b@h"})
    assert judge.kafka_rejoins == {"ok", "loop"}
    assert not judge.groups["ok"].churn and judge.groups["ok"].episode is None
    # the loop group's new instances then crash a few seconds after each join, under new names
    current = {"a-2": "a@h", "b-2": "b@h"}
    for k in range(3, 7):
        nxt = {f"a-{k}": "a@h", f"b-{k}": "b@h"}
        out += judge.observe(rebalance("loop", T0 + 150_000 + 5_000 * k, k + 1, current, nxt), current, nxt)
        current = nxt
    out += judge.tick(T0 + 400_000)
    storms = [e for e in out if isinstance(e, ev.RebalanceStorm)]
    assert [e.group_id for e in storms] == ["loop"]
    assert judge.counters("ok").storms == 0 and judge.counters("ok").rolling_restarts == 0


def test_without_the_window_the_same_rejoins_are_judged_as_churn():
    """The rule can fail: the same rejoins outside an outage window are membership changes the judge counts."""
    judge = RebalanceJudge(RebalanceConfig())
    members = {"a-1": "a@h", "b-1": "b@h"}
    judge.baseline("ok", 0, T0, members)
    judge.tick(T0 + 60_000)
    both = {**members, "a-2": "a@h", "b-2": "b@h"}
    judge.observe(rebalance("ok", T0 + 142_000, 2, members, both), members, both)
    assert judge.groups["ok"].churn and not judge.kafka_rejoins
