"""The SparkSession groupscope runs in (local mode by default; any master works)."""

from __future__ import annotations

import os
import sys
from typing import Mapping

__all__ = ["build_session", "DEFAULT_CONF"]

DEFAULT_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # The driver collects each batch's output chunks (Arrow IPC) to write Delta and metrics.
    "spark.driver.maxResultSize": "0",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # Stopping a streaming query in Spark 4 can overflow the default thread stack.
    "spark.driver.extraJavaOptions": "-Xss16m",
    "spark.executor.extraJavaOptions": "-Xss16m",
    "spark.sql.streaming.stopTimeout": "60s",
    "spark.sql.adaptive.enabled": "false",
}


def build_session(*, master: str = "local[2]", app_name: str = "groupscope", shuffle_partitions: int = 4,
                  driver_memory: str = "2g", conf: Mapping[str, str] | None = None):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers must run the interpreter that has groupscope installed, not whatever "python3" is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = dict(DEFAULT_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
