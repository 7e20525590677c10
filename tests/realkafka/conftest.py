"""Fixtures: a real Apache Kafka broker per tested version, started once per session and stopped at its end.

Each version in ``tested_versions()`` (both ends of the supported range unless ``$REALKAFKA_VERSIONS``
names others) gets its own broker on free loopback ports. A missing Java or Maven, a version that cannot be fetched
or a broker that does not start fails the tests that need it with one line (and the broker's last log lines):
these tests never skip.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.realkafka.broker import BrokerFailed, KafkaBroker
from tests.realkafka.install import KafkaInstall, KafkaUnavailable, kafka_install, tested_versions


def _install(version: str) -> KafkaInstall:
    try:
        return kafka_install(version)
    except KafkaUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def _running(broker: KafkaBroker) -> Iterator[KafkaBroker]:
    """Starts ``broker`` (a failed start fails the test with the broker's log) and stops it afterwards."""
    try:
        broker.start()
    except BrokerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    yield broker
    broker.stop()


@pytest.fixture(scope="session", params=tested_versions())
def kafka(request, tmp_path_factory) -> Iterator[KafkaBroker]:
    """A running broker of each tested version, shared by the tests of a session. Tests create their own topics
    and groups with names of their own, so they do not see each other's."""
    yield from _running(KafkaBroker(_install(request.param), tmp_path_factory.mktemp(f"kafka-{request.param}")))


@pytest.fixture(scope="session")
def newest_kafka_install() -> KafkaInstall:
    """The newest tested version's jars, for tests that start (and stop, kill or freeze) a broker of their own."""
    return _install(max(tested_versions(), key=lambda v: tuple(int(p) for p in v.split("."))))


@pytest.fixture
def own_kafka(newest_kafka_install, tmp_path) -> Iterator[KafkaBroker]:
    """A broker this test alone uses, for outages, restarts and crashes; stopped when the test ends."""
    yield from _running(KafkaBroker(newest_kafka_install, tmp_path / "kafka"))
