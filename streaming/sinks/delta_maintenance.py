"""Delta table maintenance: compaction, checkpoint, vacuum and log cleanup, with delta-rs (``deltalake``).

Why: the job appends a few small files to every table at every micro-batch (one a second by default), so a table
would gain tens of thousands of files a day, and its transaction log as many JSON commits. Readers pay for every
file they list and open. Maintenance bounds both:

* ``optimize.compact()`` rewrites the small files of each partition into files of ``target_file_size_mb``;
* ``vacuum()`` deletes the files compactions (and the ``groups`` merges) replaced, once they are older than
  ``vacuum_retention_hours`` (readers of older versions keep working until then);
* ``create_checkpoint()`` + ``cleanup_metadata()`` fold the log into a checkpoint and delete log entries older than
  ``log_retention_hours`` (Delta's ``delta.logRetentionDuration``, set on the table).

A replaced file stays in the log as a tombstone for Delta's ``delta.deletedFileRetentionDuration`` (a week unless
set), carried from checkpoint to checkpoint, and vacuum goes over every tombstone again at each pass. At one pass
every 15 minutes that is tens of thousands of tombstones a day for the ``commits`` table alone: the pass grew
longer with each run, and its "vacuumed" count kept the files of every earlier pass. The table property is set to
``vacuum_retention_hours``: a tombstone expires when vacuum may delete its file, the next checkpoint drops it, and
each pass handles (and reports) only what was replaced since the last one.

None of these touches the per-batch app transactions (``txn`` actions) that make the writes exactly once: compaction
and vacuum commit without them, and a checkpoint carries the latest transaction of every app id, so a batch
replayed after maintenance is still recognised (tests/sinks/test_delta_maintenance.py checks it).

The job runs :meth:`DeltaMaintenance.after_batch` after each batch: when due (every ``every_batches`` batches or
``every_seconds`` seconds), one background thread maintains the tables one by one, holding the sink's lock of the
table it works on, so a batch's write of that table waits and a compaction never races a merge.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from ..config import DeltaMaintenanceSettings
from streaming.schema.tables import TABLES
from .delta import DeltaSink

__all__ = ["DeltaMaintenance", "TableMaintenance", "maintain_table", "retention_properties"]

log = logging.getLogger("groupscope.delta")

_LOG_RETENTION_PROPERTY = "delta.logRetentionDuration"
_TOMBSTONE_RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"


@dataclass
class TableMaintenance:
    """What one maintenance pass did to one table."""

    table: str
    files_before: int = 0
    files_after: int = 0
    files_compacted: int = 0
    files_vacuumed: int = 0
    version: int = 0
    seconds: float = 0.0
    error: str | None = None

    def line(self) -> str:
        if self.error is not None:
            return f"{self.table}: maintenance failed: {self.error}"
        return (f"{self.table}: {self.files_before} -> {self.files_after} files ({self.files_compacted} compacted), "
                f"{self.files_vacuumed} vacuumed, checkpoint at version {self.version}, {self.seconds:.1f} s")


def _interval(hours: int) -> str:
    return f"interval {hours} hours"


def retention_properties(settings: DeltaMaintenanceSettings) -> dict[str, str]:
    """The table properties maintenance keeps on every table (log and tombstone retention, see above)."""
    return {_LOG_RETENTION_PROPERTY: _interval(settings.log_retention_hours),
            _TOMBSTONE_RETENTION_PROPERTY: _interval(settings.vacuum_retention_hours)}


def maintain_table(path: str, settings: DeltaMaintenanceSettings, *, name: str | None = None,
                   storage_options: dict[str, str] | None = None) -> TableMaintenance | None:
    """Compacts, checkpoints, vacuums and cleans the log of the table at ``path``; None if there is no table."""
    started = time.perf_counter()
    report = TableMaintenance(name or path.rstrip("/").rsplit("/", 1)[-1])
    try:
        dt = DeltaTable(path, storage_options=storage_options)
    except TableNotFoundError:
        return None
    report.files_before = len(dt.file_uris())
    metrics = dt.optimize.compact(target_size=settings.target_file_size_mb * 1024 * 1024)
    report.files_compacted = int(metrics.get("numFilesRemoved", 0))
    wanted = retention_properties(settings)
    configuration = dt.metadata().configuration
    if any(configuration.get(key) != value for key, value in wanted.items()):
        dt.alter.set_table_properties(wanted, raise_if_not_exists=False)
    # The retention is the operator's choice (it may be below Delta's 7-day safety default on purpose).
    report.files_vacuumed = len(dt.vacuum(retention_hours=settings.vacuum_retention_hours, dry_run=False,
                                          enforce_retention_duration=False))
    dt.create_checkpoint()
    dt.cleanup_metadata()
    report.files_after = len(dt.file_uris())
    report.version = dt.version()
    report.seconds = time.perf_counter() - started
    return report


class DeltaMaintenance:
    """Periodic maintenance of a sink's tables, off the batch path: a :class:`DeltaSink`'s with delta-rs, or one
    that maintains its own tables (``maintain(name, settings)``: the delta-spark writer's ``OPTIMIZE`` and
    ``VACUUM``)."""

    def __init__(self, sink: DeltaSink, settings: DeltaMaintenanceSettings) -> None:
        self.sink = sink
        self.settings = settings
        self._batches_since = 0
        self._last_run = time.monotonic()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.runs = 0
        self.last: list[TableMaintenance] = []

    def due(self) -> bool:
        return (self._batches_since >= self.settings.every_batches
                or time.monotonic() - self._last_run >= self.settings.every_seconds)

    def after_batch(self, batch_id: int | None = None) -> bool:
        """Counts one batch; starts a maintenance pass in the background when due. True if one was started."""
        self._batches_since += 1
        if not self.settings.enabled or self._stopping.is_set() or not self.due():
            return False
        if self._thread is not None and self._thread.is_alive():
            return False  # the previous pass is still running; the next batch will try again
        self._batches_since = 0
        self._last_run = time.monotonic()
        self._thread = threading.Thread(target=self.run_once, name="groupscope-delta-maintenance", daemon=True)
        self._thread.start()
        return True

    def run_once(self, tables: Iterable[str] | None = None) -> list[TableMaintenance]:
        """One pass over the tables (all of them by default); a table that fails is reported and skipped."""
        reports: list[TableMaintenance] = []
        for name in tables or TABLES:
            if self._stopping.is_set():
                break
            with self.sink.locks[name]:
                try:
                    report = self._maintain(name)
                except Exception as exc:  # noqa: BLE001 - maintenance must never stop the job; said in one line
                    report = TableMaintenance(name, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            if report is None:
                continue
            (log.warning if report.error else log.info)("delta maintenance: %s", report.line())
            reports.append(report)
        self.runs += 1
        self.last = reports
        return reports

    def _maintain(self, name: str) -> TableMaintenance | None:
        own = getattr(self.sink, "maintain", None)
        if own is not None:
            return own(name, self.settings)
        return maintain_table(self.sink.path(name), self.settings, name=name,
                              storage_options=self.sink.storage_options)

    def wait(self, timeout: float | None = None) -> None:
        """Waits for a pass in flight (tests, and :meth:`stop`)."""
        t = self._thread
        if t is not None:
            t.join(timeout)

    def stop(self, timeout: float = 120.0) -> None:
        """No new pass; the table in flight is finished (a half-done compaction is never committed anyway)."""
        self._stopping.set()
        self.wait(timeout)


def on_disk_files(path: str | Path) -> int:
    """Parquet data files under a local table directory, referenced or not (what vacuum bounds)."""
    return sum(1 for f in Path(path).rglob("*.parquet") if "_delta_log" not in f.parts)
