"""The executor side of a micro-batch: the bulk tables' rows become Parquet files where they were computed.

The stateful step emits, per shard, one row per output table (an Arrow IPC payload, see ``batch_sink``). For the
bulk tables (``commits``, and ``lag`` unless the driver needs its rows for per-partition metrics) this function,
run by Spark's ``mapInArrow`` on the executors, writes each payload as data files of its Delta table
(``sinks.delta_files``) and replaces the payload by a ``files:<table>`` row listing the files' add actions. Only
those small rows and the other tables' payloads travel to the driver, which commits the files in one transaction per
table and batch. Plain Python and pyarrow: tested without Spark.
"""

from __future__ import annotations

import json
from typing import Iterable, Iterator

import pyarrow as pa

from streaming.schema.tables import PARTITION_COLUMNS, TABLES
from streaming.sinks.delta_files import write_data_files

from .batch_sink import FILES_PREFIX, decode_table

__all__ = ["FILES_PREFIX", "write_bulk_tables"]


def write_bulk_tables(batches: Iterable[pa.RecordBatch], *, delta_root: str, tables: frozenset[str],
                      also_to_driver: frozenset[str] = frozenset()) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: step output rows in (``shard``, ``kind``, ``payload``), the same columns out.

    ``tables``: kinds written here; ``also_to_driver``: of those, the kinds whose rows the driver still needs (they
    are passed on as well as written)."""
    for batch in batches:
        shards = batch.column("shard").to_pylist()
        kinds = batch.column("kind").to_pylist()
        payloads = batch.column("payload").to_pylist()
        out_shards, out_kinds, out_payloads = [], [], []
        for shard, kind, payload in zip(shards, kinds, payloads):
            if kind in tables:
                table = decode_table(payload).cast(TABLES[kind])
                actions = write_data_files(f"{delta_root}/{kind}", table, PARTITION_COLUMNS[kind])
                out_shards.append(shard)
                out_kinds.append(FILES_PREFIX + kind)
                out_payloads.append(json.dumps(actions).encode())
                if kind not in also_to_driver:
                    continue
            out_shards.append(shard)
            out_kinds.append(kind)
            out_payloads.append(payload)
        yield pa.RecordBatch.from_arrays(
            [pa.array(out_shards, batch.schema.field("shard").type), pa.array(out_kinds, pa.string()),
             pa.array(out_payloads, batch.schema.field("payload").type)],
            schema=batch.schema)
