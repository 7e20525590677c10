"""The same Delta tables written by Spark itself (delta-spark), for clusters that have Delta's jars.

Distributed writes through the cluster's executors; exactly once per micro-batch through Delta's idempotent writes
(``txnAppId`` / ``txnVersion``), the same app transactions the delta-rs writer uses, so either writer can continue a
table the other started. Needs ``io.delta:delta-spark`` on the classpath and the ``delta-spark`` extra installed;
:func:`delta_spark_available` tells whether this session has them.
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from streaming.schema.tables import PARTITION_COLUMNS, batch_tables, last_row_per_group

__all__ = ["DeltaSparkSink", "delta_spark_available"]


def delta_spark_available(spark) -> bool:
    try:
        spark._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")
        return True
    except Exception:  # noqa: BLE001 - py4j raises a generic error for a missing class
        return False


class DeltaSparkSink:
    def __init__(self, spark, root: str, *, app_id: str = "groupscope") -> None:
        self.spark = spark
        self.root = root.rstrip("/")
        self.app_id = app_id

    def path(self, table: str) -> str:
        return f"{self.root}/{table}"

    def write_batch(self, batch_id: int, tables: Mapping[str, pa.Table]) -> dict[str, int]:
        from delta.tables import DeltaTable

        written: dict[str, int] = {}
        for name, table in batch_tables(tables):
            if name == "groups" and DeltaTable.isDeltaTable(self.spark, self.path(name)):
                df = self.spark.createDataFrame(last_row_per_group(table).to_pandas())
                self.spark.conf.set("spark.databricks.delta.write.txnAppId", self.app_id)
                self.spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
                try:
                    (DeltaTable.forPath(self.spark, self.path(name)).alias("t")
                     .merge(df.alias("s"), "t.group_id = s.group_id")
                     .whenMatchedDelete("s.deleted").whenMatchedUpdateAll().whenNotMatchedInsertAll("NOT s.deleted")
                     .execute())
                finally:
                    self.spark.conf.unset("spark.databricks.delta.write.txnAppId")
                    self.spark.conf.unset("spark.databricks.delta.write.txnVersion")
            else:
                df = self.spark.createDataFrame(table.to_pandas())
                writer = (df.write.format("delta").mode("append").option("txnAppId", self.app_id)
                          .option("txnVersion", str(batch_id)))
                if PARTITION_COLUMNS[name]:
                    writer = writer.partitionBy(*PARTITION_COLUMNS[name])
                writer.save(self.path(name))
            written[name] = table.num_rows
        return written
