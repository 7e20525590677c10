"""Second mode: real consumers. Pure parts here; the run itself is in tests/realkafka/test_real_consumers.py."""



from streaming.simulator.real_consumers import (
    REAL_SCENARIOS,
    RealConsumerSpec,
    consumer_config,
    plan,
)


def test_plan_is_seeded_and_covers_classic_and_kip848():
    topics, specs = plan(["steady", "kip848", "static-restart", "lagging"], seed=1)
    assert plan(["steady", "kip848", "static-restart", "lagging"], seed=1) == (topics, specs)
    assert {s.protocol for s in specs} == {"classic", "consumer"}
    assert {s.assignor for s in specs if s.protocol == "classic"} >= {"range", "roundrobin", "cooperative-sticky"}
    assert {t.name for t in topics} == {t for s in specs for t in s.topics}
    assert plan(["deletion"], seed=1) == ([], [])  # scenarios without a real-consumer form are skipped


def test_consumer_config_maps_the_spec_to_librdkafka_settings():
    conf = consumer_config(RealConsumerSpec("g", "c1", ("t",), protocol="consumer", assignor="range",
                                            commit="sync"), "k:9092", {"security.protocol": "SSL"})
    assert conf["group.protocol"] == "consumer" and conf["group.remote.assignor"] == "range"
    assert conf["enable.auto.commit"] == "false" and conf["security.protocol"] == "SSL"
    assert "partition.assignment.strategy" not in conf  # not allowed with group.protocol=consumer
    conf = consumer_config(RealConsumerSpec("g", "c1", ("t",), instance_id="i-1", stall_after_s=5), "k:9092")
    assert conf["group.instance.id"] == "i-1" and conf["max.poll.interval.ms"] == "30000"
    assert set(REAL_SCENARIOS) <= {"steady", "lagging", "stalled", "kip848", "storm", "static-restart"}

