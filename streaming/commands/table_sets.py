"""Which Delta tables ``groupscope status`` and ``groupscope maintain`` work on, found the same way by both, and
when they were last written.

In order: the clusters of a ``clusters`` configuration (each one's tables in its own folder); else ``delta.path``
(``--delta-path``, the configuration, ``$GROUPSCOPE_DELTA_PATH``), holding one set of tables or one folder of tables
per cluster; else, with nothing configured and no job's tables at the default path, the last ``groupscope demo``'s.
A person who has just run the demo types ``groupscope status`` or ``groupscope maintain`` with no flags and both
find its tables.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

__all__ = ["TableSets", "find_table_sets", "last_write", "cluster_tables", "configured_cluster_tables"]


@dataclass(frozen=True)
class TableSets:
    """The table sets a command reads: ``sets`` as ``(cluster, path)``; ``several`` when they are one per cluster
    (else the one set is ``root`` itself); ``demo``: the demo folder they were found in, when nothing named them;
    ``demo_looked``: the demo's tables folder, looked in and found empty, when nothing named them either."""

    root: str
    sets: tuple[tuple[str, str], ...]
    several: bool
    demo: Path | None = None
    demo_looked: Path | None = None


def cluster_tables(delta_path: str) -> list[tuple[str, str]]:
    """The table sets of a deployment that watches several clusters, found under ``delta_path`` (each cluster's
    tables are in a folder named after it): ``[(cluster, path), ...]``, empty when ``delta_path`` holds one set
    itself or is not a local folder."""
    root = Path(delta_path)
    if "://" in delta_path or (root / "groups").exists() or not root.is_dir():
        return []
    return [(child.name, str(child)) for child in sorted(root.iterdir()) if (child / "groups").is_dir()]


def configured_cluster_tables(settings) -> list[tuple[str, str]]:
    """The table sets of a several-cluster deployment: each configured cluster's, or the cluster folders found
    under ``delta.path``; empty for one cluster whose tables are ``delta.path`` itself."""
    if settings.clusters:
        return [(c.cluster, c.delta.path) for c in settings.cluster_settings()]
    return cluster_tables(settings.delta.path)


def find_table_sets(settings, delta_path: str | None) -> TableSets:
    """The table sets of ``settings`` (after ``--config`` and the variables); ``delta_path``: the ``--delta-path``
    flag, which names the tables outright (no fallback to the demo's)."""
    root = settings.delta.path
    several = configured_cluster_tables(settings)
    if several:
        return TableSets(root, tuple(several), True)
    default = type(settings.delta)().path
    if delta_path is None and root == default and not (Path(root) / "groups").exists():
        from streaming.commands.demo_dir import default_demo_dir

        demo = default_demo_dir()
        demo_delta = demo / "delta"
        found = cluster_tables(str(demo_delta))
        if found:
            return TableSets(str(demo_delta), tuple(found), True, demo)
        if (demo_delta / "groups").exists():
            return TableSets(str(demo_delta), ((settings.cluster, str(demo_delta)),), False, demo)
        return TableSets(root, ((settings.cluster, root),), False, demo_looked=demo_delta)
    return TableSets(root, ((settings.cluster, root),), False)


def last_write(path: str, table: str = "groups", *,
               storage_options: Mapping[str, str] | None = None) -> dt.datetime | None:
    """When ``table`` under ``path`` was last committed to (UTC), from its Delta log; None when it does not exist.
    The job rewrites every group's row at least every ``model.snapshot_interval_seconds`` while it runs, so this is
    when the figures were current."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        history = DeltaTable(f"{path.rstrip('/')}/{table}", storage_options=dict(storage_options or {}) or None
                             ).history(1)
    except (TableNotFoundError, OSError):
        return None
    stamp = history[0].get("timestamp") if history else None
    return None if stamp is None else dt.datetime.fromtimestamp(stamp / 1000, dt.timezone.utc)
