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

Only the daemon of the task workers (``pyspark.worker``) preloads. Spark also starts daemons for planning a Python
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
import zipfile

__all__ = ["PRELOADED_MODULES", "preload", "prune_import_path", "main"]

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


def prune_import_path(path: list[str] | None = None) -> list[str]:
    """Removes from ``path`` (``sys.path``) the archives a worker has no need of; returns the entries removed.

    Why: Spark puts ``pyspark.zip``, py4j's zip and the ``spark-core`` jar on the workers' ``PYTHONPATH``, and every
    task worker calls ``importlib.invalidate_caches()`` when it adds Spark's files folder to its path. In this Python
    a zip importer answers that call by reading its archive's whole directory again, once for every package folder
    it has served (18 importers here, the 5,854 entries of the jar three times): about 0.1 s of CPU in each fresh
    worker, 13% of the workers' CPU in a 5M-record catch-up, before the task does anything. An archive goes when
    nothing is lost: a jar holding no Python file, or an archive whose packages are installed as plain folders
    elsewhere on the path at the same version (a pip-installed PySpark ships both), which also lets the workers
    import them from compiled ``.pyc`` files instead of compiling the archive's sources in every worker.
    """
    path = sys.path if path is None else path
    folders = [p for p in path if os.path.isdir(p)]
    removed = []
    for entry in list(path):
        if not entry.endswith((".zip", ".jar")) or not os.path.isfile(entry):
            continue
        try:
            with zipfile.ZipFile(entry) as archive:
                sources = [n for n in archive.namelist() if n.endswith(".py")]
                packages = {n.split("/", 1)[0] for n in sources}
                top_level_modules = [n for n in sources if "/" not in n]
                unneeded = not sources or (not top_level_modules and all(
                    _installed_alike(archive, package, folders) for package in packages))
        except (OSError, zipfile.BadZipFile):
            continue
        if unneeded:
            path.remove(entry)
            removed.append(entry)
    for entry in removed:
        sys.path_importer_cache.pop(entry, None)
    return removed


def _installed_alike(archive: zipfile.ZipFile, package: str, folders: list[str]) -> bool:
    """Whether ``package`` of ``archive`` is also installed as a folder on the path, with the same version file
    (``version.py``, else ``__init__.py``): the same release, so importing either gives the same code."""
    names = set(archive.namelist())
    marker = next((f"{package}/{n}" for n in ("version.py", "__init__.py") if f"{package}/{n}" in names), None)
    if marker is None:
        return False
    wanted = archive.read(marker)
    for folder in folders:
        try:
            with open(os.path.join(folder, marker), "rb") as f:
                if f.read() == wanted:
                    return True
        except OSError:
            continue
    return False


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


def main() -> None:
    worker_module = sys.argv[1] if len(sys.argv) > 1 else TASK_WORKER_MODULE
    if worker_module == TASK_WORKER_MODULE:
        prune_import_path()
        if not preload():
            # Something started a thread: forking now is what PySpark's daemon avoids. Become that daemon instead.
            os.execv(sys.executable, [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:]])
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
