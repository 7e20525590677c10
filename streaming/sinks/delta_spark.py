"""The same Delta tables written by Spark itself (delta-spark), for clusters that have Delta's jars.

Exactly once per micro-batch through Delta's idempotent writes: every commit of a batch carries the app transaction
``(app_id, batch_id)`` (the ``txnAppId`` / ``txnVersion`` write options for appends, the same two as session
settings for the ``groups`` merge), the same app transactions the delta-rs writer (``delta.py``) records, so either
writer continues a table the other started, and a batch Spark replays after a crash is skipped for every table it
had already reached. The merge runs in a session of its own: the transaction settings are per session, and a
maintenance pass (``OPTIMIZE``, ``VACUUM``) committing meanwhile must not carry them. Same schemas, partitioning and
merge rules as ``delta.py``; tables gain the columns a newer version adds (schema merging) as there.

Needs Delta's jar on Spark's classpath and the ``delta-spark`` Python package (``streaming.spark.packages`` says
what to install when either is missing).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from streaming.config import DeltaMaintenanceSettings
from streaming.schema.tables import PARTITION_COLUMNS, TABLES, batch_tables, last_row_per_group

from .delta import DeltaSink

__all__ = ["DeltaSparkSink", "delta_spark_available"]


def delta_spark_available(spark) -> bool:
    try:
        spark._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")
        return True
    except Exception:  # noqa: BLE001 - py4j raises a generic error for a missing class
        return False


class DeltaSparkSink:
    """Writes a batch's tables with delta-spark; the interface of :class:`streaming.sinks.delta.DeltaSink`."""

    def __init__(self, spark, root: str, *, app_id: str = "groupscope") -> None:
        self.root = root.rstrip("/")
        if "://" not in self.root:
            self.root = str(Path(self.root).resolve())
        self.app_id = app_id
        self.spark = spark
        self.merges = spark.newSession()  # holds the merge's transaction settings, and nothing else does
        self.storage_options = None
        # Held by a batch's write of a table and by maintenance of it: an OPTIMIZE committing between a merge's
        # read and its commit would fail the merge, and with it the micro-batch.
        self.locks: dict[str, threading.Lock] = {name: threading.Lock() for name in TABLES}

    def path(self, table: str) -> str:
        return f"{self.root}/{table}"

    def _delta_log(self, table: str):
        jvm = self.spark._jvm
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, self.path(table))
        return log if log.tableExists() else None

    def written_version(self, table: str) -> int | None:
        """The last micro-batch id ``table`` recorded for this app id (None: never written by it).

        Read from the table's log with delta-rs where it reaches the storage (a few milliseconds): Delta's own
        answer (``DeltaLog`` snapshot's transactions) rebuilds the table's state in a Spark job, seconds per table
        and batch on a small master. Elsewhere (storage only Spark reaches) the JVM answers."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.path(table)).transaction_version(self.app_id)
        except TableNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a scheme delta-rs does not know (hdfs://...): ask Delta itself
            log = self._delta_log(table)
            if log is None:
                return None
            none = self.spark._jvm.scala.Option.empty()
            found = log.update(False, none, none).transactions().get(self.app_id)
            return int(found.get()) if found.isDefined() else None

    batches_written = DeltaSink.batches_written  # per table, this sink's written_version

    def write_batch(self, batch_id: int, tables: Mapping[str, pa.Table], files=None) -> dict[str, int]:
        """Writes every non-empty table of one micro-batch; returns rows written per table (0 = skipped: this
        batch had already reached the table before a restart). ``files`` (data files executors wrote for the
        delta-rs writer) never comes here: that split is the delta-rs writer's."""
        written: dict[str, int] = {}
        for name, table in batch_tables(tables):
            with self.locks[name]:
                exists = self._exists(name)
                done = self.written_version(name) if exists else None
                if done is not None and done >= batch_id:
                    written[name] = 0
                    continue
                if name == "groups":
                    self._merge_groups(batch_id, last_row_per_group(table), exists=exists)
                else:
                    self._append(batch_id, name, table)
                written[name] = table.num_rows
        return written

    def _exists(self, table: str) -> bool:
        if "://" not in self.root:
            return (Path(self.path(table)) / "_delta_log").is_dir()
        return self._delta_log(table) is not None

    def _append(self, batch_id: int, name: str, table: pa.Table, session=None) -> None:
        writer = ((session or self.spark).createDataFrame(table).write.format("delta").mode("append")
                  .option("txnAppId", self.app_id).option("txnVersion", str(batch_id))
                  .option("mergeSchema", "true"))
        if PARTITION_COLUMNS[name]:
            writer = writer.partitionBy(*PARTITION_COLUMNS[name])
        writer.save(self.path(name))

    def _merge_groups(self, batch_id: int, table: pa.Table, *, exists: bool) -> None:
        if not exists:
            self._append(batch_id, "groups", table.filter(pc.invert(table.column("deleted"))))
            return
        from delta.tables import DeltaTable

        session = self.merges
        session.conf.set("spark.databricks.delta.write.txnAppId", self.app_id)
        session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            (DeltaTable.forPath(session, self.path("groups")).alias("t")
             .merge(session.createDataFrame(table).alias("s"), "t.group_id = s.group_id")
             .withSchemaEvolution()
             .whenMatchedDelete("s.deleted").whenMatchedUpdateAll().whenNotMatchedInsertAll("NOT s.deleted")
             .execute())
        finally:
            session.conf.unset("spark.databricks.delta.write.txnAppId")
            session.conf.unset("spark.databricks.delta.write.txnVersion")

    def read(self, table: str) -> pa.Table:
        """The whole table, read by Spark (tests, and ``groupscope status`` on storage only Spark reaches)."""
        if not self._exists(table):
            return TABLES[table].empty_table()
        return self.spark.read.format("delta").load(self.path(table)).toArrow()

    def maintain(self, name: str, settings: DeltaMaintenanceSettings):
        """delta-spark's own maintenance of one table: ``OPTIMIZE`` (compaction to ``target_file_size_mb``), the
        retention properties, ``VACUUM`` of what compactions and merges replaced. Delta writes a checkpoint every
        ten commits by itself and drops log entries older than the retention when it does, so neither is called
        here. Returns the pass's :class:`TableMaintenance`, or None when there is no table."""
        from streaming.sinks.delta_maintenance import TableMaintenance, retention_properties

        if not self._exists(name):
            return None
        started = time.perf_counter()
        report = TableMaintenance(name)
        table = f"delta.`{self.path(name)}`"
        report.files_before = self._detail(table)["numFiles"]
        spark = self.spark.newSession()  # settings of its own: retention check off for this pass only
        spark.conf.set("spark.databricks.delta.targetFileSize", str(settings.target_file_size_mb * 1024 * 1024))
        metrics = spark.sql(f"OPTIMIZE {table}").collect()[0]["metrics"]
        report.files_compacted = int(metrics["numFilesRemoved"])
        wanted = retention_properties(settings)
        current = spark.sql(f"SHOW TBLPROPERTIES {table}").collect()
        if any({r["key"]: r["value"] for r in current}.get(k) != v for k, v in wanted.items()):
            props = ", ".join(f"'{k}' = '{v}'" for k, v in wanted.items())
            spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({props})")
        # The retention is the operator's choice (it may be below Delta's 7-day safety default on purpose).
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        # VACUUM lists the table's folders in as many tasks as partition discovery may use (10,000 unless set):
        # minutes on a small master for a table of a few folders.
        spark.conf.set("spark.sql.sources.parallelPartitionDiscovery.parallelism",
                       spark.conf.get("spark.sql.shuffle.partitions"))
        spark.conf.set("spark.databricks.delta.vacuum.logging.enabled", "true")
        spark.sql(f"VACUUM {table} RETAIN {settings.vacuum_retention_hours} HOURS")
        last = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").collect()[0]
        if last["operation"] == "VACUUM END":
            report.files_vacuumed = int(last["operationMetrics"].get("numDeletedFiles", 0))
        detail = self._detail(table)
        report.files_after = detail["numFiles"]
        report.version = int(last["version"])
        report.seconds = time.perf_counter() - started
        return report

    def _detail(self, table: str) -> dict:
        return self.spark.sql(f"DESCRIBE DETAIL {table}").collect()[0].asDict()
