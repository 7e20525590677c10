"""Burrow's v3 HTTP shapes, built from one cluster's :class:`~streaming.sinks.state_store.StateView`.

Each function returns ``(http_status, body)`` with the body's fields in Burrow's order (``error``, ``message``, the
payload); the router adds the ``request`` object. ``view`` is None when the cluster is unknown, so each endpoint
answers that with Burrow's own 404 message for it. Field names, messages and 404 rules follow Burrow's HTTP server
and evaluator (docs/http-api.md lists them and every place groupscope differs).

Statuses (docs/http-api.md#statuses): groupscope's partition statuses keep their names (OK, WARN, STALL, STOP,
REWIND), because they mean what Burrow's do; ERR, groupscope's data loss (the committed offset fell below the low
watermark), stays ERR at partition level: it is the only Burrow name for "worse than stopped" and Burrow clients
already rank it above WARN. A group's status is Burrow's rollup: OK, WARN, or ERR when any partition is STALL,
STOP, REWIND or ERR; NOTFOUND for a group the cluster does not have.

Where groupscope keeps less than Burrow (one committed offset per partition, not a window of ten), the commit
window's ``start`` and ``end`` are that one commit; ``complete`` says whether groupscope has caught up with
``__consumer_offsets`` (1) or is still replaying history (0, statuses held at OK), the same thing Burrow's
completeness says about its window.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streaming.api.source import ClusterSource
from streaming.model.rules import Status
from streaming.schema.read_model import MemberView, PartitionView
from streaming.sinks.state_store import StateView

__all__ = ["PARTITION_STATUS", "GROUP_STATUS", "NOT_FOUND", "cluster_list", "cluster_detail", "topic_list",
           "topic_detail", "topic_consumers", "consumer_list", "consumer_detail", "consumer_status"]

Body = dict[str, Any]

# groupscope's status -> Burrow's name, per partition and for the group (Burrow's rollup).
PARTITION_STATUS: Mapping[Status, str] = {Status.OK: "OK", Status.WARN: "WARN", Status.STALL: "STALL",
                                          Status.STOP: "STOP", Status.REWIND: "REWIND", Status.ERR: "ERR"}
GROUP_STATUS: Mapping[Status, str] = {Status.OK: "OK", Status.WARN: "WARN", Status.STALL: "ERR",
                                      Status.STOP: "ERR", Status.REWIND: "ERR", Status.ERR: "ERR"}
NOT_FOUND = "NOTFOUND"


def _ok(message: str, **payload: Any) -> tuple[int, Body]:
    return 200, {"error": False, "message": message, **payload}


def _not_found(message: str) -> tuple[int, Body]:
    return 404, {"error": True, "message": message}


def cluster_list(names: Iterable[str]) -> tuple[int, Body]:
    return _ok("cluster list returned", clusters=sorted(names))


def cluster_detail(source: ClusterSource | None) -> tuple[int, Body]:
    """Burrow answers with its cluster module's configuration; groupscope's is the Kafka connection and the
    heartbeat interval at which it lists end offsets (both of Burrow's refresh intervals)."""
    if source is None:
        return _not_found("cluster module not found")
    info = source.info
    sasl = None
    if info.security_protocol.upper().startswith("SASL"):
        sasl = {"name": info.sasl_mechanism, "handshake-first": True, "username": info.sasl_username}
    tls = None
    if info.security_protocol.upper().endswith("SSL"):
        tls = {"name": "ssl", "noverify": False, "certfile": "", "keyfile": "", "cafile": ""}
    refresh = int(round(info.refresh_seconds))
    return _ok("cluster module detail returned", module={
        "class-name": "kafka",
        "servers": list(info.servers),
        "client-profile": {"name": "groupscope", "client-id": info.client_id, "kafka-version": "", "tls": tls,
                           "sasl": sasl},
        "topic-refresh": refresh,
        "offset-refresh": refresh,
    })


def topic_list(view: StateView | None) -> tuple[int, Body]:
    if view is None:
        return _not_found("cluster not found")
    return _ok("topic list returned", topics=sorted(view.topic_end_offsets()))


def topic_detail(view: StateView | None, topic: str) -> tuple[int, Body]:
    """End offsets indexed by partition; -1 for a partition whose end offset groupscope has not measured."""
    ends = view.topic_end_offsets().get(topic) if view is not None else None
    if ends is None:
        return _not_found("cluster or topic not found")
    return _ok("topic offsets returned", offsets=[ends.get(p, -1) for p in range(max(ends) + 1)])


def topic_consumers(view: StateView | None, topic: str) -> tuple[int, Body]:
    if view is None:
        return _not_found("cluster not found")
    groups = sorted(g for g, parts in view.partitions.items() if g in view.groups and any(t == topic for t, _ in parts))
    return _ok("consumers of topic returned", consumers=groups)


def consumer_list(view: StateView | None) -> tuple[int, Body]:
    if view is None:
        return _not_found("cluster not found")
    return _ok("consumer list returned", consumers=sorted(view.groups))


def consumer_detail(view: StateView | None, group: str) -> tuple[int, Body]:
    """Per topic, an array indexed by partition: the committed offset (Burrow's window of one), owner host and
    client id, current lag. A partition below the group's highest that has no committed offset is an empty entry,
    as in Burrow."""
    if view is None or group not in view.groups:
        return _not_found("cluster or consumer not found")
    members = view.groups[group].members_by_id()
    topics: dict[str, list[Body]] = {}
    for topic, partition, p in view.group_partitions(group):
        entries = topics.setdefault(topic, [])
        while len(entries) < partition:
            entries.append({"offsets": [], "owner": "", "client_id": "", "current-lag": 0})
        owner, client_id = _owner(p, members)
        offset = _offset(p)
        entries.append({"offsets": [] if offset is None else [offset], "owner": owner, "client_id": client_id,
                        "current-lag": _lag(p)})
    return _ok("consumer detail returned", topics=topics)


def consumer_status(cluster: str, view: StateView | None, group: str, *, show_all: bool) -> tuple[int, Body]:
    """Burrow's evaluation: every partition with ``show_all`` (``/lag``), only those not OK otherwise (``/status``);
    ``maxlag`` is the partition with the highest current lag (the first of equals), ``totallag`` their sum."""
    if view is None or group not in view.groups:
        return 404, {"error": False, "message": "consumer status returned",
                     "status": {"cluster": cluster, "group": group, "status": NOT_FOUND, "complete": 1.0,
                                "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0}}
    g = view.groups[group]
    members = g.members_by_id()
    complete = 1.0 if view.health.caught_up else 0.0
    partitions = []
    worst: Status | None = None
    for topic, partition, p in view.group_partitions(group):
        # Burrow has no name for "not judged": such a partition is OK, as Burrow reports a partition whose window
        # is not complete.
        status = p.status or Status.OK
        worst = status if worst is None or status > worst else worst
        owner, client_id = _owner(p, members)
        offset = _offset(p)
        partitions.append({"topic": topic, "partition": partition, "owner": owner, "client_id": client_id,
                           "status": PARTITION_STATUS[status], "start": offset, "end": offset,
                           "current_lag": _lag(p), "complete": complete})
    maxlag = None
    for entry in partitions:
        if maxlag is None or entry["current_lag"] > maxlag["current_lag"]:
            maxlag = entry
    status = g.status or worst or Status.OK
    return _ok("consumer status returned", status={
        "cluster": cluster,
        "group": group,
        "status": GROUP_STATUS[status],
        "complete": complete if partitions else 0.0,
        "partitions": partitions if show_all else [e for e in partitions if e["status"] != "OK"],
        "partition_count": len(partitions),
        "maxlag": maxlag,
        "totallag": sum(e["current_lag"] for e in partitions),
    })


def _owner(p: PartitionView, members: Mapping[str, MemberView]) -> tuple[str, str]:
    """Burrow's owner is the member's host (as the coordinator records it, e.g. ``/10.0.0.7``); its client id beside."""
    m = members.get(p.owner) if p.owner else None
    if m is None:
        return "", ""
    return m.host, m.client_id


def _offset(p: PartitionView) -> Body | None:
    """The committed offset as Burrow's stored offset. ``observedAt`` is the commit's own time: groupscope reads
    commits from the log, where the coordinator stamped them. ``lag`` (at commit time) is not kept: null, as Burrow
    sends for a commit it could not measure."""
    if p.committed_offset is None:
        return None
    ts = p.commit_ms or 0
    return {"offset": p.committed_offset, "timestamp": ts, "observedAt": ts, "lag": None}


def _lag(p: PartitionView) -> int:
    return max(0, p.lag or 0)
