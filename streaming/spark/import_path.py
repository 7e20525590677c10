"""Spark's Python processes import PySpark from its installed folders, not from the archives Spark names.

Spark puts ``pyspark.zip``, py4j's zip and the ``spark-core`` jar first on the ``PYTHONPATH`` of every Python
process it starts (task workers, and the processes that look up, create and plan the Python data source). With a
pip-installed PySpark the same release is also installed as plain folders, and the archives cost twice:

- imports from a zip are compiled from source in every process (no ``.pyc``): 0.6-0.7 s for each of the four
  short-lived processes Spark starts, one after another, before a query's first batch, against 0.1-0.3 s from the
  installed folders (1.7 s less from session start to the first batch here);
- every task worker calls ``importlib.invalidate_caches()`` when it adds Spark's files folder to its path, and in
  this Python a zip importer answers that by reading its archive's whole directory again, once per package folder
  it has served (18 importers, the jar's 5,854 entries three times): about 0.1 s of CPU in every fresh worker, 13% of
  the workers' CPU in a 5M-record catch-up.

:func:`prune_import_path` takes such archives off the path. Two places call it: the task workers' daemon
(:mod:`streaming.spark.worker_daemon`, wherever it runs) and, in local mode, the ``sitecustomize`` module of
``worker_site/`` that :func:`site_dir` names, which the session puts on the ``PYTHONPATH`` Spark's JVM hands its
Python processes, so the processes Spark starts with its own daemon are covered too.
"""

from __future__ import annotations

import os
import sys
import zipfile

__all__ = ["prune_import_path", "site_dir"]


def site_dir() -> str:
    """The folder holding groupscope's ``sitecustomize`` for Spark's Python processes."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_site")


def prune_import_path(path: list[str] | None = None) -> list[str]:
    """Removes from ``path`` (``sys.path``) the archives nothing needs; returns the entries removed.

    An archive goes when nothing is lost: a jar holding no Python file, or an archive whose packages are installed
    as plain folders elsewhere on the path at the same version (a pip-installed PySpark ships both)."""
    path = sys.path if path is None else path
    folders = [p for p in path if os.path.isdir(p)]
    removed = []
    for entry in list(path):
        if not entry.endswith((".zip", ".jar")) or not os.path.isfile(entry):
            continue
        try:
            with zipfile.ZipFile(entry) as archive:
                names = set(archive.namelist())
                sources = [n for n in names if n.endswith(".py")]
                packages = {n.split("/", 1)[0] for n in sources}
                top_level_modules = [n for n in sources if "/" not in n]
                unneeded = not sources or (not top_level_modules and all(
                    _installed_alike(archive, names, package, folders) for package in packages))
        except (OSError, zipfile.BadZipFile):
            continue
        if unneeded:
            path.remove(entry)
            removed.append(entry)
    for entry in removed:
        sys.path_importer_cache.pop(entry, None)
    return removed


def _installed_alike(archive: zipfile.ZipFile, names: set[str], package: str, folders: list[str]) -> bool:
    """Whether ``package`` of ``archive`` (whose entries are ``names``) is also installed as a folder on the path,
    with the same version file (``version.py``, else ``__init__.py``): the same release, so importing either gives
    the same code."""
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
