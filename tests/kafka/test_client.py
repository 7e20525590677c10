"""The Kafka clients as groupscope configures them (``streaming.kafka.client``): the settings it forces or adds to
the user's ``kafka`` section, the filter that keeps librdkafka's repeated log lines to one, and the one line that
says a cluster went away and came back."""

from __future__ import annotations

import logging
import socket
import types

import pytest

from streaming.kafka import client
from streaming.kafka.client import (LIBRDKAFKA_LOGGER, RECONNECT, KafkaAccess, KafkaUnavailable, Reachability,
                                    consumer_config, librdkafka_logger, with_logger)


def test_librdkafka_lines_are_deduplicated_and_rate_limited():
    logger = librdkafka_logger()
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    try:
        for n in range(50):
            logger.error("FAIL [rdkafka#producer-%d] [thrd:b:9092/1]: b:9092/1: Disconnected (after %dms in state UP)",
                         n, n)
        logger.error("FAIL [rdkafka#producer-1] [thrd:b:9092/1]: b:9092/1: something else")
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 2, seen
    assert "Disconnected" in seen[0] and "something else" in seen[1]


def test_every_client_retries_a_returning_broker_within_a_second_unless_the_user_says_otherwise():
    """librdkafka's default back-off grows to 10 s between connection attempts during an outage: the heartbeat
    emitter reached a broker back from a 55 s stop 5 s late (tests/realkafka/test_outages.py). The readers' and the
    emitter's clients cap it at 1 s; a value in the user's ``kafka`` section is kept."""
    assert RECONNECT == {"reconnect.backoff.max.ms": "1000"}
    assert consumer_config({"bootstrap.servers": "b:9092"})["reconnect.backoff.max.ms"] == "1000"
    assert consumer_config({"bootstrap.servers": "b:9092", "reconnect.backoff.max.ms": 5000})[
        "reconnect.backoff.max.ms"] == "5000"


# ---- the consumer's configuration ----------------------------------------------------------------------------------

def test_the_settings_exactly_once_replay_needs_override_the_users():
    """A range read stores no offsets and commits nothing: ``enable.auto.commit`` on would move a group named by the
    user, and stored offsets would be committed on close."""
    conf = consumer_config({"bootstrap.servers": "b:9092", "enable.auto.commit": "true",
                            "enable.auto.offset.store": True})
    assert conf["enable.auto.commit"] == "false" and conf["enable.auto.offset.store"] == "false"


def test_the_isolation_level_is_the_callers_whatever_the_user_wrote():
    kafka = {"bootstrap.servers": "b:9092", "isolation.level": "read_uncommitted"}
    assert consumer_config(kafka)["isolation.level"] == "read_committed"
    assert consumer_config(kafka, isolation="read_uncommitted")["isolation.level"] == "read_uncommitted"


def test_user_values_are_passed_as_strings_and_a_group_id_is_made_up_only_when_none_is_given():
    conf = consumer_config({"bootstrap.servers": "b:9092", "fetch.max.bytes": 1_000_000, "fetch.queue.backoff.ms": 5})
    assert conf["fetch.max.bytes"] == "1000000", "librdkafka takes string values"
    assert conf["fetch.queue.backoff.ms"] == "5", "the throughput default is the user's to change"
    made_up = {consumer_config({"bootstrap.servers": "b:9092"})["group.id"] for _ in range(3)}
    assert len(made_up) == 3 and all(g.startswith("groupscope-reader-") for g in made_up), made_up
    assert consumer_config({"group.id": "mine"})["group.id"] == "mine"


def test_with_logger_routes_librdkafka_lines_unless_the_caller_chose_a_logger():
    mine = logging.getLogger("elsewhere")
    assert with_logger({"bootstrap.servers": "b:9092"})["logger"] is librdkafka_logger()
    assert with_logger({"logger": mine})["logger"] is mine


# ---- librdkafka's log lines ----------------------------------------------------------------------------------------

def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord(LIBRDKAFKA_LOGGER, logging.ERROR, __file__, 0, message, None, None)


def test_a_refused_connection_is_counted_with_its_reason_and_not_printed():
    kept = client._Librdkafka()
    line = "FAIL [rdkafka#producer-1] [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to " \
           "ipv4#127.0.0.1:1 failed: Connection refused (after 0ms in state CONNECT)"
    assert kept.filter(_record(line)) is False
    assert kept.filter(_record(line.replace("producer-1", "producer-2"))) is False
    assert (kept.connect_failures, kept.last_failure_reason) == (2, "Connection refused")


