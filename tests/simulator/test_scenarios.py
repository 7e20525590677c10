"""Acceptance: every scenario's records decode and rebuild, through the group model, into exactly the groups the
simulator says it simulated (state, members, assignments, epochs/generations, offsets), at several moments.

Replay is the raw segment-file path (batch headers, transactional commits held per producer id, markers applied).
The oracle is ``Simulation.expected()``, kept by the coordinator emulation as it writes, never by replaying records.
Moments: 10 s (first generations done), 35 s, 65 s (after most scenario events), 120 s (end).
"""

from __future__ import annotations

import pytest

from protocol.codec import decode_record
from streaming.model.describe import describe
from streaming.model.shard import CoordinatorModel
from streaming.offline.segment_replay import replay_segments
from streaming.simulator import (
    MemorySink,
    SegmentSink,
    Simulation,
    project,
    scenario_names,
)
from streaming.simulator.sinks import Append, Marker

MOMENTS_MS = (10_000, 35_000, 65_000, 120_000)
SCENARIOS = [n for n in scenario_names() if n != "scale"]


def _diff(got: dict, exp: dict) -> str:
    lines = []
    for gid in sorted(set(got) | set(exp)):
        g, e = got.get(gid), exp.get(gid)
        if g != e:
            if g is None or e is None:
                lines.append(f"{gid}: {'missing from the model' if g is None else 'unexpected in the model'}")
                continue
            lines += [f"{gid}.{k}: model {g[k]!r} != simulator {e[k]!r}" for k in e if g.get(k) != e[k]]
    return "\n".join(lines)


def _check(sim: Simulation, sink: MemorySink) -> None:
    model = sink.replay_into(CoordinatorModel())
    anomalies = [e for e in model.drain_events() if type(e).__name__ == "Anomaly"]
    assert not anomalies, anomalies[:3]
    got, exp = project(describe(model)), sim.expected()
    assert got == exp, _diff(got, exp)


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_rebuilds_into_the_simulated_groups(name):
    sim = Simulation([name], seed=11)
    sink = MemorySink()
    sizes = []
    for t in MOMENTS_MS:
        sim.run_until(t, sink)
        _check(sim, sink)
        sizes.append(len(sim.expected()))
    assert max(sizes) > 0, "a scenario must have groups to compare"


def test_all_scenarios_combined_and_replayed_from_segment_files(tmp_path):
    # Segment files are what `groupscope describe --segments` reads: same groups as the in-memory replay.
    sim = Simulation(["all"], seed=5)
    sink = SegmentSink(tmp_path)
    sim.run_until(90_000, sink)
    sink.close()
    model, report = replay_segments(tmp_path)
    assert not report.problems
    assert report.markers > 0  # the transactional scenario wrote COMMIT/ABORT markers
    got, exp = project(describe(model)), sim.expected()
    assert got == exp, _diff(got, exp)


def test_intermediate_truth_matches_a_replay_cut_at_that_moment():
    # The truth at 40 s must equal a replay of the full log cut at the log end offsets seen at 40 s.
    sim = Simulation(["kip848", "transactional", "storm"], seed=2)
    sink = MemorySink()
    sim.run_until(40_000, sink)
    exp40, hw40 = sim.expected(), sink.high_watermarks()
    sim.run_until(100_000, sink)
    got = project(describe(sink.replay_into(CoordinatorModel(), until=hw40)))
    assert got == exp40, _diff(got, exp40)


def _bytes(name: str, seed: int) -> list:
    sim = Simulation([name], seed=seed)
    sink = MemorySink()
    sim.run_until(60_000, sink)
    return [(e.partition, e.base_offset, e.timestamp, tuple(e.records), e.producer_id, e.transactional)
            if isinstance(e, Append) else (e.partition, e.offset, e.timestamp, e.producer_id, e.commit)
            for e in sink.entries]


def test_same_seed_same_bytes_other_seed_other_bytes():
    assert _bytes("all", 3) == _bytes("all", 3)
    assert _bytes("all", 3) != _bytes("all", 4)


@pytest.mark.parametrize("name, check", [
    # why each scenario is what its name says, read from its records / truth
    # 400 msg/s produced, 300 msg/s consumed: ~100 msg/s of lag accumulate (minus the initial 3 s delay)
    ("lagging", lambda sim: sum(sim.end_offsets()[(t, int(p))] - o[0] for k, o in
                                sim.expected()["lagging"]["offsets"].items() for t, p in [k.rsplit(":", 1)]) > 9000),
    ("stopped", lambda sim: sim.expected()["stopped"]["state"] == "EMPTY"),
    ("deletion", lambda sim: set(sim.expected()) == set()),
    # epochs: 3 joins, a leave, a close, a session expiry; nobody left
    ("kip848", lambda sim: (sim.expected()["kip848-uniform"]["generation"], sim.expected()["kip848-uniform"]["state"])
     == (6, "EMPTY")),
    ("static-restart", lambda sim: [m["group_instance_id"] for m in sim.expected()["static"]["members"].values()]
     == ["static-instance-1"]),
])
def test_scenario_semantics(name, check):
    sim = Simulation([name], seed=1)
    sim.run_until(120_000, MemorySink())
    assert check(sim)


def test_scenarios_do_what_they_say_in_the_log():
    sim = Simulation(["storm", "stalled", "transactional", "partitions-added"], seed=1)
    sink = MemorySink()
    sim.run_until(120_000, sink)
    gens: dict[str, list[int]] = {}
    for e in sink.entries:
        if isinstance(e, Append):
            for k, v in e.records:
                r = decode_record(k, v)
                if r.type == 2 and r.value is not None:
                    gens.setdefault(r.key.group, []).append(r.value.generation)
    # A rebalance storm: many generations in two minutes. Not more than one per ~10 s once the flapper's SIGKILLed
    # ghosts hold the join phases for their 10 s session, as in storm_crashloop (10 generations in 164 s).
    assert len(gens["storm"]) >= 10
    assert max(gens["stalled"]) >= 3  # the stalled member left (max.poll.interval) and rejoined later
    markers = [e for e in sink.entries if isinstance(e, Marker)]
    assert {m.commit for m in markers} == {True, False}
    g = sim.coordinator.groups["added-kip848"]
    assert g.subscription_metadata == {"added-events": 8}
    assert sorted(tp for m in sim.expected()["added-classic"]["members"].values() for tp in m["assignment"]) == \
        [["added-events", p] for p in range(8)]


def test_replay_from_earliest_drains_the_backlog():
    sim = Simulation(["replay-from-earliest"], seed=1)
    sink = MemorySink()
    sim.run_until(10_000, sink)
    early = sim.expected()["replay-earliest"]["offsets"]
    sim.run_until(120_000, sink)
    late = sim.expected()["replay-earliest"]["offsets"]
    assert all(v[0] < 20_000 for v in early.values())
    assert all(late[k][0] > early[k][0] for k in early)
