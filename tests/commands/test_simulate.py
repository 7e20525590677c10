"""``groupscope simulate``: options, one-line errors, segment output that the rest of groupscope reads."""

from __future__ import annotations

import time

from click.testing import CliRunner

from streaming.offline.segment_replay import replay_segments
from streaming.commands.simulate import simulate
from streaming.simulator import MemorySink, SegmentSink, Simulation, SimulationRunner


def test_segments_as_fast_as_possible(tmp_path):
    res = CliRunner().invoke(simulate, ["--scenario", "steady,kip848", "--scenario", "transactional", "--seed", "3",
                                        "--speed", "0", "--duration", "60", "--segments", str(tmp_path)])
    assert res.exit_code == 0, res.output
    model, report = replay_segments(tmp_path)
    assert report.records > 100 and report.markers > 0 and not report.problems
    assert {"steady-range", "kip848-uniform", "txn-consumer"} <= {g for s in model for g in s.groups}


def test_bad_options_are_one_line_errors(tmp_path):
    cases = [
        (["--scenario", "nope", "--segments", str(tmp_path)], "unknown scenario 'nope'"),
        (["--scenario", "steady"], "give --bootstrap HOST:PORT"),
        (["--segments", str(tmp_path), "--speed", "0"], "needs --duration"),
        (["--mode", "real-consumers"], "needs --bootstrap"),
        (["--segments", str(tmp_path), "--bootstrap", "x:1"], "not both"),
        (["--segments", str(tmp_path), "--offsets-partitions", "0"], "--offsets-partitions"),
    ]
    for args, text in cases:
        res = CliRunner().invoke(simulate, args)
        assert res.exit_code == 2 and text in res.output, (args, res.output)


def test_runner_paces_simulated_time_and_stops():
    sim = Simulation(["steady"], seed=1)
    sink = MemorySink()
    runner = SimulationRunner(sim, sink, speed=50.0).start()
    time.sleep(0.3)
    runner.stop()
    assert 5_000 <= sim.elapsed_ms <= 30_000  # ~15 s of simulated time at 50x in 0.3 s
    done = SimulationRunner(Simulation(["scale"], seed=1, scale_groups=50), MemorySink(), speed=0,
                            duration_ms=30_000).start()
    done.join(30)
    assert done.sim.elapsed_ms == 30_000


def test_scale_generation_writes_every_groups_commits(tmp_path):
    # The benchmarks' backlogs come from this mode: 1,000 one-member groups auto-committing 32 partitions each
    # write a commit per partition every 5 s. How fast it generates them is the benchmarks' business, not a test's.
    sim = Simulation(["scale"], seed=1, scale_groups=1000)
    sink = SegmentSink(tmp_path)
    sim.run_until(10_000, sink)
    before = sink.records
    sim.run_until(60_000, sink)
    sink.close()
    assert sink.records - before > 250_000


def test_a_broker_without_the_scenarios_topics_is_one_line_listing_them():
    """librdkafka's mock cluster cannot create topics (as a broker that denies it): the topics the scenario writes
    are listed with their partition counts, and what to do."""
    from streaming.kafka.mock_cluster import MockCluster

    with MockCluster(1) as mc:
        mc.create_topic("__consumer_offsets", 50)
        mc.create_topic("steady-payments", 1)  # too few partitions
        res = CliRunner().invoke(simulate, ["--bootstrap", mc.bootstrap_servers, "--duration", "2"])
    assert res.exit_code == 1, res.output
    assert res.output.splitlines() == [
        f"Error: the broker at {mc.bootstrap_servers} lacks topics the scenarios write, and did not create them: "
        "steady-orders (6 partitions), steady-payments (3 partitions, has 1). Create them first (kafka-topics.sh "
        "--create --topic NAME --partitions N), or run `groupscope demo`, whose embedded broker has them"]
