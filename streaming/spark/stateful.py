"""The one ``applyInPandasWithState`` of the query: per coordinator shard, run :class:`streaming.job.step.ShardStep`.

Thin on purpose: it turns Spark's pandas chunks into one Arrow table (unpacking the source's packed chunks, see
:mod:`streaming.job.packed`), restores the shard's state, runs the step and
returns the step's output tables as Arrow IPC payloads. Where Python workers are reused across batches
(``spark.python.worker.reuse: true``; groupscope's default is a fresh worker per task, see
:mod:`streaming.spark.session`), the last step is kept per shard and reused when Spark hands back exactly
the state bytes it last produced (no unpickling of a shard that did not move).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from streaming.job.bulk_files import BulkWrite, step_rows
from streaming.job.step import SOURCE_SCHEMA, ShardStep, StepConfig
from streaming.kafka.range_read import RangeRead

__all__ = ["OUTPUT_DDL", "STATE_DDL", "make_state_function"]

OUTPUT_DDL = "shard int, kind string, payload binary"
STATE_DDL = "state binary"

_CACHE: dict[int, tuple[bytes, ShardStep]] = {}


def make_state_function(config: StepConfig, timeout_ms: int | None, bulk: BulkWrite | None = None,
                        ranges: RangeRead | None = None, *, keep_steps: bool = True):
    """``bulk``: the tables this function writes as Delta data files itself (see :mod:`streaming.job.bulk_files`);
    ``ranges``: how to read the records of the range markers among the chunks (see
    :func:`streaming.job.packed.pack_ranges`); ``keep_steps``: keep each shard's last step for the next batch
    (only where workers are reused: a worker of one task sees each shard once, and keeping the steps it ran
    would only hold their models in memory until it exits)."""

    def run_shard(key, chunks: Iterator, state) -> Iterator:
        import pandas as pd
        import pyarrow as pa

        from streaming.job.batch_sink import encode_health
        from streaming.job.packed import split_ranges, unpack

        shard = int(key[0])
        stored = bytes(state.get[0]) if state.exists else None
        cached = _CACHE.get(shard)
        if stored is not None and cached is not None and cached[0] == stored:
            step = cached[1]
        else:
            step = ShardStep(shard, config, stored)
        frames = [f for f in chunks if len(f)]
        if frames and "payload" in frames[0].columns:  # packed chunks (the groupscope_kafka source)
            payloads, marked = split_ranges(p for f in frames for p in f["payload"])
            table = unpack(payloads)
            if marked:
                if ranges is None:
                    raise RuntimeError("range markers reached a step that was not given how to read them")
                table = pa.concat_tables([table, pa.Table.from_batches(ranges.rows(marked), schema=table.schema)])
        elif frames:  # a row per record (Spark's own kafka source)
            frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            frame = frame[[name for name in SOURCE_SCHEMA.names]]
            table = pa.Table.from_pandas(frame, schema=SOURCE_SCHEMA, preserve_index=False)
        else:
            table = SOURCE_SCHEMA.empty_table()
        tables, health = step.process(table)
        new_state = step.state()
        health = replace(health, state_bytes=len(new_state))
        if keep_steps:
            _CACHE[shard] = (new_state, step)
        state.update((new_state,))
        if timeout_ms is not None:  # None: the query has no timeouts (a backfill: nothing arrives later)
            state.setTimeoutDuration(timeout_ms)
        rows = step_rows(shard, tables, bulk)
        rows.append((shard, "health", encode_health(health)))
        yield pd.DataFrame(rows, columns=["shard", "kind", "payload"])

    return run_shard
