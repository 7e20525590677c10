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

from streaming.api.source import ClusterSource, seconds_ms
from streaming.schema.read_model import GroupView, MemberView, PartitionView
from streaming.sinks.state_store import StateView

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
    g = view.groups.get(group_id)
    if g is None:
        return error(404, f"group {group_id!r} not found in cluster {name!r}")
    members = g.members_by_id()
    body = {"cluster": name, **_group_summary(group_id, g)}
    body.update(
        protocol_type=g.protocol_type,
        assignor=g.assignor,
        simple=g.is_simple,
        generation=g.generation,
        assignment_epoch=g.assignment_epoch,
        leader=g.leader,
        state_since_ms=g.state_since_ms,
        members=[{"member_id": m.member_id, "client_id": m.client_id, "host": m.host, "instance_id": m.instance_id,
                  "member_epoch": m.member_epoch, "state": m.state, "assigned_partitions": m.partitions}
                 for m in g.members],
        topics=[{"topic": t.topic, "sum_lag": t.sum_lag, "max_lag": t.max_lag, "max_lag_seconds": t.max_lag_seconds}
                for t in g.topics],
        rebalances={
            "total": g.rebalances,
            "last_ms": g.last_rebalance_ms,
            "storms": g.storms,
            "storm_active": g.storm_active,
            "rolling_restarts": g.rolling_restarts,
            "scale_outs": g.scale_outs,
            "scale_ins": g.scale_ins,
            "partitions_moved": g.partitions_moved,
            "last_partitions_moved": g.last_partitions_moved,
            "causes": dict(g.rebalance_causes),
            "verdict": g.verdict,
            "verdict_reason": g.verdict_reason,
        },
        last_commit_ms=g.last_commit_ms,
        updated_ms=g.updated_ms,
        partitions=[_partition(t, n, p, members) for t, n, p in view.group_partitions(group_id)],
    )
    return 200, body


def _cluster_summary(name: str, view: StateView) -> Body:
    h = view.health
    return {"name": name, "groups": len(view.groups), "caught_up": h.caught_up,
            "last_batch_ms": seconds_ms(h.last_batch_time), "heartbeat_ms": seconds_ms(h.heartbeat_time)}


def _group_summary(group_id: str, g: GroupView) -> Body:
    """A group's summary; ``status`` is null while the group is not judged (no log end offset known for its
    partitions), never an OK nobody judged."""
    return {
        "group": group_id,
        "type": g.group_type,
        "state": g.state,
        "status": None if g.status is None else g.status.name,
        "status_reason": g.status_reason,
        "member_count": g.member_count or 0,
        "partition_count": g.partition_count or 0,
        "sum_lag": g.sum_lag,
        "max_lag": g.max_lag,
        "max_lag_seconds": g.max_lag_seconds,
        "max_lag_seconds_lower_bound": g.max_lag_seconds_lower_bound,
        "max_lag_seconds_method": g.max_lag_seconds_method,
        "catch_up_seconds": g.catch_up_seconds,
        "catching_up": g.catching_up,
        "data_loss_partitions": g.data_loss_partitions,
        "verdict": g.verdict,
        "storm_active": g.storm_active,
    }


def _partition(topic: str, partition: int, p: PartitionView, members: Mapping[str, MemberView]) -> Body:
    m = members.get(p.owner) if p.owner else None
    owner = None
    if p.owner:
        owner = {"member_id": p.owner, "client_id": m.client_id if m else None, "host": m.host if m else None}
    return {
        "topic": topic,
        "partition": partition,
        "committed_offset": p.committed_offset,
        "log_end_offset": p.log_end_offset,
        "lag": p.lag,
        "lag_seconds": p.lag_seconds,
        "lag_seconds_lower_bound": p.lag_seconds_lower_bound,
        "lag_seconds_method": p.lag_seconds_method,
        "catch_up_seconds": p.catch_up_seconds,
        "catching_up": p.catching_up,
        "data_loss_risk": p.data_loss_risk,
        "status": None if p.status is None else p.status.name,
        "status_reason": p.status_reason,
        "owner": owner,
        "commit_ms": p.commit_ms,
    }
