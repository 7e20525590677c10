"""How the query's checkpoint files are written (``streaming.spark.checkpoint_files``): a local checkpoint through
Hadoop's FileSystem API, any other through Spark's own choice, and a manager the operator set left alone. Checked
on a real local session by asking the started query which manager its offset and commit logs write with."""

from __future__ import annotations

import time

import pytest

from streaming.spark.checkpoint_files import MANAGER_KEY, is_local, local_manager_class, use_for_query
from streaming.spark.session import build_session

FILE_SYSTEM = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
FILE_CONTEXT = "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"


@pytest.mark.parametrize("checkpoint, local", [
    ("groupscope-data/checkpoint", True),
    ("/var/lib/groupscope/checkpoint", True),
    ("file:/var/lib/groupscope/checkpoint", True),
    ("file:///var/lib/groupscope/checkpoint", True),
    ("hdfs://nn:8020/groupscope/checkpoint", False),
    ("s3a://bucket/groupscope/checkpoint", False),
])
def test_a_checkpoint_is_local_when_it_is_a_path_or_a_file_uri(checkpoint, local):
    assert is_local(checkpoint) is local


@pytest.fixture(scope="module")
def spark():
    session = build_session(master="local[1]", class_archive=False)
    yield session
    session.stop()


def _managers(spark, checkpoint: str) -> tuple[str, str]:
    """The classes the offset and commit logs of a query started on ``checkpoint`` write with."""
    query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
             .writeStream.format("noop").option("checkpointLocation", checkpoint).start())
    try:
        deadline = time.monotonic() + 60
        while query.lastProgress is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert query.lastProgress is not None, "the query completed no batch"
        running = query._jsq.streamingQuery()
        return (str(running.offsetLog().fileManager().getClass().getName()),
                str(running.commitLog().fileManager().getClass().getName()))
    finally:
        query.stop()


def test_this_spark_has_the_file_system_based_manager(spark):
    assert local_manager_class(spark) == FILE_SYSTEM


def test_a_query_on_a_local_checkpoint_writes_its_logs_through_the_file_system_api(spark, tmp_path):
    assert use_for_query(spark, str(tmp_path / "cp"), {}) == FILE_SYSTEM
    assert _managers(spark, str(tmp_path / "cp")) == (FILE_SYSTEM, FILE_SYSTEM)
    assert (tmp_path / "cp" / "commits" / "0").is_file(), "the first batch's commit is in the checkpoint"


def test_a_remote_checkpoint_keeps_sparks_own_manager(spark, tmp_path):
    use_for_query(spark, str(tmp_path / "before"), {})
    assert use_for_query(spark, "hdfs://nn:8020/groupscope/checkpoint", {}) is None
    # Spark's own choice for the next query, wherever it writes (here a local folder, to have a query to ask).
    assert _managers(spark, str(tmp_path / "cp")) == (FILE_CONTEXT, FILE_CONTEXT)


def test_a_manager_set_in_the_settings_is_left_as_it_is(spark, tmp_path):
    spark.conf.set(MANAGER_KEY, FILE_CONTEXT)
    try:
        assert use_for_query(spark, str(tmp_path / "cp"), {MANAGER_KEY: FILE_CONTEXT}) is None
        assert spark.conf.get(MANAGER_KEY) == FILE_CONTEXT
    finally:
        spark.conf.unset(MANAGER_KEY)
