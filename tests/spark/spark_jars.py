"""Delta's and Spark's Kafka connector's jars for the tests, fetched from Maven Central by coordinate and cached.

The coordinates are the ones ``groupscope run`` would hand Spark (``streaming.spark.packages``); the tests fetch
them with Maven (``tests.maven_cache``) into ``$SPARK_JARS_CACHE`` (default ``~/.cache/groupscope/spark-jars``), one
folder per Spark and Delta version, and pass the files as ``spark.jars``: no Ivy resolution at every session start,
and nothing written inside the repository.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from streaming.spark.packages import delta_coordinate, kafka_coordinate
from tests.maven_cache import JarsUnavailable, MavenJars, fetch_jars

__all__ = ["SparkJars", "spark_jars", "JarsUnavailable"]

POM = Path(__file__).with_name("pom.xml")


@dataclass(frozen=True)
class SparkJars:
    """The fetched jars, by feature."""

    delta: tuple[Path, ...]
    kafka: tuple[Path, ...]

    def conf(self, *, delta: bool = True, kafka: bool = True) -> dict[str, str]:
        """Spark settings putting the chosen jars on the classpath (and so telling groupscope not to resolve
        them itself)."""
        jars = (self.delta if delta else ()) + (self.kafka if kafka else ())
        return {"spark.jars": ",".join(str(j) for j in jars)}


def _artifacts(coordinate: str) -> tuple[str, str, str]:
    group, artifact, version = coordinate.split(":")
    return group, artifact, version


def spark_jars() -> SparkJars:
    """The jars, fetched on first use (one line when that fails: :class:`JarsUnavailable`)."""
    delta, kafka = _artifacts(delta_coordinate()), _artifacts(kafka_coordinate())
    spark_version, delta_version = kafka[2], delta[2]
    # What the two artifacts need beyond pyspark's own jars (the connector's Kafka client and pool, Delta's
    # storage layer); everything else they name is on pyspark's classpath already.
    wanted = {"delta": [f"{delta[1]}-{delta_version}.jar", f"delta-storage-{delta_version}.jar"],
              "kafka": [f"{kafka[1]}-{spark_version}.jar",
                        f"spark-token-provider-kafka-0-10_2.13-{spark_version}.jar", "kafka-clients-", "commons-pool2-"]}
    spec = MavenJars(POM, f"delta-spark {delta_version} and Spark's Kafka connector {spark_version}",
                     {"spark.version": spark_version, "spark.binary": delta[1].split("_")[1],
                      "delta.version": delta_version},
                     only=(delta[1], "delta-storage", kafka[1], "spark-token-provider-kafka-0-10_2.13",
                           "kafka-clients", "commons-pool2"))
    root = Path(os.environ.get("SPARK_JARS_CACHE", Path.home() / ".cache" / "groupscope" / "spark-jars"))

    def pick(folder: Path, names: list[str]) -> tuple[Path, ...]:
        return tuple(j for j in sorted(folder.glob("*.jar")) if any(j.name.startswith(n) for n in names))

    def complete(folder: Path) -> bool:
        return all(len(pick(folder, [n])) == 1 for names in wanted.values() for n in names)

    folder = fetch_jars(spec, root / f"spark-{spark_version}-delta-{delta_version}", complete)
    return SparkJars(pick(folder, wanted["delta"]), pick(folder, wanted["kafka"]))


def own_jvm_session(conf: dict[str, str], *, master: str = "local[1]"):
    """A session in a JVM of its own, started with ``conf`` (jars are fixed when a JVM starts, and an earlier test
    of this process may have started one without them); the caller stops it with :func:`end_own_jvm`."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from streaming.spark.session import build_session

    end_own_jvm(SparkSession.getActiveSession())
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    end_own_jvm(None)
    return build_session(master=master, conf=conf, class_archive=False)


def end_own_jvm(spark) -> None:
    """Stops ``spark`` (if any) and lets its JVM exit, so the next session of this process starts a fresh one."""
    from pyspark import SparkContext

    if spark is not None:
        spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the bridge may already be gone
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc is not None:
        try:
            proc.stdin.close()
        except OSError:
            pass
        proc.wait(60)
