"""Consumer-protocol members that stop heartbeating, told from the log alone (``ConsumerMember.missed_bump``),
checked against what the clients of a real Kafka 4.0 recording did: the members found silent must be exactly the
processes that were SIGKILLed, never one that closed cleanly or stayed, and a live member must follow every epoch
bump well within the silence threshold."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from protocol.codec import decode_record
from protocol.records import RecordType
from streaming.model.verdicts import RebalanceConfig, RebalanceJudge
from streaming.offline.recording import load_recording, replay_recording
from tests.conftest import captures_dir

RECORDING = "kip848_storm_and_rolling"


def _path():
    return captures_dir() / "conformance" / "verdicts" / RECORDING


def _records() -> list[tuple[int, object]]:
    out = []
    with open(_path() / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r["batch"]["is_control"]:
                continue
            value = None if r["value_hex"] is None else bytes.fromhex(r["value_hex"])
            out.append((r["timestamp"], decode_record(bytes.fromhex(r["key_hex"]), value)))
    out.sort(key=lambda x: x[0])
    return out


def _processes_by_member_id() -> dict[str, tuple[str, str]]:
    """member id -> (process name, how it ended), matched by join time: each process's member-metadata record is
    the first of its group written within 1.5 s after the process started (the flapper restarts every 3-5 s)."""
    starts, ends = [], {}
    with open(_path() / "client_events.jsonl", encoding="utf-8") as fh:
        for line in fh:
            e = json.loads(line)
            if e.get("event") == "member_start":
                starts.append((e["t_ms"], e["group"], e["member"]))
            elif e.get("event") == "exit":
                ends[e["member"]] = "sigkill" if "SIGKILL" in e["how"] else "crash"
            elif e.get("event") == "closed":
                ends.setdefault(e["member"], "close")
    joins = [(ts, rec.key.group_id, rec.key.member_id) for ts, rec in _records()
             if rec.type == RecordType.CONSUMER_GROUP_MEMBER_METADATA and rec.value is not None]
    first_join: dict[str, tuple[int, str]] = {}
    for ts, group, mid in joins:
        first_join.setdefault(mid, (ts, group))
    out = {}
    for t_ms, group, name in starts:
        candidates = sorted((ts, mid) for mid, (ts, g) in first_join.items()
                            if g == group and t_ms <= ts <= t_ms + 1500 and mid not in out)
        assert candidates, f"no member of {group} joined within 1.5 s of {name}'s start"
        out[candidates[0][1]] = (name, ends.get(name, "stayed"))
    return out


@pytest.fixture(scope="module")
def silent_by_group() -> dict[str, dict[str, int]]:
    """Every member the model reported silent to the judge, per group, with the first bump it did not follow."""
    seen: dict[str, dict[str, int]] = defaultdict(dict)
    original = RebalanceJudge.observe

    def recording_observe(self, rebalance, before, after, silent=None):
        for mid, since in (silent or {}).items():
            seen[rebalance.group_id].setdefault(mid, since)
        return original(self, rebalance, before, after, silent)

    RebalanceJudge.observe = recording_observe  # type: ignore[method-assign]
    try:
        replay_recording(load_recording(_path()))
    finally:
        RebalanceJudge.observe = original  # type: ignore[method-assign]
    return seen


def test_the_members_found_silent_are_the_sigkilled_processes(silent_by_group):
    processes = _processes_by_member_id()
    killed = {mid for mid, (_, how) in processes.items() if how == "sigkill"}
    storm_members = {mid for mid, (name, _) in processes.items() if name.startswith("k8s-")}
    assert len(killed) == 8, sorted(processes.values())  # the README: 8 of the flapper's 21 cycles were SIGKILLs
    # A SIGKILLed member is found silent at the first rebalance 20 s after it stopped following the group, if one
    # comes before its session expires, or with the rebalance that removes it when its session expires.
    assert set(silent_by_group["k8-storm"]) == killed & storm_members
    assert not silent_by_group.get("k8-roll"), silent_by_group.get("k8-roll")  # restarted cleanly, one by one


def test_live_members_follow_every_epoch_bump_within_a_heartbeat_interval():
    """The threshold's margin, on real Kafka: every member that stayed in its group wrote a record within 5 s
    (Kafka's default consumer heartbeat interval) of each epoch bump, far inside the 20 s silence threshold."""
    processes = _processes_by_member_id()
    stayed = {mid for mid, (_, how) in processes.items() if how in ("stayed", "close")}
    writes: dict[str, list[int]] = defaultdict(list)
    bumps: dict[str, list[int]] = defaultdict(list)
    group_of: dict[str, str] = {}
    left: dict[str, int] = {}
    for ts, rec in _records():
        if rec.type == RecordType.CONSUMER_GROUP_METADATA and rec.value is not None:
            if not bumps[rec.key.group_id] or bumps[rec.key.group_id][-1] != ts:
                bumps[rec.key.group_id].append(ts)
        elif rec.type == RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            group_of[rec.key.member_id] = rec.key.group_id
            if rec.value is None:
                left.setdefault(rec.key.member_id, ts)
            else:
                writes[rec.key.member_id].append(ts)
    delays = []
    for mid in stayed:
        gid = group_of[mid]
        first, last = writes[mid][0], left.get(mid, max(bumps[gid]) + 1)
        for bump in bumps[gid]:
            if first < bump < last - 5_000:  # a bump while the member was there, not just before it left
                after = [w for w in writes[mid] if w >= bump]
                assert after, f"member {processes[mid][0]} never followed the bump at {bump}"
                delays.append(after[0] - bump)
    assert len(delays) >= 50, len(delays)
    assert max(delays) <= 5_100, max(delays)
    assert max(delays) * 3 < RebalanceConfig().silent_after_ms


def test_simulated_crash_loop_of_killed_members_under_new_names_is_a_storm_while_it_runs(tmp_path, monkeypatch):
    """The shape the flapper of the recording above takes when every cycle ends in SIGKILL, for three members at
    once (the simulator's consumer-protocol coordinator and clients, calibrated on that recording in
    ``tests/simulator/test_calibration.py``): each process lives 2.5-4 s under a name of its own, and every one
    stays a member for its 45 s session. The storm is called while the loop runs, ~20 s after the first kills; no
    scale-out however many ghosts pile up."""
    from dataclasses import replace
    from itertools import count

    from streaming.simulator import scenarios as sc
    from streaming.simulator.clients import ConsumerConfig, SimConsumer
    from streaming.simulator.recording import write_recording
    from streaming.simulator.simulation import Simulation
    from streaming.simulator.topics import TopicSpec

    names = count(1)
    first_kill: list[float] = []

    def setup(sim):
        base = ConsumerConfig(group="kx", client_id="kx", topics=("kx-orders",), protocol="consumer",
                              assignor="uniform", commit="sync")
        for slot in range(3):
            def cycle(slot=slot):
                c = SimConsumer(sim, replace(base, client_id=f"kx-{slot}-r{next(names):02d}"))
                sim.clients.append(c)

                def die():
                    first_kill.append(sim.elapsed_ms / 1000)
                    c.crash()
                    nxt = sim.elapsed_ms / 1000 + sim.rng.uniform(0.5, 1.0)
                    if nxt < 92.0:
                        sim.at(nxt, cycle)
                c.start()
                sim.sched.after(int(sim.rng.uniform(2.5, 4.0) * 1000), die)
            sim.at(8.0 + slot * 0.7, cycle)
        sc._members(sim, 2, "kx", ("kx-orders",), at_s=100.0, protocol="consumer", assignor="uniform",
                    commit="sync")

    monkeypatch.setitem(sc.SCENARIOS, "kx-loop", sc.Scenario("kx-loop", "killed crash loop",
                                                               sc._t((TopicSpec("kx-orders", 6, 50.0), 0)), setup))
    folder = write_recording(Simulation(["kx-loop"], seed=1), tmp_path / "rec", 300_000)
    recording = load_recording(folder)
    t0 = min(r.timestamp for r in recording.records) - 8_000  # the first member starts at 8 s
    verdicts = [(e.verdict, (e.t_ms - t0) / 1000) for e in replay_recording(recording)
                if e.scope == "group" and e.group == "kx"]
    assert verdicts and verdicts[0][0] == "storm", verdicts
    assert verdicts[0][1] <= min(first_kill) + 25, (verdicts, min(first_kill))
    assert "scale_out" not in {v for v, _ in verdicts} and "formation" not in {v for v, _ in verdicts}, verdicts


@pytest.mark.parametrize("seed", (1, 2, 3))
def test_members_killed_after_their_assignment_are_a_storm_before_the_first_ghost_expires(tmp_path, monkeypatch,
                                                                                          seed):
    """storm_crashloop's rule (each instance dies a few seconds after its first assignment) on the consumer
    protocol, every death a SIGKILL, one name per slot. The killed members keep their partitions until their
    45 s sessions expire, so the new instances get none and live on: the log says nothing after their joins.
    What it does say is that the killed ones followed no epoch bump since; once that silence is certain (20 s)
    the storm is called, from the heartbeat tick, well before the first ghost's session expires."""
    from streaming.simulator import scenarios as sc
    from streaming.simulator.clients import ConsumerConfig
    from streaming.simulator.recording import write_recording
    from streaming.simulator.simulation import Simulation
    from streaming.simulator.topics import TopicSpec

    def setup(sim):
        for slot in range(3):
            cfg = ConsumerConfig(group="ax", client_id=f"ax-m{slot + 1}", topics=("ax-orders",), protocol="consumer",
                                 assignor="uniform", commit="sync")
            sc._flapper(sim, cfg, first_s=2.0 + slot * 0.3, until_s=90.0, live_s=(3.0, 8.0), down_s=(1.0, 3.0),
                        kill_share=1.0, after_assignment=True, no_assignment_s=400)

    monkeypatch.setitem(sc.SCENARIOS, "ax-loop", sc.Scenario("ax-loop", "killed after assignment",
                                                               sc._t((TopicSpec("ax-orders", 6, 50.0), 0)), setup))
    sim = Simulation(["ax-loop"], seed=seed)
    folder = write_recording(sim, tmp_path / "rec", 300_000)
    kills = sorted(e["t_ms"] for e in sim.client_events if e["event"] == "member_exit")
    verdicts = [(e.verdict, e.t_ms) for e in replay_recording(load_recording(folder))
                if e.scope == "group" and e.group == "ax"]
    assert verdicts and verdicts[0][0] == "storm", verdicts
    assert verdicts[0][1] <= kills[0] + 30_000 < kills[0] + 45_000, (verdicts[0][1] - kills[0])


def test_a_killed_member_holding_partitions_is_told_from_a_stuck_one():
    """Both are STOP (nothing consumes the partition), but the reason an SRE reads differs: a SIGKILLed
    consumer-protocol member no longer follows the group's epoch and holds its partitions only until its session
    expires; a member whose processing hangs while its heartbeat thread keeps it in the group is stuck. In the
    KIP-848 recording nobody hangs, and the members left holding partitions are the flapper's killed instances; in
    the stalled-consumer recording one member hangs, and nobody is killed."""
    kip848 = [e for e in replay_recording(load_recording(_path())) if e.scope == "partition" and e.verdict == "STOP"]
    silent = [e for e in kip848 if "stopped heartbeating" in e.reason]
    assert silent and all(e.group == "k8-storm" and e.reason.startswith("owner k8s-f@") for e in silent), silent
    assert not [e for e in kip848 if "stuck consumer" in e.reason], kip848
    stalled = [e for e in replay_recording(load_recording(_path().parent / "stalled_consumer"))
               if e.scope == "partition" and e.verdict == "STOP"]
    stuck = [e for e in stalled if "stuck consumer" in e.reason]
    assert stuck and {e.group for e in stuck} == {"stl-stuck"}, stalled
    assert not [e for e in stalled if "stopped heartbeating" in e.reason], stalled
