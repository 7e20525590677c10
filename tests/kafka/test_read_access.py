"""Topics the monitor may not read (``streaming.kafka.read_access``): each said once, left alone for a while, then
asked again; the heartbeat goes on without their records either way."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from streaming.kafka.read_access import NOT_READABLE, UnreadableTopics

MESSAGE = "cannot read topic %s (%s): shown without it"


@pytest.fixture
def said(caplog):
    caplog.set_level(logging.INFO, logger="groupscope.heartbeat")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "groupscope.heartbeat"]


def test_a_failed_topic_is_skipped_until_its_retry_time_then_asked_again(said):
    now = [100.0]
    topics = UnreadableTopics(MESSAGE, retry_after_s=600, clock=lambda: now[0])
    assert not topics.skipped("secret")
    topics.failed("secret", "Broker: Topic authorization failed")
    assert topics.skipped("secret") and not topics.skipped("orders"), "one topic's failure holds back no other"
    now[0] = 699.9
    assert topics.skipped("secret")
    now[0] = 700.0
    assert not topics.skipped("secret"), "asked again once retry_after_s has passed"


def test_each_topic_is_said_once_however_often_it_fails(said):
    now = [0.0]
    topics = UnreadableTopics(MESSAGE, retry_after_s=10, clock=lambda: now[0])
    for _ in range(3):
        topics.failed("secret", "Broker: Topic authorization failed")
        now[0] += 11
    topics.failed("other", "Broker: Unknown topic or partition")
    assert said() == ["cannot read topic secret (Broker: Topic authorization failed): shown without it",
                      "cannot read topic other (Broker: Unknown topic or partition): shown without it"]


def test_a_failure_fails_again_later_from_its_last_failure_not_its_first():
    now = [0.0]
    topics = UnreadableTopics(MESSAGE, retry_after_s=10, clock=lambda: now[0])
    topics.failed("secret", "x")
    now[0] = 10.0
    topics.failed("secret", "x")  # the retry failed as well
    now[0] = 15.0
    assert topics.skipped("secret")


def test_an_exception_is_said_by_its_first_line_or_its_type(said):
    topics = UnreadableTopics(MESSAGE)
    topics.failed("a", RuntimeError("Broker: Topic authorization failed\nmore detail"))
    topics.failed("b", TimeoutError())
    assert said() == ["cannot read topic a (Broker: Topic authorization failed): shown without it",
                      "cannot read topic b (TimeoutError): shown without it"]


def test_it_is_said_at_info_because_the_fallback_works(caplog):
    caplog.set_level(logging.DEBUG, logger="groupscope.heartbeat")
    UnreadableTopics(MESSAGE).failed("secret", KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    assert [r.levelno for r in caplog.records if r.name == "groupscope.heartbeat"] == [logging.INFO]


def test_the_errors_that_mean_not_readable_are_the_acl_and_the_missing_topic():
    """Kafka's error codes 29 (TOPIC_AUTHORIZATION_FAILED) and 3 (UNKNOWN_TOPIC_OR_PARTITION, also what a broker
    answers for a topic the client may not even describe)."""
    assert {int(code) for code in NOT_READABLE} == {29, 3}
