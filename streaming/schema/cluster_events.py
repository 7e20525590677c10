"""Cluster events reported by every shard, merged into one ``group_events`` row.

Why: each shard sees a Kafka outage on its own (its heartbeat clock and its log stop together) and reports it
with the groups of its own that rejoined. An operator wants one row per outage, with every group it touched,
not one per ``__consumer_offsets`` partition. The shards' rows of one outage carry the same ``offset`` (the
moment Kafka went away, on the heartbeat clock every shard shares), so they are merged on it.
"""

from __future__ import annotations

import json
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CLUSTER_KINDS", "CLUSTER_SHARD", "merge_cluster_rows", "merge_cluster_events"]

CLUSTER_KINDS = ("KafkaUnavailable",)
CLUSTER_SHARD = -1  # the shard a merged cluster event is written under: it belongs to no one partition


def merge_cluster_rows(rows: Iterable[dict]) -> list[dict]:
    """The rows with every cluster event merged into one per ``(kind, offset)``: the union of their groups, the
    reason said again with the merged count, shard :data:`CLUSTER_SHARD`. Other rows are kept as they are."""
    kept: list[dict] = []
    merged: dict[tuple[str, int], dict] = {}
    for r in rows:
        if r["kind"] not in CLUSTER_KINDS:
            kept.append(r)
            continue
        key = (r["kind"], r["offset"])
        detail = json.loads(r["detail"]) if r.get("detail") else {}
        first = merged.get(key)
        if first is None:
            merged[key] = {**r, "shard": CLUSTER_SHARD, "detail": detail}
            continue
        into = first["detail"]
        into["groups"] = sorted(set(into.get("groups", [])) | set(detail.get("groups", [])))
    for r in merged.values():
        d = r["detail"]
        groups = d.get("groups", [])
        touched = f"{len(groups)} groups rejoined" if groups else "no group had to rejoin"
        d["groups"] = sorted(groups)
        d["reason"] = (f"Kafka unavailable for {d.get('seconds', 0):.0f} s (no heartbeat and no coordinator "
                       f"write); {touched}: a cluster event, not counted against any group")
        r["detail"] = json.dumps(d, sort_keys=True)
        kept.append(r)
    return kept


def merge_cluster_events(table: pa.Table) -> pa.Table:
    """:func:`merge_cluster_rows` over a ``group_events`` table (unchanged when it holds no cluster event)."""
    mask = pc.is_in(table.column("kind"), pa.array(CLUSTER_KINDS))
    if not pc.any(mask).as_py():
        return table
    rest = table.filter(pc.invert(mask))
    merged = merge_cluster_rows(table.filter(mask).to_pylist())
    return pa.concat_tables([rest, pa.Table.from_pylist(merged, schema=table.schema)])
