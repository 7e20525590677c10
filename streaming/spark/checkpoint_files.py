"""How Spark writes a query's checkpoint files: through Hadoop's FileSystem API when the checkpoint is local.

Spark's default checkpoint file manager uses Hadoop's FileContext API. Its rename asks for the link status of
both paths, and on a local file system without Hadoop's native library each such question is a ``readlink``
process forked from the JVM. Every micro-batch renames its offset-log entry, its commit-log entry and one state
file per shuffle partition (each with its checksum file), so the live job forked about eleven processes a second:
the offset-log and commit-log writes took about 45 ms each and a state-store commit about 40 ms, on the path of
every batch (``benchmarks/bench_latency.py``: ``walCommit``, ``commitOffsets``, ``commitTimeMs``). The
FileSystem-based manager writes the same files the same way (a temporary file renamed into place, which a local
file system does atomically) without asking: 10–13 ms and 3 ms.

Other file systems (HDFS, object stores) keep Spark's own choice, and so does a manager set in ``spark.conf``.
Two jobs must still never share a checkpoint; :mod:`streaming.driver.checkpoint_lock` makes sure of that.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MANAGER_KEY", "is_local", "local_path", "local_manager_class", "use_for_query"]

MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"
# Where Spark keeps the class: its package moved with Spark 4.1's streaming reorganisation.
_LOCAL_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)


def is_local(checkpoint: str) -> bool:
    """A checkpoint on the local file system: a plain path or a ``file:`` URI."""
    return "://" not in checkpoint or checkpoint.startswith("file:")


def local_path(checkpoint: str) -> Path | None:
    """The folder of a local checkpoint (None for a remote one)."""
    if not is_local(checkpoint):
        return None
    return Path(checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint)


def local_manager_class(spark) -> str | None:
    """The FileSystem-based manager's class name in this session's Spark (None: it has none of the known ones)."""
    from .packages import class_jar

    return next((name for name in _LOCAL_MANAGERS if class_jar(spark, name) is not None), None)


def use_for_query(spark, checkpoint: str, user_conf: dict[str, str]) -> str | None:
    """Sets the manager the next query started in ``spark`` uses for ``checkpoint`` (Spark reads it when the query
    starts); returns the class set, or None where Spark's own choice stays (a remote checkpoint, a manager the
    operator set, a Spark without the class)."""
    if MANAGER_KEY in user_conf:
        return None
    manager = local_manager_class(spark) if is_local(checkpoint) else None
    if manager is None:
        spark.conf.unset(MANAGER_KEY)
    else:
        spark.conf.set(MANAGER_KEY, manager)
    return manager
