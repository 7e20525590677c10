"""The simulator's oracle: ``expected_groups`` says what Kafka's loader restores from the log, kept as the
coordinator emulation writes (never by replaying); ``project`` brings the model's ``describe`` output to the same
shape. Checked here on a group small enough to work out by hand, and on ``project`` alone."""

from __future__ import annotations

from streaming.model.describe import describe
from streaming.model.shard import CoordinatorModel
from streaming.simulator import MemorySink, SimpleConsumer, Simulation
from streaming.simulator.expected import expected_groups, project


def _simple_group_run() -> tuple[Simulation, MemorySink]:
    """``steady`` plus one "simple" consumer (assign(), no membership) on steady-orders:0, committing every 2 s."""
    sim, sink = Simulation(["steady"], seed=1), MemorySink()
    sim.bind(sink)
    sim.start_client(SimpleConsumer(sim, "solo", (("steady-orders", 0),), interval_ms=2000, metadata="by-hand"))
    sim.run_until(10_000)
    return sim, sink


def test_a_group_with_only_commits_is_an_empty_classic_group_without_protocol():
    # Kafka's loader makes an offsets-only group a classic group in state Empty, generation 0, with no protocol
    # type, no assignor and no members.
    sim, _ = _simple_group_run()
    solo = expected_groups(sim)["solo"]
    assert {k: v for k, v in solo.items() if k != "offsets"} == {
        "type": "CLASSIC", "state": "EMPTY", "protocol_type": None, "assignor": "", "generation": 0,
        "assignment_epoch": None, "leader": None, "members": {}}
    # It started at the partition's end and keeps up (capacity 1000/s against 20 messages/s), committing at 2, 4, 6,
    # 8 and 10 s: the last commit is the end offset at 10 s, with no leader epoch (-1 in the record).
    assert solo["offsets"] == {"steady-orders:0": [sim.topics["steady-orders"].end_offset(0, sim.now_ms), "by-hand",
                                                   None]}


def test_the_oracle_and_the_replayed_log_agree_on_every_group():
    sim, sink = _simple_group_run()
    replayed = project(describe(sink.replay_into(CoordinatorModel())))
    assert replayed == expected_groups(sim)
    assert "solo" in replayed and len(replayed) > 1, "the steady scenario's own groups are compared too"


def test_project_keeps_the_oracles_keys_and_orders_what_kafka_leaves_unordered():
    described = {"groups": {
        "kip848": {"type": "CONSUMER", "state": "STABLE", "protocol_type": None, "partition_assignor": "uniform",
                   "generation": None, "group_epoch": 7, "assignment_epoch": 7, "leader": None,
                   "members": [{"member_id": "m1", "client_id": "c", "host": "/10.0.0.1", "group_instance_id": None,
                                "assignment": [["t", 2], ["t", 0]], "target_assignment": [["t", 2], ["t", 0]],
                                "member_epoch": 7, "member_state": "STABLE"}],
                   "offsets": [{"topic": "t", "partition": 2, "offset": 40, "metadata": "", "leader_epoch": 3},
                               {"topic": "t", "partition": 0, "offset": 10, "metadata": "", "leader_epoch": None}]},
        "classic": {"type": "CLASSIC", "state": "EMPTY", "protocol_type": "consumer", "partition_assignor": "range",
                    "generation": 4, "group_epoch": None, "assignment_epoch": None, "leader": None, "members": [],
                    "offsets": []}}}
    out = project(described)
    # A KIP-848 group's generation is its group epoch; a classic group's is its generation.
    assert (out["kip848"]["generation"], out["classic"]["generation"]) == (7, 4)
    assert out["kip848"]["assignor"] == "uniform" and out["classic"]["assignor"] == "range"
    assert out["kip848"]["members"]["m1"]["assignment"] == [["t", 0], ["t", 2]]
    assert out["kip848"]["members"]["m1"]["target_assignment"] == [["t", 0], ["t", 2]]
    assert list(out["kip848"]["offsets"].items()) == [("t:0", [10, "", None]), ("t:2", [40, "", 3])]
    assert set(out["classic"]) == set(out["kip848"]) == {
        "type", "state", "protocol_type", "assignor", "generation", "assignment_epoch", "leader", "members", "offsets"}