def test_a_name_that_does_not_resolve_is_named_in_the_reason():
    kept = client._Librdkafka()
    line = "FAIL [rdkafka#consumer-3] [thrd:kafka.invalid:9092/bootstrap]: kafka.invalid:9092/bootstrap: Failed to " \
           "resolve 'kafka.invalid:9092': Name or service not known (after 2ms in state CONNECT)"
    assert kept.filter(_record(line)) is False
    assert kept.last_failure_reason == "cannot resolve kafka.invalid:9092: Name or service not known"


def test_a_listener_that_is_not_kafka_is_counted_for_the_probe_and_kept_out():
    kept = client._Librdkafka()
    line = "RECV [rdkafka#producer-1] [thrd:b:80/bootstrap]: b:80/bootstrap: Invalid response size " \
           "1213486160 (0..100000000): increase receive.message.max.bytes"
    assert kept.filter(_record(line)) is False
    assert kept.not_kafka_answers == 1 and kept.connect_failures == 0


def test_a_repeated_line_is_let_through_again_after_the_interval_with_how_many_were_held_back(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(client, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    kept = client._Librdkafka(every_s=60.0)
    line = "FAIL [rdkafka#producer-%d] [thrd:b:9092/1]: b:9092/1: Disconnected (after %dms in state UP)"
    assert kept.filter(_record(line % (1, 10)))
    for n in range(2, 6):  # the same problem, other numbers: four held back
        now[0] += 10
        assert not kept.filter(_record(line % (n, n)))
    now[0] = 161.0  # a minute after the first one went through
    again = _record(line % (9, 9))
    assert kept.filter(again)
    assert again.getMessage().endswith("Disconnected (after 9ms in state UP) (4 more like it in the last 60 s)")
    now[0] += 1
    assert not kept.filter(_record(line % (10, 10))), "a new interval starts with the line that went through"


# ---- one line when a cluster goes and one when it comes back -------------------------------------------------------

class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((record.levelno, record.getMessage()))


@pytest.fixture
def lines():
    handler = _Lines()
    logger = logging.getLogger("tests.kafka.reachability")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield logger, handler.lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = True


def test_an_outage_is_two_warnings_whatever_the_number_of_failed_attempts(lines):
    logger, said = lines
    now = [1_767_225_600.0]  # 2026-01-01 00:00:00 UTC
    reach = Reachability("k:9092", logger, clock=lambda: now[0])
    reach.reached()
    assert reach.up and said == []
    reach.failed('KafkaError{code=_TRANSPORT,val=-195,str="Local: Broker transport failure"}')
    now[0] += 5
    reach.failed("again")
    assert not reach.up
    now[0] += 37
    reach.reached()
    reach.reached()
    assert said == [(logging.WARNING, "Kafka unreachable at k:9092 since 2026-01-01 00:00:00 UTC (Local: Broker "
                                      "transport failure)"),
                    (logging.WARNING, "Kafka reachable again after 42 s")]


def test_the_outage_starts_when_the_failed_attempt_began(lines):
    logger, said = lines
    reach = Reachability("k:9092", logger, clock=lambda: 1_767_225_660.0)
    reach.failed("timed out", since=1_767_225_630.0)
    reach.reached()
    assert [m for _, m in said] == ["Kafka unreachable at k:9092 since 2026-01-01 00:00:30 UTC (timed out)",
                                    "Kafka reachable again after 30 s"]


def test_waiting_for_a_closed_port_ends_in_one_line_naming_the_refusal():
    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        access = KafkaAccess({"bootstrap.servers": f"127.0.0.1:{port}"})
        with pytest.raises(KafkaUnavailable) as err:
            access.wait_reachable(timeout_s=2.5)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"cannot reach Kafka at 127.0.0.1:{port}: connection refused ("), line
    assert line.endswith(" s)") and "attempts in" in line, line


def test_the_servers_named_in_its_lines_are_the_users_or_a_question_mark():
    assert KafkaAccess({"bootstrap.servers": "b:9092"}).bootstrap == "b:9092"
    assert KafkaAccess({}).bootstrap == "?"
