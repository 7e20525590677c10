"""The heartbeat emitter (``streaming.kafka.heartbeat``): what a tick lists and sends, and the heartbeat topic,
created with its retention or corrected when something else created it first, the first tick never failing because
of either.

Against librdkafka's mock cluster (a real Kafka-protocol broker): its metadata honours AllowAutoTopicCreation, so
the tests show groupscope's lookups no longer create topics, and that a topic created beforehand with the broker's
defaults does not fail or delay the first tick. The mock has no controller, so it cannot answer CreateTopics,
DescribeConfigs or IncrementalAlterConfigs (librdkafka waits for a controller and times out): the create-race
(TOPIC_ALREADY_EXISTS) and the configuration correction are checked against a stand-in admin client below.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from concurrent.futures import Future

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from streaming.config import load_settings
from streaming.kafka.heartbeat import HeartbeatEmitter, _one_line, config_fixes
from streaming.kafka.mock_cluster import MockCluster
from streaming.schema.heartbeat_format import decode_heartbeat
from tests.cli_helpers import REPO

TOPIC = "groupscope-heartbeat"
T0 = 1_767_225_600_000


def _exists(bootstrap: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap, "allow.auto.create.topics": "false", "log_level": "3"})
    t = admin.list_topics(topic, timeout=10).topics[topic]
    return 0 if t.error is not None else len(t.partitions)


def test_a_topic_created_beforehand_with_broker_defaults_does_not_fail_or_delay_the_first_tick(caplog):
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    with MockCluster(1) as mc:
        mc.create_topic("events", 2)
        mc.create_topic(TOPIC, 1)  # "something else" created it, with the broker's defaults
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, interval_s=1)
        started = time.monotonic()
        assert emitter.tick(), emitter.status.last_error
        assert time.monotonic() - started < 5, "the configuration check must not hold up the first tick"
        assert emitter.status.partitions >= 2
        # The mock cannot answer DescribeConfigs: the check gives up after its timeout, says so once, ticks go on.
        deadline = time.monotonic() + 30
        while emitter.config_problem is None and time.monotonic() < deadline:
            assert emitter.tick(), emitter.status.last_error
            time.sleep(0.5)
        assert emitter.config_problem and emitter.config_problem.startswith("cannot read its configuration")
        assert emitter.tick() and emitter.tick()
        warned = [r.getMessage() for r in caplog.records if "heartbeat topic" in r.getMessage()
                  and r.levelno == logging.WARNING]
        assert len(warned) == 1 and "heartbeats go on with the topic as it is" in warned[0]
        assert emitter.status.failures == 0
        emitter.stop()


def test_with_the_check_off_the_topic_is_used_as_it_is_and_nothing_is_said(caplog):
    """heartbeat.check_topic_config: false, for a broker that cannot describe topic configurations (the demo's
    embedded one): no DescribeConfigs is sent, so no warning after its timeout."""
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    with MockCluster(1) as mc:
        mc.create_topic("events", 2)
        mc.create_topic(TOPIC, 1)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, interval_s=1,
                                   check_topic_config=False)
        emitter.access.timeout_s = 2.0  # the request timeout a check would wait out (10 s by default)
        deadline = time.monotonic() + 5  # past it, with ticks to spare
        while time.monotonic() < deadline:
            assert emitter.tick(), emitter.status.last_error
            time.sleep(0.5)
        assert emitter.config_problem is None
        assert not [r for r in caplog.records if "heartbeat topic" in r.getMessage()], caplog.records
        emitter.stop()


def test_looking_the_topic_up_does_not_create_it_with_broker_defaults():
    with MockCluster(1) as mc:
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, interval_s=1)
        emitter.access.timeout_s = 2.0
        assert emitter.access.partitions(TOPIC) == []
        # The mock would auto-create it (4 partitions, no retention) for a lookup that allowed it.
        assert _exists(mc.bootstrap_servers, TOPIC) == 0
        assert not emitter.tick()  # the mock cannot CreateTopics: reported, retried at the next tick
        assert "heartbeat topic groupscope-heartbeat does not exist and cannot be created" in emitter.status.last_error
        assert _exists(mc.bootstrap_servers, TOPIC) == 0
        emitter.stop()


def test_config_fixes():
    wanted = {"retention.ms": "86400000", "cleanup.policy": "delete"}
    assert config_fixes({"retention.ms": "604800000", "cleanup.policy": "delete"}, wanted) == \
        {"retention.ms": "86400000"}
    assert config_fixes({"retention.ms": "86400000", "cleanup.policy": "compact"}, wanted) == \
        {"cleanup.policy": "delete"}
    assert config_fixes(dict(wanted), wanted) == {}


class _Entry:
    def __init__(self, value: str) -> None:
        self.value = value


def _done(value=None, exc: BaseException | None = None) -> Future:
    f: Future = Future()
    if exc is not None:
        f.set_exception(exc)
    else:
        f.set_result(value)
    return f


class _AutoCreatingBrokerAdmin:
    """Stand-in for the admin client of a broker that auto-created the topic between lookup and create (the mock
    cannot answer these requests). Records what the emitter asked."""

    def __init__(self, real: AdminClient) -> None:
        self.real = real  # metadata lookups go to the mock cluster
        self.altered: list[dict[str, str]] = []

    def list_topics(self, *args, **kwargs):
        return self.real.list_topics(*args, **kwargs)

    def create_topics(self, topics, request_timeout=None):
        return {t.topic: _done(exc=KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists")))
                for t in topics}

    def describe_configs(self, resources, request_timeout=None):
        return {r: _done({"retention.ms": _Entry("604800000"), "cleanup.policy": _Entry("delete")})
                for r in resources}

    def incremental_alter_configs(self, resources, request_timeout=None):
        for r in resources:
            self.altered.append({e.name: e.value for e in r.incremental_configs})
        return {r: _done(None) for r in resources}


def test_topic_created_meanwhile_is_success_and_its_retention_is_corrected():
    with MockCluster(1) as mc:
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic="hb-race", interval_s=1,
                                   retention_ms=3_600_000)
        real_admin = emitter.access._admin
        stand_in = _AutoCreatingBrokerAdmin(real_admin)
        emitter.access._admin = stand_in
        assert emitter.ensure_topic()
        emitter._poll_config()  # the description has come: the correction is sent
        emitter._poll_config()  # and acknowledged
        assert stand_in.altered == [{"retention.ms": "3600000"}]
        assert emitter.config_problem is None and emitter._config_state == "corrected"
        emitter.access._admin = real_admin
        emitter.stop()


def test_a_topic_that_cannot_be_created_is_said_once_and_is_no_outage(caplog):
    """The mock cannot answer CreateTopics (as a broker that denies this client CreateTopics, or rejects the name):
    one warning that names the topic and the fix, not a "Kafka unreachable" and a warning every tick; the
    emitter reports Kafka up and the problem for /ready. Once the topic exists, heartbeats start, said once."""
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    with MockCluster(1) as mc:
        mc.create_topic("events", 2)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers, "socket.timeout.ms": "2000"},
                                   topic=TOPIC, interval_s=1)
        emitter.access.timeout_s = 2.0
        assert not emitter.tick() and not emitter.tick()
        assert emitter.topic_problem and emitter.topic_problem.startswith(
            f"heartbeat topic {TOPIC} does not exist and cannot be created (")
        assert emitter.status.kafka_up and emitter.status.last_error == emitter.topic_problem
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1, warned
        assert "create it (1 partition, cleanup.policy=delete, retention.ms=" in warned[0]
        assert not any("unreachable" in m for m in warned)
        mc.create_topic(TOPIC, 1)
        assert emitter.tick(), emitter.status.last_error
        assert emitter.topic_problem is None
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert said[1:] == [f"heartbeat topic {TOPIC} exists now; heartbeats start"], said
        emitter.stop()


def _heartbeat_once(bootstrap: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streaming.commands.cli", "heartbeat", "--once", "--bootstrap",
                           bootstrap], cwd=REPO, capture_output=True, text=True, timeout=90)


def test_heartbeat_once_says_its_outcome_in_one_line():
    """``groupscope heartbeat --once`` is a check an operator runs by hand: one line, the fix included when the
    topic is missing (not a log line and then the same problem again in the summary), exit 1; with the topic
    there, one line saying what was sent, exit 0."""
    with MockCluster(1) as mc:
        mc.create_topic("events", 3)
        missing = _heartbeat_once(mc.bootstrap_servers)
        assert missing.returncode == 1
        assert missing.stdout == ""
        lines = missing.stderr.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"groupscope heartbeat: nothing sent: heartbeat topic {TOPIC} does not exist and "
                                   "cannot be created ("), lines
        assert lines[0].endswith(": create it (1 partition, cleanup.policy=delete, retention.ms=86400000) or allow "
                                 "this client to create topics"), lines
        mc.create_topic(TOPIC, 1)
        sent = _heartbeat_once(mc.bootstrap_servers)
        assert (sent.returncode, sent.stdout) == (0, "")
        assert sent.stderr.splitlines() == [f"groupscope heartbeat: sent the end offsets of 3 partitions to {TOPIC}"]


# ---- what a tick lists and sends ---------------------------------------------------------------------------------

def test_the_offsets_topic_and_the_included_topics_are_watched_never_the_heartbeat_topic():
    with MockCluster(1) as mc:
        for name, partitions in (("__consumer_offsets", 2), ("orders", 2), ("order-audit", 1), ("payments", 1),
                                 ("__internal", 1), (TOPIC, 1)):
            mc.create_topic(name, partitions)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, include="^ord",
                                   exclude="audit|^__(?!consumer_offsets$)", check_topic_config=False)
        assert emitter.watched_partitions() == [("__consumer_offsets", 0), ("__consumer_offsets", 1),
                                                ("orders", 0), ("orders", 1)]
        everything = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, include=".*",
                                      check_topic_config=False)
        assert {t for t, _ in everything.watched_partitions()} == {"__consumer_offsets", "orders", "order-audit",
                                                                   "payments"}, "internal topics and its own left out"
        emitter.stop()
        everything.stop()


def test_a_tick_sends_every_watched_partitions_end_offsets_in_chunks_of_the_configured_size():
    with MockCluster(1) as mc:
        mc.create_topic("__consumer_offsets", 1)
        mc.create_topic("orders", 3)
        mc.create_topic(TOPIC, 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(6):
            p.produce("orders", value=b"%d" % i, partition=i % 3 if i < 5 else 0)  # 3, 2 and 1 records
        p.flush(10)
        emitter = HeartbeatEmitter({"bootstrap.servers": mc.bootstrap_servers}, topic=TOPIC, chunk_partitions=3,
                                   check_topic_config=False, probe_tails=False, probe_oldest=False,
                                   clock=lambda: T0 / 1000)
        assert emitter.tick() and emitter.tick(), emitter.status.last_error
        status = emitter.status
        assert (status.ticks, status.failures, status.last_tick_ms, status.partitions, status.kafka_up) == (
            2, 0, T0, 4, True)
        emitter.stop()
        consumer = Consumer({"bootstrap.servers": mc.bootstrap_servers, "group.id": "t", "log_level": 3})
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        beats = []
        while len(beats) < 4:
            m = consumer.poll(10)
            assert m is not None, f"only {len(beats)} heartbeat messages"
            assert m.key() == emitter.emitter_id.encode() and m.timestamp()[1] == T0
            beats.append(decode_heartbeat(m.value()))
        consumer.close()
        assert [(hb.seq, hb.chunk, hb.chunks, len(hb.ends)) for hb in beats] == [(1, 0, 2, 3), (1, 1, 2, 1),
                                                                                 (2, 0, 2, 3), (2, 1, 2, 1)]
        ends = {(t, q): (hw, lso, low) for hb in beats[:2] for t, q, hw, lso, low in hb.ends}
        assert ends == {("__consumer_offsets", 0): (0, 0, 0), ("orders", 0): (3, 3, 0), ("orders", 1): (2, 2, 0),
                        ("orders", 2): (1, 1, 0)}


def test_the_configuration_section_makes_the_emitter_it_describes():
    settings = load_settings(None, {"heartbeat": {"topic": "hb-eu", "interval_seconds": 2, "include_topics": "^o",
                                                  "retention_ms": 3_600_000, "probe_transaction_tails": False,
                                                  "tail_probe_window": 50, "oldest_record_partitions": 7}})
    emitter = HeartbeatEmitter.from_settings({"bootstrap.servers": "127.0.0.1:9"}, settings.heartbeat, "__co")
    assert (emitter.topic, emitter.interval_s, emitter.include.pattern, emitter.offsets_topic) == (
        "hb-eu", 2.0, "^o", "__co")
    assert emitter.wanted_config() == {"retention.ms": "3600000", "cleanup.policy": "delete"}
    assert emitter.tails is None and emitter.oldest is not None and emitter.oldest.max_partitions == 7
    assert emitter.exclude.search("groupscope-heartbeat") and emitter.exclude.search("__transaction_state")
    assert not emitter.exclude.search("__consumer_offsets")


def test_a_kafka_error_is_said_by_its_own_words_in_one_line():
    assert _one_line(KafkaException(KafkaError(KafkaError._TRANSPORT, "Broker transport failure"))) == \
        "Broker transport failure"
    assert _one_line(RuntimeError("first line\nsecond line")) == "first line"
    assert _one_line(TimeoutError()) == "TimeoutError"
