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

from streaming.schema.tables import PARTITION_COLUMNS, TABLES, batch_tables, last_row_per_group

__all__ = ["DeltaSink"]

log = logging.getLogger("groupscope.delta")


class DeltaSink:
    def __init__(self, root: str | Path, *, app_id: str = "groupscope", storage_options: Mapping[str, str] | None = None
                 ) -> None:
        self.root = str(root).rstrip("/")
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

    def written_version(self, table: str) -> int | None:
        dt = self._open(table)
        return None if dt is None else dt.transaction_version(self.app_id)

    def write_batch(self, batch_id: int, tables: Mapping[str, pa.Table]) -> dict[str, int]:
        """Writes every non-empty table of one micro-batch; returns rows written per table (0 = skipped)."""
        written: dict[str, int] = {}
        for name, table in batch_tables(tables):
            with self.locks[name]:
                written[name] = self._write_table(batch_id, name, table)
        return written

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
