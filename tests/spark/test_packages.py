"""The Spark packages a configuration needs (``streaming.spark.packages``): the Maven coordinates, the session
settings that load them, and the one line naming what to install when a jar is missing or built for another Spark.
The classpath check is given the jar locations a session would report; no session is started."""

from __future__ import annotations

from importlib import metadata

import pytest

from streaming.spark import packages
from streaming.spark.packages import (DELTA_CATALOG, DELTA_EXTENSION, JarsMissing, SparkPackages, check_session,
                                      kafka_coordinate, needed_packages, session_conf)

DELTA = "io.delta:delta-spark_4.2_2.13:4.4.0"
KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"


# ---- coordinates -------------------------------------------------------------------------------------------------

def test_the_kafka_connector_is_pyspark_own_version_for_scala_2_13():
    import pyspark

    assert kafka_coordinate() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def test_a_job_without_either_feature_needs_no_package():
    assert needed_packages(delta_spark=False, builtin_kafka=False).coordinates == []


def test_delta_jar_is_named_after_the_spark_minor_version_and_the_python_packages_release(monkeypatch):
    monkeypatch.setattr(packages, "_spark_version", lambda: "4.2.0")
    monkeypatch.setattr(packages.metadata, "version", lambda name: "4.4.0")
    monkeypatch.setattr(packages, "_accepted_pyspark", lambda version: None)
    assert packages.delta_coordinate() == DELTA


def test_no_delta_python_package_is_one_line_saying_what_to_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(packages, "_spark_version", lambda: "4.2.0")
    monkeypatch.setattr(packages.metadata, "version", missing)
    with pytest.raises(JarsMissing) as err:
        packages.delta_coordinate()
    assert str(err.value) == ("delta.writer delta-spark needs the delta-spark Python package for pyspark 4.2.0: "
                              "pip install 'delta-spark==4.4.0'")


def test_a_delta_release_without_a_jar_for_this_spark_is_refused(monkeypatch):
    from packaging.specifiers import SpecifierSet

    monkeypatch.setattr(packages, "_spark_version", lambda: "4.2.0")
    monkeypatch.setattr(packages.metadata, "version", lambda name: "4.5.0")
    monkeypatch.setattr(packages, "_accepted_pyspark", lambda version: SpecifierSet(">=4.2,<4.3"))
    with pytest.raises(JarsMissing) as err:
        packages.delta_coordinate()
    assert str(err.value) == ("delta-spark 4.5.0 does not match pyspark 4.2.0 (it accepts pyspark <4.3,>=4.2): "
                              "pip install 'delta-spark==4.4.0'")


def test_a_spark_version_with_no_known_delta_release_points_at_the_extra(monkeypatch):
    from packaging.specifiers import SpecifierSet

    monkeypatch.setattr(packages, "_spark_version", lambda: "4.9.1")
    monkeypatch.setattr(packages.metadata, "version", lambda name: "4.4.0")
    monkeypatch.setattr(packages, "_accepted_pyspark", lambda version: SpecifierSet(">=4.2,<4.3"))
    with pytest.raises(JarsMissing, match=r": pip install 'groupscope\[delta-spark\]'$"):
        packages.delta_coordinate()


# ---- the session's settings --------------------------------------------------------------------------------------

def test_the_coordinates_and_deltas_sql_extension_are_added_to_the_session():
    conf = session_conf(SparkPackages(delta=DELTA, kafka=KAFKA), {"spark.sql.extensions": "com.example.Ext"},
                        shuffle_partitions=3)
    assert conf == {"spark.jars.packages": f"{DELTA},{KAFKA}",
                    "spark.sql.extensions": f"com.example.Ext,{DELTA_EXTENSION}",
                    "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
                    "spark.databricks.delta.snapshotPartitions": "3"}


@pytest.mark.parametrize("given", [{"spark.jars": "/opt/jars/delta.jar"}, {"spark.jars.packages": "a:b:1"}])
def test_jars_the_configuration_names_itself_are_left_as_they_are(given):
    conf = session_conf(SparkPackages(kafka=KAFKA), given)
    assert conf == given


def test_deltas_extension_is_not_added_twice_and_a_users_catalog_is_kept():
    given = {"spark.sql.extensions": DELTA_EXTENSION, "spark.sql.catalog.spark_catalog": "my.Catalog"}
    conf = session_conf(SparkPackages(delta=DELTA), given)
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION
    assert conf["spark.sql.catalog.spark_catalog"] == "my.Catalog"


def test_a_job_without_packages_leaves_the_settings_alone():
    assert session_conf(SparkPackages(), {"spark.x": "1"}) == {"spark.x": "1"}


# ---- the classpath check after the start -------------------------------------------------------------------------

def _classpath(monkeypatch, jars: dict[str, str | None]) -> None:
    """The jar each class is loaded from in the (stand-in) session; None: the class cannot be loaded."""
    monkeypatch.setattr(packages, "class_jar", lambda spark, name: jars.get(name))
    monkeypatch.setattr(packages, "_spark_version", lambda: "4.2.0")


def test_the_matching_jars_pass(monkeypatch):
    _classpath(monkeypatch, {packages._DELTA_CLASS: "file:/ivy/jars/io.delta_delta-spark_4.2_2.13-4.4.0.jar",
                             packages._KAFKA_CLASS: "file:/ivy/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"})
    check_session(object(), SparkPackages(delta=DELTA, kafka=KAFKA))


def test_a_missing_kafka_connector_says_which_coordinate_to_add(monkeypatch):
    _classpath(monkeypatch, {})
    with pytest.raises(JarsMissing) as err:
        check_session(object(), SparkPackages(kafka=KAFKA))
    assert str(err.value) == (f"source.builtin_kafka_source needs Spark's Kafka connector on the classpath: add "
                              f"{KAFKA} to spark.jars.packages (spark-submit --packages {KAFKA})")


def test_a_missing_delta_jar_says_which_coordinate_to_add(monkeypatch):
    _classpath(monkeypatch, {})
    with pytest.raises(JarsMissing, match=r"needs Delta's jar on the classpath: add io\.delta:delta-spark_4\.2_2\.13"):
        check_session(object(), SparkPackages(delta=DELTA))


def test_a_delta_jar_built_for_another_spark_is_named_with_what_to_use_instead(monkeypatch):
    _classpath(monkeypatch, {packages._DELTA_CLASS: "file:/opt/jars/delta-spark_4.0_2.13-4.0.0.jar"})
    with pytest.raises(JarsMissing) as err:
        check_session(object(), SparkPackages(delta=DELTA))
    assert str(err.value) == ("Delta's jar on the classpath is delta-spark 4.0.0 for Spark 4.0, but this is pyspark "
                              f"4.2.0 with the delta-spark 4.4.0 Python package: put {DELTA} on the classpath instead")


def test_a_delta_class_from_a_jar_named_otherwise_is_given_the_benefit_of_the_doubt(monkeypatch):
    _classpath(monkeypatch, {packages._DELTA_CLASS: "file:/opt/app/fat-assembly.jar"})
    check_session(object(), SparkPackages(delta=DELTA))
