"""groupscope's own ``/v1`` shapes: what the model knows beyond Burrow's fields, from one cluster's state.

Burrow's shapes stay Burrow's; everything else groupscope knows goes here: KIP-848 state and epochs, members with
their epochs and states, lag in seconds (and whether it is a lower bound), the reason behind each status, data-loss
risk, rebalance counts, causes and verdicts. Times are epoch milliseconds in fields ending ``_ms``; statuses are
groupscope's own names (OK, WARN, STALL, STOP, REWIND, ERR). ``openapi.json`` beside this module describes every
shape; a test holds the two together.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streaming.api.source import (ClusterSource, group_partitions, int_or_none, members_by_id, number,
                                  partition_status, time_ms)
from streaming.sinks.prometheus import StateView

__all__ = ["clusters", "cluster", "groups", "group", "error"]

Body = dict[str, Any]


def error(status: int, message: str) -> tuple[int, Body]:
    return status, {"error": {"status": status, "message": message}}


def clusters(sources: Mapping[str, ClusterSource]) -> tuple[int, Body]:
    return 200, {"clusters": [_cluster_summary(name, sources[name].view()) for name in sorted(sources)]}


def cluster(name: str, view: StateView | None) -> tuple[int, Body]:
    """The cluster's monitor health: how far ``__consumer_offsets`` is read, the last batch, the newest heartbeat."""
    if view is None:
        return error(404, f"cluster {name!r} not found")
    h = view.health
    body = _cluster_summary(name, view)
    body["offsets_partitions"] = [
        {"partition": p.partition, "last_offset": p.last_offset, "high_watermark": p.high_watermark,
         "last_stable_offset": p.last_stable_offset, "behind": p.behind, "caught_up": p.caught_up}
        for p in h.offsets_partitions]
    body.update(batches=h.batches, records_decoded=h.records_decoded, decode_errors=h.decode_errors,
                query_restarts=h.query_restarts, model_anomalies=view.anomalies)
    return 200, body


def groups(name: str, view: StateView | None) -> tuple[int, Body]:
    if view is None:
        return error(404, f"cluster {name!r} not found")
    return 200, {"cluster": name, "groups": [_group_summary(g, view.groups[g]) for g in sorted(view.groups)]}


def group(name: str, view: StateView | None, group_id: str) -> tuple[int, Body]:
    if view is None:
        return error(404, f"cluster {name!r} not found")
    row = view.groups.get(group_id)
    if row is None:
        return error(404, f"group {group_id!r} not found in cluster {name!r}")
    members = members_by_id(row)
    body = {"cluster": name, **_group_summary(group_id, row)}
    body.update(
        protocol_type=row.get("protocol_type"),
        assignor=row.get("assignor"),
        simple=bool(row.get("is_simple")),
        generation=int_or_none(row.get("generation")),
        assignment_epoch=int_or_none(row.get("assignment_epoch")),
        leader=row.get("leader"),
        state_since_ms=time_ms(row.get("state_time")),
        members=[{"member_id": m.get("member_id"), "client_id": m.get("client_id"), "host": m.get("host"),
                  "instance_id": m.get("instance_id"), "member_epoch": int_or_none(m.get("member_epoch")),
                  "state": m.get("state"), "assigned_partitions": int_or_none(m.get("partitions")) or 0}
                 for m in row.get("members") or ()],
        topics=[{"topic": t.get("topic"), "sum_lag": int_or_none(t.get("sum_lag")),
                 "max_lag": int_or_none(t.get("max_lag")), "max_lag_seconds": number(t.get("max_lag_seconds"))}
                for t in row.get("topics") or ()],
        rebalances={
            "total": int_or_none(row.get("rebalances")) or 0,
            "last_ms": time_ms(row.get("last_rebalance_time")),
            "storms": int_or_none(row.get("storms")) or 0,
            "storm_active": bool(row.get("storm_active")),
            "rolling_restarts": int_or_none(row.get("rolling_restarts")) or 0,
            "scale_outs": int_or_none(row.get("scale_outs")) or 0,
            "scale_ins": int_or_none(row.get("scale_ins")) or 0,
            "partitions_moved": int_or_none(row.get("partitions_moved")) or 0,
            "last_partitions_moved": int_or_none(row.get("last_partitions_moved")),
            "causes": {str(c["cause"]): int(c["rebalances"]) for c in row.get("rebalance_causes") or ()},
            "verdict": row.get("verdict"),
            "verdict_reason": row.get("verdict_reason"),
        },
        last_commit_ms=time_ms(row.get("last_commit_time")),
        updated_ms=time_ms(row.get("updated_time")),
        partitions=[_partition(t, n, p, members) for t, n, p in group_partitions(view, group_id)],
    )
    return 200, body


def _cluster_summary(name: str, view: StateView) -> Body:
    h = view.health
    return {"name": name, "groups": len(view.groups), "caught_up": h.caught_up,
            "last_batch_ms": time_ms(h.last_batch_time), "heartbeat_ms": time_ms(h.heartbeat_time)}


def _group_summary(group_id: str, row: Mapping[str, Any]) -> Body:
    return {
        "group": group_id,
        "type": row.get("group_type"),
        "state": row.get("state"),
        "status": row.get("status"),
        "status_reason": row.get("status_reason"),
        "member_count": int_or_none(row.get("member_count")) or 0,
        "partition_count": int_or_none(row.get("partition_count")) or 0,
        "sum_lag": int_or_none(row.get("sum_lag")),
        "max_lag": int_or_none(row.get("max_lag")),
        "max_lag_seconds": number(row.get("max_lag_seconds")),
        "max_lag_seconds_lower_bound": bool(row.get("max_lag_seconds_lower_bound")),
        "data_loss_partitions": int_or_none(row.get("data_loss_partitions")) or 0,
        "verdict": row.get("verdict"),
        "storm_active": bool(row.get("storm_active")),
    }


def _partition(topic: str, partition: int, p, members: Mapping[str, Mapping[str, Any]]) -> Body:
    status = partition_status(p)
    m = members.get(p.owner) if p.owner else None
    owner = None
    if p.owner:
        owner = {"member_id": p.owner, "client_id": m.get("client_id") if m else None,
                 "host": m.get("host") if m else None}
    return {
        "topic": topic,
        "partition": partition,
        "committed_offset": int_or_none(p.committed_offset),
        "log_end_offset": int_or_none(p.log_end_offset),
        "lag": int_or_none(p.lag),
        "lag_seconds": p.lag_seconds,
        "lag_seconds_lower_bound": bool(p.lag_seconds_lower_bound),
        "data_loss_risk": bool(p.data_loss_risk),
        "status": None if status is None else status.name,
        "status_reason": p.status_reason,
        "owner": owner,
        "commit_ms": time_ms(p.commit_time),
    }
