"""Data files of the append-only Delta tables, written where the rows are (on Spark's executors).

The bulk of what groupscope writes is the ``commits`` table (one row per offset commit: millions during a catch-up)
and the ``lag`` table. Shipping those rows to the driver to write them there makes the driver the part that does
not scale out. So each executor writes the Parquet files of the rows its tasks produced, straight into the table's
folder, and hands back only a small description of each file (a Delta *add action*: path, size, partition values,
row count). The driver then commits all files of a micro-batch in one Delta transaction carrying the same app
transaction ``(app_id, batch_id)`` as every other table (``delta.DeltaSink.commit_files``), so exactly-once holds:
a batch replayed after a crash writes new files, the driver sees that the batch already reached the table and
does not commit them, and they are never part of the table (vacuum removes such unreferenced files).

Plain pyarrow, no Spark: the Spark side only calls :func:`write_data_files` from its stateful function.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Sequence
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["write_data_files", "add_action_fields"]


def _partition_text(value: Any) -> str | None:
    """A partition value as Delta writes it in ``partitionValues`` (dates as ``YYYY-MM-DD``; null stays null)."""
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _filesystem(table_uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in table_uri:
        return pafs.LocalFileSystem(), table_uri
    return pafs.FileSystem.from_uri(table_uri)


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The columns worth dictionary-encoding: strings (group ids, topics repeat on every row of a group). Numbers
    and times (offsets, timestamps) are mostly distinct, so a dictionary only costs: Parquet builds one, finds it
    too large and falls back. Writing a 25,000-row ``commits`` file took 2.3x less time this way, and the file
    came out 17% smaller."""
    return [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def _single_partition(table: pa.Table, partition_by: Sequence[str]) -> dict[str, str | None] | None:
    """The partition values when every row has the same non-null ones (``{}`` for an unpartitioned table; None
    otherwise). The common case (a catch-up batch of one shard spans one day) then skips grouping the rows and
    filtering a copy per group."""
    values: dict[str, str | None] = {}
    for col in partition_by:
        column = table.column(col)
        if column.null_count:
            return None
        low, high = pc.min_max(column).values()
        if low != high:
            return None
        values[col] = _partition_text(low.as_py())
    return values


def write_data_files(table_uri: str, table: pa.Table, partition_by: Sequence[str]) -> list[dict[str, Any]]:
    """Writes ``table`` as Parquet files under ``table_uri`` (one per partition value) and returns their add actions.

    Partition columns are not stored in the files (Delta keeps them in the add action, as Spark and delta-rs
    expect); timestamps are written as microseconds, Delta's only timestamp precision. File names are random, so
    two attempts of one task never overwrite each other's files.
    """
    if table.num_rows == 0:
        return []
    fs, base = _filesystem(table_uri)
    single = _single_partition(table, partition_by)
    if single is not None:
        parts = [(single, table)]
    else:
        keys = table.select(list(partition_by))
        groups = keys.group_by(list(partition_by), use_threads=False).aggregate([])
        parts = []
        for row in groups.to_pylist():
            mask = None
            for col in partition_by:
                value = row[col]
                cond = pc.is_null(table.column(col)) if value is None else pc.equal(table.column(col), value)
                mask = cond if mask is None else pc.and_(mask, cond)
            parts.append(({col: _partition_text(row[col]) for col in partition_by}, table.filter(mask)))
    actions = []
    for values, rows in parts:
        folder = "/".join(f"{col}={quote(v) if v is not None else '__HIVE_DEFAULT_PARTITION__'}"
                          for col, v in values.items())
        relative = (f"{folder}/" if folder else "") + f"part-{uuid.uuid4().hex}.snappy.parquet"
        data = rows.drop_columns(list(partition_by)) if partition_by else rows
        fs.create_dir(f"{base}/{folder}" if folder else base, recursive=True)
        path = f"{base}/{relative}"
        with fs.open_output_stream(path) as out:
            pq.write_table(data, out, compression="snappy", coerce_timestamps="us", allow_truncated_timestamps=False,
                           use_dictionary=_dictionary_columns(data.schema))
        size = fs.get_file_info(path).size
        actions.append({"path": relative, "size": int(size), "partition_values": values,
                        "modification_time": int(time.time() * 1000),
                        "stats": json.dumps({"numRecords": rows.num_rows})})
    return actions


def add_action_fields(action: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``deltalake.transaction.AddAction`` for one written file."""
    return {"path": action["path"], "size": action["size"], "partition_values": action["partition_values"],
            "modification_time": action["modification_time"], "data_change": True, "stats": action["stats"]}


def row_count(actions: Sequence[dict[str, Any]]) -> int:
    return sum(json.loads(a["stats"])["numRecords"] for a in actions)
