"""One shape for "what a consumer group is", read from Kafka's tools and from each of groupscope's outputs, and the
diff between two of them.

Kafka's ``kafka-consumer-groups`` is the reference. Its tables are turned into :class:`GroupView` values; so are
groupscope's ``groups`` and ``lag`` Delta tables, ``describe --segments --json`` and the tables a backfill wrote.
Each source holds only part of what the tool prints (segment files have no log ends; the ``groups`` table counts a
member's partitions and the ``lag`` table names each committed partition's owner), so a comparison names the
fields its source cannot know and those are blanked on both sides: everything else must be equal, and the diff
lists every field of every group that is not.

Names are normalised only where the two spell the same value differently: the tool prints states and types in
title case (``Stable``, ``Consumer``) and ``-`` for "none"; groupscope prints them upper case and null.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class MemberView:
    member_id: str
    instance_id: str | None
    host: str | None
    client_id: str | None
    partitions: int
    assignment: tuple[TopicPartition, ...]
    epoch: int | None  # a consumer-protocol member's epoch (the tool's CURRENT-EPOCH)
    target_epoch: int | None
    target_assignment: tuple[TopicPartition, ...] | None


@dataclass(frozen=True)
class OffsetView:
    topic: str
    partition: int
    committed: int
    log_end: int | None
    lag: int | None
    owner: str | None  # the member the partition is assigned to


@dataclass(frozen=True)
class GroupView:
    group_id: str
    type: str | None
    state: str
    assignor: str | None
    member_count: int
    group_epoch: int | None  # consumer-protocol groups: the group epoch and the target assignment's epoch
    target_epoch: int | None
    members: tuple[MemberView, ...]  # sorted by member id
    offsets: tuple[OffsetView, ...]  # sorted by topic and partition


# ---- Kafka's tool -------------------------------------------------------------------------------------------------


def _cell(value: str | None) -> str | None:
    return None if value in (None, "-") else value


def _int_cell(value: str | None) -> int | None:
    v = _cell(value)
    return None if v is None else int(v)


def parse_assignment(text: str | None) -> tuple[TopicPartition, ...]:
    """The tool's ``topic:0,1;other:2`` assignment cell (``-`` when empty)."""
    if _cell(text) is None:
        return ()
    out = []
    for part in text.split(";"):  # type: ignore[union-attr]
        topic, _, partitions = part.rpartition(":")
        out.extend((topic, int(p)) for p in partitions.split(",") if p)
    return tuple(sorted(out))


def kafka_views(tables: Mapping[str, list[dict[str, str]]], types: Mapping[str, str]) -> dict[str, GroupView]:
    """``describe_all``'s three tables and ``--list --type``'s group types as one view per group."""
    members: dict[str, list[MemberView]] = {}
    for row in tables["members"]:
        target = _cell(row.get("TARGET-ASSIGNMENT"))
        members.setdefault(row["GROUP"], []).append(MemberView(
            member_id=row["CONSUMER-ID"], instance_id=_cell(row.get("GROUP-INSTANCE-ID")), host=_cell(row["HOST"]),
            client_id=_cell(row["CLIENT-ID"]), partitions=int(row["#PARTITIONS"]),
            assignment=parse_assignment(row.get("CURRENT-ASSIGNMENT", row.get("ASSIGNMENT"))),
            epoch=_int_cell(row.get("CURRENT-EPOCH")), target_epoch=_int_cell(row.get("TARGET-EPOCH")),
            target_assignment=None if _cell(row.get("TARGET-EPOCH")) is None and target is None
            else parse_assignment(target)))
    offsets: dict[str, list[OffsetView]] = {}
    for row in tables["offsets"]:
        if _cell(row["CURRENT-OFFSET"]) is None:
            continue  # assigned, never committed: groupscope has no row for it either
        offsets.setdefault(row["GROUP"], []).append(OffsetView(
            topic=row["TOPIC"], partition=int(row["PARTITION"]), committed=int(row["CURRENT-OFFSET"]),
            log_end=_int_cell(row["LOG-END-OFFSET"]), lag=_int_cell(row["LAG"]), owner=_cell(row["CONSUMER-ID"])))
    views = {}
    for row in tables["state"]:
        group = row["GROUP"]
        views[group] = GroupView(
            group_id=group, type=types.get(group, "").upper() or None, state=row["STATE"].upper(),
            assignor=_cell(row["ASSIGNMENT-STRATEGY"]), member_count=int(row["#MEMBERS"]),
            group_epoch=_int_cell(row.get("GROUP-EPOCH")), target_epoch=_int_cell(row.get("TARGET-ASSIGNMENT-EPOCH")),
            members=tuple(sorted(members.get(group, []), key=lambda m: m.member_id)),
            offsets=tuple(sorted(offsets.get(group, []), key=lambda o: (o.topic, o.partition))))
    return views


