"""Spark's Python worker daemon, with the workers' heavy imports done once, before it forks.

Spark starts one daemon process per kind of Python worker and forks a worker from it for each task (groupscope
turns worker reuse off, so a worker's memory goes back to the system when its task ends).
PySpark's own daemon imports nothing before forking, so every worker imports pandas, pyarrow, numpy, PySpark's
Arrow serializers and groupscope's steps itself: about 0.35 s of CPU and 100 MB of private memory per worker, paid
again by every worker the job forks (one per task without reuse, on a machine whose cores are what a catch-up is
short of). This daemon imports them once; the forked workers share those pages copy-on-write, start in
milliseconds, and only what a worker allocates for its data is its own.

Why PySpark does not do this itself: a process that forks while another of its threads holds a lock hands the
child a lock nobody will release. numpy starts an OpenBLAS thread pool on import and pyarrow's bundled jemalloc
a background thread. Both are turned off here before the imports (one BLAS thread, no jemalloc background thread;
neither is used by the workers' code), and the daemon checks that it is still single-threaded before it serves a
fork: if anything else started a thread, it replaces itself with PySpark's plain daemon (same process, same pipes
to the JVM), so the job runs as it would without preloading rather than risk a deadlocked worker.

Every daemon first takes the archives its workers do not need off its path (:func:`prune_import_path`). Only the
daemon of the task workers (``pyspark.worker``) preloads. Spark also starts daemons for planning a Python
data source (looking it up, creating it, planning a read); those run once or twice per query, and preloading
there would only make three idle processes bigger.

Selected by ``spark.python.daemon.module`` (see :mod:`streaming.spark.session`); the executors of a cluster run it
too, so groupscope must be installed where they run, as it already must be for the job's functions.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading

from .import_path import prune_import_path

__all__ = ["PRELOADED_MODULES", "preload", "main", "start_early"]

TASK_WORKER_MODULE = "pyspark.worker"

# What a task worker of the job imports: PySpark's worker and Arrow serializers, the libraries under them, and the
# job's own functions (unpickled by reference in every task). Listed rather than discovered so the daemon never
# runs more than imports before it forks.
PRELOADED_MODULES = (
    "numpy",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.ipc",
    "pandas",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pyspark.sql.streaming.state",
    "pyspark.testing.utils",  # imported by GroupState.update on every call
    "pyarrow.pandas_compat",  # imported by the first Arrow <-> pandas conversion
    "streaming.spark.stateful",
    "streaming.spark.source",
    "streaming.spark.segment_source",
    "streaming.job.bulk_files",
    "streaming.kafka.fetcher",  # the read tasks' Fetch reader (imported when a read starts)
    "pyarrow.acero",  # grouping the bulk tables' rows by Delta partition
    "encodings.idna",  # resolving a broker's host name
)

# Thread pools some of those libraries would otherwise start on import. Both stay off in the workers too: their
# code uses no BLAS, and Arrow's default memory pool is not jemalloc.
_SINGLE_THREADED_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
    "ARROW_DEFAULT_MEMORY_POOL": "system",
}


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:  # no /proc: cannot check, so do not preload
        return -1


def preload(modules: tuple[str, ...] = PRELOADED_MODULES) -> bool:
    """Imports ``modules`` and says whether the process is still single-threaded (safe to fork).

    A module that fails to import is skipped: the worker that needs it imports it after the fork and reports
    the error in its task, where Spark shows it.
    """
    if _thread_count() != 1:
        return False
    for name, value in _SINGLE_THREADED_ENV.items():
        os.environ.setdefault(name, value)
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - see the docstring: the worker reports it
            continue
    # Objects that exist now live as long as the daemon; moving them out of the collector's sight keeps the
    # children from writing to (and so copying) their pages every time they collect.
    gc.collect()
    gc.freeze()
    return _thread_count() == 1


def _pass_through(batches):
    return batches


def start_early(spark) -> threading.Thread:
    """Has Spark start this daemon now, with a one-row task on a thread of its own, instead of when the query's
    first read task needs it.

    Spark starts the daemon for the first Python task, and the daemon's imports (~0.6 s) then come before the
    first micro-batch reads anything. Started right after the query, while Spark plans its first batch (its
    source runner and read planner are short Python processes the JVM waits for, so the two cores are not busy
    then), the daemon is ready when the read tasks come: the 5M catch-up's first batch took 4.4-4.8 s against
    5.2-5.8 s (benchmarks/README.md). Started before the query, it delayed the query's own start-up by a few
    tenths of a second. The task's worker is forked from the same daemon the query's tasks use, so no second
    daemon stays resident. A failure here costs nothing but the head start."""

    def run() -> None:
        try:
            spark.range(1, numPartitions=1).mapInArrow(_pass_through, "id long").collect()
        except Exception as exc:  # noqa: BLE001 - the query starts the daemon itself, as it would anyway
            import logging

            logging.getLogger("groupscope.spark").debug("starting the Python workers' daemon early: %s", exc)

    thread = threading.Thread(target=run, name="groupscope-worker-daemon-start", daemon=True)
    thread.start()
    return thread


def main() -> None:
    worker_module = sys.argv[1] if len(sys.argv) > 1 else TASK_WORKER_MODULE
    prune_import_path()
    if worker_module == TASK_WORKER_MODULE and not preload():
        # Something started a thread: forking now is what PySpark's daemon avoids. Become that daemon instead.
        os.execv(sys.executable, [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:]])
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()

