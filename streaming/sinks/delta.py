"""Delta tables written with delta-rs (``deltalake``) from ``foreachBatch``, exactly once per micro-batch.

Each table's commits carry a Delta *app transaction* ``(app_id, batch_id)``. Before writing a table, the sink reads
the table's last transaction version for its app id; a micro-batch Spark replays after a crash (same batch id) is
therefore skipped for every table it had already reached, and written for the others: no row is lost or doubled.
The ``groups`` table is merged on ``group_id`` (one row per group, the latest; deleted groups are removed); the
others are append-only and partitioned by day.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError
from deltalake.transaction import AddAction

from streaming.schema.tables import PARTITION_COLUMNS, TABLES, batch_tables, last_row_per_group

from .delta_files import add_action_fields, row_count, write_data_files

__all__ = ["DeltaSink"]

log = logging.getLogger("groupscope.delta")


class DeltaSink:
    def __init__(self, root: str | Path, *, app_id: str = "groupscope", storage_options: Mapping[str, str] | None = None
                 ) -> None:
        self.root = str(root).rstrip("/")
        if "://" not in self.root:
            # Absolute: executors that write data files (``delta_files``) run in other working directories.
            self.root = str(Path(self.root).resolve())
        self.app_id = app_id
        self.storage_options = dict(storage_options or {}) or None
        # One lock per table, held by a batch's write and by maintenance (``delta_maintenance``): a compaction that
        # commits between a merge's read and its commit would make the merge fail, and with it the micro-batch.
        self.locks: dict[str, threading.Lock] = {name: threading.Lock() for name in TABLES}
        if "://" not in self.root:
            Path(self.root).mkdir(parents=True, exist_ok=True)

    def path(self, table: str) -> str:
        return f"{self.root}/{table}"

    def _open(self, table: str) -> DeltaTable | None:
        try:
            return DeltaTable(self.path(table), storage_options=self.storage_options)
        except TableNotFoundError:
            return None

    def batches_written(self) -> dict[str, int]:
        """The last micro-batch id each existing table recorded for this app id (tables never written: absent)."""
        out = {}
        for name in TABLES:
            version = self.written_version(name)
            if version is not None:
                out[name] = version
        return out

    def written_version(self, table: str) -> int | None:
        dt = self._open(table)
        return None if dt is None else dt.transaction_version(self.app_id)

    def write_batch(self, batch_id: int, tables: Mapping[str, pa.Table],
                    files: Mapping[str, list[dict]] | None = None,
                    unwritten: Mapping[str, pa.Table] | None = None) -> dict[str, int]:
        """Writes every non-empty table of one micro-batch, and commits the data files executors already wrote
        for others (``files``: table → add actions, see ``delta_files``); returns rows written per table (0 =
        skipped: this batch had already reached the table before a restart). A table with files is committed
        from them alone: rows of it in ``tables`` are a copy passed on for the driver's own use. ``unwritten``:
        rows of such tables the executors left to the driver (``bulk_files``), written here as data files and
        committed with theirs, in the same transaction."""
        written: dict[str, int] = {}
        files = {name: list(actions) for name, actions in (files or {}).items()}
        for name, rows in (unwritten or {}).items():
            if rows.num_rows:
                files.setdefault(name, []).extend(
                    write_data_files(self.path(name), rows.cast(TABLES[name]), PARTITION_COLUMNS[name]))
        for name, table in batch_tables(tables):
            if name in files:  # executors wrote its files; these rows are the driver's copy (e.g. for /metrics)
                continue
            with self.locks[name]:
                written[name] = self._write_table(batch_id, name, table)
        for name, actions in files.items():
            if actions:
                with self.locks[name]:
                    written[name] = written.get(name, 0) + self.commit_files(batch_id, name, actions)
        return written

    def prepare_append_tables(self, names: list[str]) -> None:
        """Creates the append-only tables ``names`` (empty) or adds the columns this version has and the table
        lacks, before any executor writes files for them: files written elsewhere must match the table's schema,
        and a commit of ready-made files cannot evolve it."""
        for name in names:
            with self.locks[name]:
                write_deltalake(self.path(name), TABLES[name].empty_table(), mode="append",
                                partition_by=PARTITION_COLUMNS[name] or None, storage_options=self.storage_options,
                                schema_mode="merge")

    def commit_files(self, batch_id: int, name: str, actions: list[dict]) -> int:
        """Commits data files written by executors in one transaction, unless this batch already reached the
        table; returns the rows committed."""
        dt = self._open(name)
        if dt is None:
            raise RuntimeError(f"Delta table {self.path(name)} does not exist; prepare_append_tables creates it")
        done = dt.transaction_version(self.app_id)
        if done is not None and done >= batch_id:
            return 0  # replayed batch: its files stay unreferenced and vacuum removes them
        commit = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)])
        dt.create_write_transaction([AddAction(**add_action_fields(a)) for a in actions], mode="append",
                                    schema=TABLES[name], partition_by=PARTITION_COLUMNS[name] or None,
                                    commit_properties=commit)
        return row_count(actions)

    def _write_table(self, batch_id: int, name: str, table: pa.Table) -> int:
        """Writes one table of a batch unless this batch already reached it; returns the rows written."""
        dt = self._open(name)
        done = None if dt is None else dt.transaction_version(self.app_id)
        if done is not None and done >= batch_id:
            return 0  # this batch already reached this table before a restart
        commit = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)])
        if name == "groups":
            self._merge_groups(dt, table, commit)
        else:
            # schema_mode="merge": tables written by an older version gain the newer columns (null before).
            write_deltalake(self.path(name), table, mode="append", partition_by=PARTITION_COLUMNS[name] or None,
                            storage_options=self.storage_options, commit_properties=commit, schema_mode="merge")
        return table.num_rows

    def _merge_groups(self, dt: DeltaTable | None, table: pa.Table, commit: CommitProperties) -> None:
        table = last_row_per_group(table)
        if dt is None:
            live = table.filter(pc.invert(table.column("deleted")))
            write_deltalake(self.path("groups"), live, mode="append", storage_options=self.storage_options,
                            commit_properties=commit)
            return
        (
            dt.merge(table, predicate="t.group_id = s.group_id", source_alias="s", target_alias="t",
                     commit_properties=commit, merge_schema=True)
            .when_matched_delete(predicate="s.deleted")
            .when_matched_update_all()
            .when_not_matched_insert_all(predicate="NOT s.deleted")
            .execute()
        )

    def read(self, table: str) -> pa.Table:
        """The whole table (for ``groupscope status`` and tests)."""
        dt = self._open(table)
        if dt is None:
            return TABLES[table].empty_table()
        return dt.to_pyarrow_table()