# ---- groupscope ---------------------------------------------------------------------------------------------------


def _pairs(items: Iterable[Iterable[Any]] | None) -> tuple[TopicPartition, ...] | None:
    return None if items is None else tuple(sorted((str(t), int(p)) for t, p in items))


def describe_views(described: Mapping[str, Any]) -> dict[str, GroupView]:
    """``groupscope describe --segments --json``'s ``groups`` object (with ``--end-offsets``: log ends and lag)."""
    views = {}
    for group, g in described.items():
        consumer = g["type"] == "CONSUMER"
        lag = g.get("lag") or {}
        owners = g.get("owners") or {}
        members = tuple(sorted((MemberView(
            member_id=m["member_id"], instance_id=m["group_instance_id"], host=m["host"], client_id=m["client_id"],
            partitions=len(m["assignment"] or ()), assignment=_pairs(m["assignment"]) or (),
            epoch=m["member_epoch"], target_epoch=g["assignment_epoch"] if consumer else None,
            target_assignment=_pairs(m["target_assignment"])) for m in g["members"]), key=lambda m: m.member_id))
        offsets = []
        for o in g["offsets"]:
            key = f"{o['topic']}:{o['partition']}"
            ends = lag.get(key) or {}
            offsets.append(OffsetView(o["topic"], o["partition"], o["offset"], ends.get("log_end"), ends.get("lag"),
                                      owners.get(key)))
        views[group] = GroupView(
            group_id=group, type=g["type"], state=g["state"], assignor=g["partition_assignor"] or None,
            member_count=len(members), group_epoch=g["group_epoch"] if consumer else None,
            target_epoch=g["assignment_epoch"] if consumer else None, members=members,
            offsets=tuple(sorted(offsets, key=lambda o: (o.topic, o.partition))))
    return views


def delta_views(groups: list[dict[str, Any]], lag: list[dict[str, Any]]) -> dict[str, GroupView]:
    """The ``groups`` table, with each group's partitions from its newest snapshot in the ``lag`` table (a
    backfill writes no lag rows: then committed offsets come from ``committed``, see ``backfill_views``)."""
    newest: dict[str, Any] = {}
    for row in lag:
        newest[row["group_id"]] = max(newest.get(row["group_id"], row["snapshot_time"]), row["snapshot_time"])
    partitions: dict[str, list[OffsetView]] = {}
    for row in lag:
        if row["snapshot_time"] == newest[row["group_id"]] and row["committed_offset"] is not None:
            partitions.setdefault(row["group_id"], []).append(OffsetView(
                row["topic"], row["partition"], row["committed_offset"], row["log_end_offset"], row["lag"],
                row["owner"]))
    return {g["group_id"]: _table_view(g, partitions.get(g["group_id"], [])) for g in groups}


def backfill_views(groups: list[dict[str, Any]], commits: list[dict[str, Any]]) -> dict[str, GroupView]:
    """The ``groups`` table of a backfill, with each group's committed offsets replayed from its ``commits``
    table in log order (a tombstone removes the offset). Owners are not in these tables: blank ``owner``."""
    offsets: dict[tuple[str, str, int], int | None] = {}
    for row in sorted(commits, key=lambda r: (r["shard"], r["offset"])):
        offsets[(row["group_id"], row["topic"], row["partition"])] = row["committed_offset"]
    partitions: dict[str, list[OffsetView]] = {}
    for (group, topic, partition), committed in offsets.items():
        if committed is not None:
            partitions.setdefault(group, []).append(OffsetView(topic, partition, committed, None, None, None))
    return {g["group_id"]: _table_view(g, partitions.get(g["group_id"], [])) for g in groups}


