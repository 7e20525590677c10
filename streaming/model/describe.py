"""``groupscope describe``: the model's groups in the Admin API's words, plus groupscope's own fields.

The field names and values are those of Kafka's Admin API (``describeConsumerGroups`` and
``listConsumerGroupOffsets``) so a user can diff the output against ``kafka-consumer-groups.sh``: ``group_id``,
``type``, ``state``, ``partition_assignor``, ``members`` (``member_id``, ``client_id``, ``host``,
``group_instance_id``, ``assignment``, ``target_assignment``), ``offsets`` (``topic``, ``partition``, ``offset``,
``metadata``, ``leader_epoch`` — null for −1, as ``OffsetAndMetadata.leaderEpoch()`` is empty then) and, with end
offsets, ``lag``. Admin states the log cannot show (PREPARING_REBALANCE, COMPLETING_REBALANCE) never appear:
a classic group restored from the log is STABLE or EMPTY, exactly as in Kafka's own loader.
"""

from __future__ import annotations

from typing import Any, Mapping

from .rules import shown_status
from .shard import GroupCoordinatorShard, shards_of
from .states import GroupType

__all__ = ["describe", "describe_group", "render_text"]


def _tp_list(tps) -> list[list]:
    return [[t, p] for t, p in sorted(tps)]


def describe_group(shard: GroupCoordinatorShard, gid: str,
                   end_offsets: Mapping[tuple[str, int], int] | None = None, now_ms: int | None = None) -> dict:
    """One group as a JSON-ready dict (see module docstring)."""
    snap = shard._group_snapshot(gid, shard.now_ms if now_ms is None else now_ms, True)
    g = shard.groups.get(gid)
    consumer_like = snap.group_type in (GroupType.CONSUMER, GroupType.SHARE, GroupType.STREAMS)
    streams = snap.group_type == GroupType.STREAMS
    members = []
    for m in sorted(snap.members, key=lambda m: m.member_id):
        members.append({
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.host,
            "group_instance_id": m.instance_id,
            "assignment": _tp_list(m.assignment),
            "target_assignment": _tp_list(m.target_assignment) if (consumer_like and m.target_assignment is not None)
            else None,
            # groupscope's own
            "member_epoch": m.member_epoch,
            "member_state": m.state,
            "subscribed_topics": list(m.subscribed_topics),
            "subscribed_regex": m.subscribed_regex,
            "pending_revocation": _tp_list(m.pending_revocation),
            "uses_classic_protocol": m.uses_classic_protocol,
            "session_timeout_ms": m.session_timeout_ms,
            "rebalance_timeout_ms": m.rebalance_timeout_ms,
            # streams groups: tasks as (subtopology, partition), what kafka-streams-groups.sh shows
            **({"active_tasks": _tp_list(m.active_tasks), "target_tasks": _tp_list(m.target_tasks)} if streams else {}),
        })
    offsets = [{"topic": p.topic, "partition": p.partition, "offset": p.committed, "metadata": p.metadata,
                "leader_epoch": None if p.leader_epoch < 0 else p.leader_epoch} for p in snap.partitions]
    out: dict[str, Any] = {
        "group_id": gid,
        "type": snap.group_type.value,
        "state": snap.state,
        "is_simple_consumer_group": snap.is_simple,
        "partition_assignor": snap.assignor,
        "members": members,
        "offsets": offsets,
        # groupscope's own
        "protocol_type": snap.protocol_type,
        "generation": snap.generation if snap.group_type == GroupType.CLASSIC else None,
        "group_epoch": snap.generation if snap.group_type != GroupType.CLASSIC else None,
        "assignment_epoch": snap.assignment_epoch,
        "leader": snap.leader,
        "current_state_timestamp": snap.current_state_timestamp,
        "rebalances": snap.rebalances,
        "last_rebalance_timestamp": snap.last_rebalance_timestamp,
        # null where nothing was judged (no log end offset known): not "OK"
        "status": shown_status(snap.status.name, snap.sum_lag),
        "partitions": [{"topic": p.topic, "partition": p.partition, "lag": p.lag, "lag_seconds": p.lag_seconds,
                        "lag_seconds_lower_bound": p.lag_seconds_lower_bound, "data_loss_risk": p.data_loss_risk,
                        "status": shown_status(p.status.name, p.lag), "owner": p.owner} for p in snap.partitions],
    }
    if end_offsets is not None:
        lag = {}
        for p in snap.partitions:
            end = end_offsets.get((p.topic, p.partition))
            if end is not None:
                lag[f"{p.topic}:{p.partition}"] = {"committed": p.committed, "log_end": end,
                                                   "lag": max(0, end - p.committed)}
        out["lag"] = lag
    if g is not None and g.exclusive_owners:
        out["owners"] = {f"{p.topic}:{p.partition}": p.owner for p in snap.partitions if p.owner}
    return out


