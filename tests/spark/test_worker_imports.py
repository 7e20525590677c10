"""In local mode every Python process Spark starts imports PySpark from its installed folders, not from the
archives Spark puts first on their path (see streaming.spark.import_path): the processes that create and plan a
Python data source (PySpark's own daemon) as well as the task workers (groupscope's daemon)."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import DataSource, DataSourceReader

from streaming.spark.session import build_session

pytestmark = pytest.mark.spark


def _archives_on_path() -> int:
    import os
    import sys

    return sum(p.endswith((".zip", ".jar")) and os.path.isfile(p) for p in sys.path)


class PathProbe(DataSource):
    """Its schema is computed where Spark creates the source; its rows where a task reads it."""

    @classmethod
    def name(cls) -> str:
        return "groupscope_path_probe"

    def schema(self) -> str:
        return f"archives_where_created_{_archives_on_path()} int, pyspark_from_folder boolean"

    def reader(self, schema) -> DataSourceReader:
        return _ProbeReader()


class _ProbeReader(DataSourceReader):
    def read(self, partition):
        import pyspark

        yield _archives_on_path(), "site-packages" in pyspark.__file__


def test_spark_python_processes_import_pyspark_from_its_folders():
    spark = build_session(master="local[1]")
    spark.dataSource.register(PathProbe)
    df = spark.read.format("groupscope_path_probe").load()
    assert df.columns[0] == "archives_where_created_0", "the process creating the source kept Spark's archives"
    assert [tuple(r) for r in df.collect()] == [(0, True)], "a task worker kept Spark's archives"
