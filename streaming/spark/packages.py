"""The Spark packages a configuration needs, and one line naming what to install when they are missing or do not
match.

Two features run on jars that pyspark does not ship: the ``delta-spark`` writer (``io.delta:delta-spark_<spark
major.minor>_2.13``, with ``delta-storage``; its version is the ``delta-spark`` Python package's, whose Python half
calls it) and Spark's own Kafka source (``org.apache.spark:spark-sql-kafka-0-10_2.13`` at pyspark's version).
Spark resolves Maven coordinates itself (``spark.jars.packages``, ``spark-submit --packages``) into its Ivy cache, so
``groupscope run`` adds them to the session it builds, unless the configuration says where the jars come from
(``spark.jars`` or ``spark.jars.packages`` in ``spark.conf``). Under ``spark-submit`` the session exists before
groupscope runs, and only the check after the start applies: a missing class or a jar built for another Spark is
one line, never a ``ClassNotFoundException`` in the middle of the first micro-batch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import metadata
from typing import Mapping

__all__ = ["JarsMissing", "SparkPackages", "delta_coordinate", "kafka_coordinate", "needed_packages",
           "session_conf", "check_session", "class_jar", "DELTA_EXTENSION", "DELTA_CATALOG"]

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_DELTA_CLASS = "io.delta.tables.DeltaTable"
_KAFKA_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
_SCALA = "2.13"
#: The delta-spark release whose jars exist for each Spark minor version pyspark may be (Maven Central publishes
#: ``delta-spark_4.2_2.13`` at 4.4.0 only; a later Python release without its jar would not start).
_DELTA_FOR_SPARK = {"4.2": "4.4.0"}


class JarsMissing(RuntimeError):
    """What to install, in one line."""


@dataclass(frozen=True)
class SparkPackages:
    """The Maven coordinates one job needs, by feature (empty when it needs none)."""

    delta: str | None = None
    kafka: str | None = None

    @property
    def coordinates(self) -> list[str]:
        return [c for c in (self.delta, self.kafka) if c]


def _spark_version() -> str:
    import pyspark

    return pyspark.__version__


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _install_hint(spark: str) -> str:
    wanted = _DELTA_FOR_SPARK.get(_minor(spark))
    return f"pip install 'delta-spark=={wanted}'" if wanted else "pip install 'groupscope[delta-spark]'"


def delta_coordinate() -> str:
    """Delta's Spark jar matching the installed ``delta-spark`` Python package and pyspark; a missing package or
    one that does not accept this pyspark is :class:`JarsMissing`."""
    spark = _spark_version()
    try:
        delta = metadata.version("delta-spark")
    except metadata.PackageNotFoundError:
        raise JarsMissing(f"delta.writer delta-spark needs the delta-spark Python package for pyspark {spark}: "
                          f"{_install_hint(spark)}") from None
    accepted = _accepted_pyspark(delta)
    wanted = _DELTA_FOR_SPARK.get(_minor(spark))
    if (accepted is not None and spark not in accepted) or (wanted is not None and delta != wanted):
        raise JarsMissing(f"delta-spark {delta} does not match pyspark {spark}"
                          f"{f' (it accepts pyspark {accepted})' if accepted is not None else ''}: "
                          f"{_install_hint(spark)}")
    return f"io.delta:delta-spark_{_minor(spark)}_{_SCALA}:{delta}"


def _accepted_pyspark(delta_version: str):
    """The pyspark versions the installed delta-spark declares it works with (a ``SpecifierSet``), or None."""
    from packaging.requirements import Requirement

    for line in metadata.requires("delta-spark") or []:
        req = Requirement(line)
        if req.name.lower() == "pyspark":
            return req.specifier
    return None


def kafka_coordinate() -> str:
    """Spark's Kafka connector at pyspark's own version (its classes are compiled against that Spark)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{_SCALA}:{_spark_version()}"


def needed_packages(*, delta_spark: bool, builtin_kafka: bool) -> SparkPackages:
    return SparkPackages(delta=delta_coordinate() if delta_spark else None,
                         kafka=kafka_coordinate() if builtin_kafka else None)


def session_conf(packages: SparkPackages, conf: Mapping[str, str], *, shuffle_partitions: int = 4) -> dict[str, str]:
    """``conf`` with what the packages need added: their coordinates in ``spark.jars.packages`` (unless ``conf``
    already says where jars come from) and, for Delta, its SQL extension and catalog (``MERGE``, ``OPTIMIZE`` and
    ``VACUUM`` run through them). Delta rebuilds a table's state from its log in ``snapshotPartitions`` tasks (50
    unless set): the job's tables are small, and 50 tasks on a local master took seconds per batch where as many as
    the shuffle's took a fraction of one."""
    out = dict(conf)
    if packages.coordinates and not ({"spark.jars", "spark.jars.packages"} & out.keys()):
        out["spark.jars.packages"] = ",".join(packages.coordinates)
    if packages.delta:
        extensions = [e for e in out.get("spark.sql.extensions", "").split(",") if e.strip()]
        if DELTA_EXTENSION not in extensions:
            out["spark.sql.extensions"] = ",".join([*extensions, DELTA_EXTENSION])
        out.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        out.setdefault("spark.databricks.delta.snapshotPartitions", str(shuffle_partitions))
    return out


def check_session(spark, packages: SparkPackages) -> None:
    """Raises :class:`JarsMissing` (one line) when a jar ``packages`` names is not on the session's classpath, or
    Delta's jar there was built for another Spark or is another release than the Python package."""
    if packages.kafka and class_jar(spark, _KAFKA_CLASS) is None:
        raise JarsMissing("source.builtin_kafka_source needs Spark's Kafka connector on the classpath: add "
                          f"{packages.kafka} to spark.jars.packages (spark-submit --packages {packages.kafka})")
    if packages.delta:
        jar = class_jar(spark, _DELTA_CLASS)
        if jar is None:
            raise JarsMissing("delta.writer delta-spark needs Delta's jar on the classpath: add "
                              f"{packages.delta} to spark.jars.packages (spark-submit --packages {packages.delta})")
        found = re.search(r"delta-spark_(\d+\.\d+)_\d+\.\d+-([0-9][\w.]*?)\.jar$", jar)
        expected = re.fullmatch(r"io\.delta:delta-spark_(\d+\.\d+)_[\d.]+:(.+)", packages.delta)
        if found and expected and found.groups() != expected.groups():
            raise JarsMissing(f"Delta's jar on the classpath is delta-spark {found[2]} for Spark {found[1]}, but "
                              f"this is pyspark {_spark_version()} with the delta-spark {expected[2]} Python package: "
                              f"put {packages.delta} on the classpath instead")


def class_jar(spark, name: str) -> str | None:
    """Where the JVM loads class ``name`` from (a jar's URL), or None when it cannot load it."""
    jvm = spark._jvm
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        cls = jvm.java.lang.Class.forName(name, False, loader)
    except Exception:  # noqa: BLE001 - py4j raises a generic error for a missing class
        return None
    source = cls.getProtectionDomain().getCodeSource()
    return str(source.getLocation().toString()) if source is not None else ""