def describe(shard_or_model, end_offsets: Mapping[tuple[str, int], int] | None = None,
             now_ms: int | None = None) -> dict:
    """``{"groups": {GROUP_ID: {...}}}`` for a shard, a :class:`CoordinatorModel` or an iterable of shards.

    Raises:
        TypeError: an argument that is not a shard or an iterable of shards.
    """
    groups: dict[str, dict] = {}
    for shard in shards_of(shard_or_model):
        if not isinstance(shard, GroupCoordinatorShard):
            raise TypeError(f"describe() needs shards, got {type(shard).__name__}")
        for gid in shard.group_ids():
            groups[gid] = describe_group(shard, gid, end_offsets, now_ms)
    return {"groups": dict(sorted(groups.items()))}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(15, len(h), *(len(r[i]) for r in rows)) + 1 for i, h in enumerate(header)]
    fmt = lambda cells: "".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return [fmt(header), *(fmt(r) for r in rows)]


def _assignment_text(tps: list[list]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in by_topic.items()) or "-"


def _tasks_text(tasks: list[list]) -> str:
    """Tasks as ``kafka-streams-groups.sh`` prints them: ``SUBTOPOLOGY:[PARTITIONS]``, space-separated."""
    by_sub: dict[str, list[int]] = {}
    for sub, p in tasks:
        by_sub.setdefault(sub, []).append(p)
    return " ".join(f"{sub}:[{','.join(map(str, ps))}]" for sub, ps in by_sub.items()) or "-"


def render_text(described: dict) -> str:
    """Plain text like ``kafka-consumer-groups.sh --describe --members --verbose`` then ``--offsets``."""
    lines: list[str] = []
    for gid, g in described["groups"].items():
        # The group's own line, as a table like kafka-consumer-groups.sh --describe --state: values under headers.
        epoch = ("EPOCH", g["group_epoch"]) if g["group_epoch"] is not None else ("GENERATION", g["generation"])
        lines.extend(_table(["GROUP", "TYPE", "STATE", "ASSIGNOR", epoch[0], "#MEMBERS", "REBALANCES", "STATUS"],
                            [[gid, str(g["type"]), str(g["state"]), g["partition_assignor"] or "-", str(epoch[1]),
                              str(len(g["members"])), str(g["rebalances"]), g["status"] or "-"]]))
        lines.append("")
        if g["members"]:
            static = any(m["group_instance_id"] for m in g["members"])
            streams = g["type"] == GroupType.STREAMS.value
            header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if static else []) + [
                "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                "TARGET-ASSIGNMENT"] + (["ACTIVE-TASKS", "TARGET-ACTIVE-TASKS"] if streams else [])
            rows = []
            for m in g["members"]:
                modern = m["target_assignment"] is not None
                rows.append([gid, m["member_id"]] + ([m["group_instance_id"] or "-"] if static else []) + [
                    m["host"], m["client_id"], str(len(m["assignment"])),
                    str(m["member_epoch"]) if modern else "-", _assignment_text(m["assignment"]),
                    str(g["assignment_epoch"]) if modern else "-",
                    _assignment_text(m["target_assignment"]) if modern else "-"]
                    + ([_tasks_text(m["active_tasks"]), _tasks_text(m["target_tasks"])] if streams else []))
            lines.extend(_table(header, rows))
        else:
            lines.append(f"Consumer group '{gid}' has no active members.")
        lines.append("")
        members = {m["member_id"]: m for m in g["members"]}
        owners = g.get("owners", {})
        rows = []
        for o in g["offsets"]:
            key = f"{o['topic']}:{o['partition']}"
            lag = g.get("lag", {}).get(key)
            owner = members.get(owners.get(key, ""))
            rows.append([gid, o["topic"], str(o["partition"]), str(o["offset"]),
                         "-" if lag is None else str(lag["log_end"]), "-" if lag is None else str(lag["lag"]),
                         owner["member_id"] if owner else "-", owner["host"] if owner else "-",
                         owner["client_id"] if owner else "-"])
        if rows:
            lines.extend(_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                 "CONSUMER-ID", "HOST", "CLIENT-ID"], rows))
            lines.append("")
    return "\n".join(lines).rstrip("\n")


def render_what_if(doc: dict) -> str:
    """``describe --what-if``: one line per strategy (what moves, the skew), then each strategy's assignment."""
    lines = [f"What each assignor would give group {doc['group_id']} now: {len(doc['members'])} members, "
             + (", ".join(f"{t} ({n} partitions)" for t, n in doc["partitions"].items()) or "no partitions known"),
             ""]
    lines.extend(_table(["STRATEGY", "MOVED", "STAYED", "SKEW", "BALANCED"],
                        [[r["strategy"], str(r["moved"]), str(r["stayed"]), str(r["skew"]),
                          "yes" if r["balanced"] else "no"] for r in doc["strategies"]]))
    lines.append("")
    now = {m["member_id"]: m["assignment"] for m in doc["members"]}
    rows = [["(now)", member, _assignment_text(tps)] for member, tps in sorted(now.items())]
    rows += [[r["strategy"], member, _assignment_text(tps)] for r in doc["strategies"]
             for member, tps in sorted(r["assignment"].items())]
    lines.extend(_table(["STRATEGY", "CONSUMER-ID", "ASSIGNMENT"], rows))
    return "\n".join(lines)