def _table_view(g: Mapping[str, Any], offsets: list[OffsetView]) -> GroupView:
    consumer = g["group_type"] == "CONSUMER"
    owned: dict[str, list[TopicPartition]] = {}
    for o in offsets:
        if o.owner is not None:
            owned.setdefault(o.owner, []).append((o.topic, o.partition))
    members = tuple(sorted((MemberView(
        member_id=m["member_id"], instance_id=m["instance_id"], host=m["host"], client_id=m["client_id"],
        partitions=m["partitions"], assignment=tuple(sorted(owned.get(m["member_id"], []))),
        epoch=m["member_epoch"], target_epoch=g["assignment_epoch"] if consumer else None,
        target_assignment=None) for m in g["members"] or ()), key=lambda m: m.member_id))
    return GroupView(
        group_id=g["group_id"], type=g["group_type"], state=g["state"], assignor=g["assignor"] or None,
        member_count=g["member_count"], group_epoch=g["generation"] if consumer else None,
        target_epoch=g["assignment_epoch"] if consumer else None, members=members,
        offsets=tuple(sorted(offsets, key=lambda o: (o.topic, o.partition))))


# ---- the diff -----------------------------------------------------------------------------------------------------


def blank(view: GroupView, unknown: frozenset[str]) -> GroupView:
    """``view`` with the fields named in ``unknown`` (``"member.x"``, ``"offset.x"`` or a group field) set to None."""
    def strip(obj, prefix: str):
        names = {n.split(".", 1)[1] for n in unknown if n.startswith(prefix)}
        return dataclasses.replace(obj, **{n: None for n in names}) if names else obj

    group_fields = {n: None for n in unknown if "." not in n}
    return dataclasses.replace(view, **group_fields,
                               members=tuple(strip(m, "member.") for m in view.members),
                               offsets=tuple(strip(o, "offset.") for o in view.offsets))


def diff(kafka: Mapping[str, GroupView], ours: Mapping[str, GroupView], *,
         unknown: frozenset[str] = frozenset()) -> list[str]:
    """Every difference between Kafka's view and groupscope's, one line each; empty when they are equal."""
    out = [f"{g}: Kafka lists it, groupscope does not" for g in sorted(set(kafka) - set(ours))]
    out += [f"{g}: groupscope lists it, Kafka does not ({ours[g].state})" for g in sorted(set(ours) - set(kafka))]
    for group in sorted(set(kafka) & set(ours)):
        want, got = blank(kafka[group], unknown), blank(ours[group], unknown)
        for f in dataclasses.fields(GroupView):
            a, b = getattr(want, f.name), getattr(got, f.name)
            if f.name in ("members", "offsets"):
                out += _diff_items(group, f.name, a, b)
            elif a != b:
                out.append(f"{group}: {f.name}: Kafka {a!r}, groupscope {b!r}")
    return out


def _diff_items(group: str, what: str, want: tuple, got: tuple) -> list[str]:
    def key(item):
        return item.member_id if what == "members" else (item.topic, item.partition)

    a, b = {key(i): i for i in want}, {key(i): i for i in got}
    out = [f"{group}: {what} {k}: only in Kafka: {a[k]}" for k in a if k not in b]
    out += [f"{group}: {what} {k}: only in groupscope: {b[k]}" for k in b if k not in a]
    for k in a.keys() & b.keys():
        for f in dataclasses.fields(a[k]):
            x, y = getattr(a[k], f.name), getattr(b[k], f.name)
            if x != y:
                out.append(f"{group}: {what} {k}: {f.name}: Kafka {x!r}, groupscope {y!r}")
    return sorted(out)
