"""The heartbeat topic: created with its retention, or corrected when something else created it first, and the first
tick never fails because of either.

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

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from streaming.kafka.heartbeat import HeartbeatEmitter, config_fixes
from streaming.kafka.mock_cluster import MockCluster
from tests.cli_helpers import REPO

TOPIC = "groupscope-heartbeat"


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
        deadline = time.monotonic() + 15  # past the admin request timeout the check would have waited out
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
