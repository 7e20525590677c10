"""A Spark session with Delta's real jars for the delta-spark writer's tests of this package (one JVM for all)."""

from __future__ import annotations

import pytest

from streaming.spark.packages import needed_packages, session_conf


@pytest.fixture(scope="package")
def delta_spark_session():
    """local[1] in a JVM of its own, started with delta-spark's jars (fetched with Maven on first use) and Delta's
    SQL extension; the JVM exits after this package's tests, so later sessions start without them."""
    from tests.spark.spark_jars import JarsUnavailable, end_own_jvm, own_jvm_session, spark_jars

    try:
        jars = spark_jars()
    except JarsUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    conf = session_conf(needed_packages(delta_spark=True, builtin_kafka=False), jars.conf(kafka=False),
                        shuffle_partitions=1)
    session = own_jvm_session(conf)
    yield session
    end_own_jvm(session)
