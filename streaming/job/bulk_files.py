"""The executor side of a micro-batch: the bulk tables' rows become Parquet files where they were computed.

The stateful step emits, per shard, its output tables. For the bulk tables (``commits``, and ``lag`` unless the
driver needs its rows for per-partition metrics) :meth:`BulkWrite.rows` writes each as data files of its Delta
table (``sinks.delta_files``), in the same Python worker that ran the step, and emits a ``files:<table>`` row
listing the files' add actions instead of the rows. Only those small rows and the other tables' payloads travel to
the driver, which commits the files in one transaction per table and batch.

A shard's rows below ``inline_below`` travel to the driver instead, as an ``unwritten:<table>`` payload, and the
driver writes them all as one file committed with the executors' files. Live, a shard has a few hundred commits a
batch: a file per shard and batch (fifty a second for a 50-partition offsets topic) costs each step ~3 ms of
Parquet writing and leaves the table with thousands of tiny files an hour; a catch-up's shards, with up to
hundreds of thousands of rows each, still write their own files.

Why inside the stateful function and not in a ``mapInArrow`` after it: a second Python operator in the same task
needs a second Python worker per task slot (another process holding a batch's data) and sends every payload from
Python to the JVM and back again before it is written. Plain Python and pyarrow: tested without Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa

from streaming.schema.tables import PARTITION_COLUMNS, TABLES
from streaming.sinks.delta_files import write_data_files

from .batch_sink import FILES_PREFIX, UNWRITTEN_PREFIX, encode_table

__all__ = ["FILES_PREFIX", "UNWRITTEN_PREFIX", "INLINE_BELOW_ROWS", "BulkWrite", "step_rows"]

# A shard's bulk rows below this many go to the driver to be written with the others (see above): at 50 shards at
# most 100,000 rows a batch reach the driver this way, a few MB of Arrow payloads.
INLINE_BELOW_ROWS = 2_000


def step_rows(shard: int, tables: dict[str, pa.Table], bulk: "BulkWrite | None" = None) -> list[tuple[int, str, bytes]]:
    """One shard's output rows (``shard``, ``kind``, ``payload``): each table as an Arrow IPC payload, or, for the
    tables ``bulk`` names, written as data files and replaced by their add actions."""
    if bulk is None:
        return [(shard, name, encode_table(t)) for name, t in tables.items()]
    return bulk.rows(shard, tables)


@dataclass(frozen=True)
class BulkWrite:
    """Which step output tables are written where they are computed, and under which Delta root.

    ``also_to_driver``: of those tables, the ones whose rows the driver still needs (they are passed on as well as
    written). ``inline_below``: a shard's rows of a table (not one of ``also_to_driver``) fewer than this are left
    for the driver to write (0: every shard writes its own files)."""

    delta_root: str
    tables: frozenset[str]
    also_to_driver: frozenset[str] = frozenset()
    inline_below: int = 0

    def rows(self, shard: int, tables: dict[str, pa.Table]) -> list[tuple[int, str, bytes]]:
        out: list[tuple[int, str, bytes]] = []
        for kind, table in tables.items():
            if kind in self.tables:
                if 0 < table.num_rows < self.inline_below and kind not in self.also_to_driver:
                    out.append((shard, UNWRITTEN_PREFIX + kind, encode_table(table)))
                    continue
                actions = write_data_files(f"{self.delta_root}/{kind}", table.cast(TABLES[kind]),
                                           PARTITION_COLUMNS[kind])
                out.append((shard, FILES_PREFIX + kind, json.dumps(actions).encode()))
                if kind not in self.also_to_driver:
                    continue
            out.append((shard, kind, encode_table(table)))
        return out
