"""The driver's read model: the rows of ``tables.py`` turned once into typed records that every reader shares.

A micro-batch brings group rows (``GROUPS``), partition rows (``LAG``) and event rows (``GROUP_EVENTS``), either as
``tables.group_row`` builds them (times in epoch ms) or as read back from Arrow or Delta (times as ``datetime``).
This module is the only place that reads those rows by column name and coerces their values: ``/metrics``, the
HTTP API, the demo's live view and ``groupscope status`` read :class:`GroupView`, :class:`PartitionView` and
:class:`GroupActivity` attributes, so a renamed column fails here, loudly, instead of turning into a silent ``None``
in one reader.

Two meanings are settled here once for all readers:

* **Not judged.** The model keeps a partition OK while no log end offset is known for it (rule ``no_end_offsets``
  in docs/verdicts.md). A status that is OK only for that reason is ``None`` here ("not judged"), for a partition
  (its lag unknown) and for a group (its summed lag unknown); REWIND and ERR need no end offsets and stay as they
  are. An unknown status name (a newer job's) is ``None`` too.
* **Recent activity.** Rebalances and verdicts "lately" are counted from the event rows' own times over one window
  (:data:`RECENT_WINDOW_MS`, an hour), the same for the live view and ``status``.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from streaming.model.events import VERDICT_OF_KIND
from streaming.model.rules import Status

__all__ = ["MemberView", "TopicLagView", "GroupView", "PartitionView", "GroupActivity", "RECENT_WINDOW_MS",
           "ACTIVITY_EVENT_KINDS", "BatchView", "epoch_ms", "epoch_ms_column", "judged_status", "group_activity"]

# The window of "lately": rebalances counted and verdicts shown as news (``status``'s REBALANCES 1H, the live
# view's REB).
RECENT_WINDOW_MS = 3_600_000

# The event kinds that make a group's recent activity: its rebalances and its rebalance verdicts.
ACTIVITY_EVENT_KINDS: tuple[str, ...] = ("Rebalance", *VERDICT_OF_KIND)


def epoch_ms(value: Any) -> int | None:
    """A row time as epoch milliseconds: epoch ms (``tables.group_row``), ``datetime`` (Arrow, Delta), pandas
    ``Timestamp``, or None (also for NaN)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return round(value.timestamp() * 1000)
    if hasattr(value, "timestamp"):
        return round(float(value.timestamp()) * 1000)
    if isinstance(value, float):
        return None if math.isnan(value) else round(value)
    return int(value)


def epoch_ms_column(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A timestamp column as epoch milliseconds (int64), truncated to whole milliseconds whatever its unit: what
    the read model takes for a time, without a ``datetime`` per value."""
    return pc.cast(pc.cast(column, pa.timestamp("ms", column.type.tz), safe=False), pa.int64())


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is int:  # what Arrow gives: the common case, without the float round trip
        return value
    f = float(value)
    return None if math.isnan(f) else int(f)


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if type(value) is float:
        return None if value != value else value  # NaN, pandas' missing value, is the only float unequal to itself
    f = float(value)
    return None if math.isnan(f) else f


def _bool(value: Any) -> bool | None:
    """A nullable flag: None stays None (unknown), NaN too (pandas' missing value)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _interned(value: Any) -> str | None:
    """Member ids and reasons repeat across a group's partitions: one string each, not one per partition."""
    return sys.intern(str(value)) if value else None


def _cause(row: Mapping[str, Any]) -> tuple[str, int]:
    """A (rebalance cause, rebalances) pair of a ``rebalance_causes`` item."""
    return str(row["cause"]), _int(row.get("rebalances")) or 0


def judged_status(name: Any, lag: int | None) -> Status | None:
    """The status by name, or None where it is OK only because no log end offset is known (``lag`` is None) or
    the name is not one this version knows."""
    if not name:
        return None
    try:
        status = Status[str(name)]
    except KeyError:
        return None
    return None if status is Status.OK and lag is None else status


@dataclass(frozen=True, slots=True)
class MemberView:
    """One member of a group as its row describes it."""

    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    partitions: int  # partitions assigned to it
    member_epoch: int | None
    state: str | None

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> MemberView:
        return cls(str(row.get("member_id") or ""), str(row.get("client_id") or ""), str(row.get("host") or ""),
                   _text(row.get("instance_id")), _int(row.get("partitions")) or 0, _int(row.get("member_epoch")),
                   _text(row.get("state")))

    @classmethod
    def of_columns(cls, columns: _TableColumns) -> list[MemberView]:
        """Every member of a table of member structs, as :meth:`of_row` of each."""
        return [cls(*values) for values in zip(
            columns.texts("member_id", missing=""), columns.texts("client_id", missing=""),
            columns.texts("host", missing=""), columns.texts("instance_id"), columns.counts("partitions"),
            columns.ints("member_epoch"), columns.texts("state"))]


@dataclass(frozen=True, slots=True)
class TopicLagView:
    """A group's lag rolled up over its partitions of one topic."""

    topic: str
    sum_lag: int | None
    max_lag: int | None
    max_lag_seconds: float | None

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> TopicLagView:
        return cls(str(row["topic"]), _int(row.get("sum_lag")), _int(row.get("max_lag")),
                   _float(row.get("max_lag_seconds")))

    @classmethod
    def of_columns(cls, columns: _TableColumns) -> list[TopicLagView]:
        """Every topic of a table of topic structs, as :meth:`of_row` of each."""
        return [cls(*values) for values in zip(map(str, columns.values("topic")), columns.ints("sum_lag"),
                                                columns.ints("max_lag"), columns.floats("max_lag_seconds"))]


@dataclass(frozen=True, slots=True)
class GroupView:
    """One group as the latest batch left it: what ``/metrics``, the API, the live view and ``status`` show.

    Counters are 0 where the row has none (a group starts at 0, so the first increase is one ``rate()`` sees);
    figures that may be unknown (lag, generation, times) are None. Times are epoch milliseconds.
    """

    group_id: str
    shard: int | None = None
    group_type: str | None = None
    state: str | None = None
    protocol_type: str | None = None
    assignor: str | None = None
    generation: int | None = None
    assignment_epoch: int | None = None
    leader: str | None = None
    member_count: int | None = None
    members: tuple[MemberView, ...] = ()
    partition_count: int | None = None
    topics: tuple[TopicLagView, ...] = ()
    sum_lag: int | None = None
    max_lag: int | None = None
    max_lag_seconds: float | None = None
    max_lag_seconds_lower_bound: bool = False
    max_lag_seconds_method: str | None = None  # how max_lag_seconds was found: its partition's method
    status: Status | None = None  # None: not judged (see the module's docstring)
    status_reason: str | None = None
    data_loss_partitions: int = 0
    rebalances: int = 0
    storms: int = 0
    rolling_restarts: int = 0
    scale_outs: int = 0
    scale_ins: int = 0
    storm_active: bool = False
    partitions_moved: int = 0
    last_partitions_moved: int | None = None
    rebalance_causes: tuple[tuple[str, int], ...] = ()  # (cause, rebalances)
    verdict: str | None = None
    verdict_reason: str | None = None
    last_rebalance_ms: int | None = None
    last_commit_ms: int | None = None
    state_since_ms: int | None = None
    is_simple: bool = False
    deleted: bool = False
    updated_ms: int | None = None
    # time to work off the lag at the current rates: ``catching_up`` None unknown, False not catching up (then no
    # seconds), True with the seconds (0: no lag); tables written before these columns give unknown
    catch_up_seconds: float | None = None
    catching_up: bool | None = None

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> GroupView:
        """The group of a ``GROUPS`` row (columns a table written by an older version lacks are None).

        Raises:
            ValueError: the row has no ``group_id``.
        """
        gid = row.get("group_id")
        if not gid:
            raise ValueError(f"row without group_id: {dict(row)!r}")
        sum_lag = _int(row.get("sum_lag"))
        return cls(
            group_id=str(gid),
            shard=_int(row.get("shard")),
            group_type=_text(row.get("group_type")),
            state=_text(row.get("state")),
            protocol_type=_text(row.get("protocol_type")),
            assignor=_text(row.get("assignor")),
            generation=_int(row.get("generation")),
            assignment_epoch=_int(row.get("assignment_epoch")),
            leader=_text(row.get("leader")),
            member_count=_int(row.get("member_count")),
            members=tuple(MemberView.of_row(m) for m in row.get("members") or ()),
            partition_count=_int(row.get("partition_count")),
            topics=tuple(TopicLagView.of_row(t) for t in row.get("topics") or ()),
            sum_lag=sum_lag,
            max_lag=_int(row.get("max_lag")),
            max_lag_seconds=_float(row.get("max_lag_seconds")),
            max_lag_seconds_lower_bound=bool(row.get("max_lag_seconds_lower_bound")),
            max_lag_seconds_method=_text(row.get("max_lag_seconds_method")),
            status=judged_status(row.get("status"), sum_lag),
            status_reason=_text(row.get("status_reason")),
            data_loss_partitions=_int(row.get("data_loss_partitions")) or 0,
            rebalances=_int(row.get("rebalances")) or 0,
            storms=_int(row.get("storms")) or 0,
            rolling_restarts=_int(row.get("rolling_restarts")) or 0,
            scale_outs=_int(row.get("scale_outs")) or 0,
            scale_ins=_int(row.get("scale_ins")) or 0,
            storm_active=bool(row.get("storm_active")),
            partitions_moved=_int(row.get("partitions_moved")) or 0,
            last_partitions_moved=_int(row.get("last_partitions_moved")),
            rebalance_causes=tuple(_cause(c) for c in row.get("rebalance_causes") or ()),
            verdict=_text(row.get("verdict")) or None,
            verdict_reason=_text(row.get("verdict_reason")) or None,
            last_rebalance_ms=epoch_ms(row.get("last_rebalance_time")),
            last_commit_ms=epoch_ms(row.get("last_commit_time")),
            state_since_ms=epoch_ms(row.get("state_time")),
            is_simple=bool(row.get("is_simple")),
            deleted=bool(row.get("deleted")),
            updated_ms=epoch_ms(row.get("updated_time")),
            catch_up_seconds=_float(row.get("catch_up_seconds")),
            catching_up=_bool(row.get("catching_up")),
        )

    @classmethod
    def of_table(cls, table: pa.Table) -> tuple[GroupView, ...]:
        """The groups of a ``GROUPS`` Arrow table, equal to :meth:`of_row` of each of its rows.

        Column by column: a 10,000-group batch reaches the driver as one table, and turning it into row dicts first
        (a dict of 45 entries per group, each value coerced on its own) took most of the driver's hand-over of a
        batch; here each column becomes Python values once, already of the view's types where Arrow's type is.

        Raises:
            ValueError: a row without ``group_id``.
        """
        n = table.num_rows
        if n == 0:
            return ()
        col = _TableColumns(table)
        ids = col.values("group_id")
        if None in ids or "" in ids:
            bad = ids.index(None if None in ids else "")
            raise ValueError(f"row without group_id: {table.slice(bad, 1).to_pylist()[0]!r}")
        sum_lag = col.ints("sum_lag")
        status = [judged_status(name, lag) for name, lag in zip(col.values("status"), sum_lag)]
        members = col.nested("members", MemberView.of_row, MemberView.of_columns)
        topics = col.nested("topics", TopicLagView.of_row, TopicLagView.of_columns)
        causes = col.nested("rebalance_causes", _cause, lambda c: list(zip(map(str, c.values("cause")),
                                                                           c.counts("rebalances"))))
        columns = {
            "group_id": map(str, ids), "shard": col.ints("shard"), "group_type": col.texts("group_type"),
            "state": col.texts("state"), "protocol_type": col.texts("protocol_type"),
            "assignor": col.texts("assignor"), "generation": col.ints("generation"),
            "assignment_epoch": col.ints("assignment_epoch"), "leader": col.texts("leader"),
            "member_count": col.ints("member_count"), "members": members,
            "partition_count": col.ints("partition_count"), "topics": topics, "sum_lag": sum_lag,
            "max_lag": col.ints("max_lag"), "max_lag_seconds": col.floats("max_lag_seconds"),
            "max_lag_seconds_lower_bound": col.flags("max_lag_seconds_lower_bound"),
            "max_lag_seconds_method": col.texts("max_lag_seconds_method"), "status": status,
            "status_reason": col.texts("status_reason"),
            "data_loss_partitions": col.counts("data_loss_partitions"), "rebalances": col.counts("rebalances"),
            "storms": col.counts("storms"), "rolling_restarts": col.counts("rolling_restarts"),
            "scale_outs": col.counts("scale_outs"), "scale_ins": col.counts("scale_ins"),
            "storm_active": col.flags("storm_active"), "partitions_moved": col.counts("partitions_moved"),
            "last_partitions_moved": col.ints("last_partitions_moved"), "rebalance_causes": causes,
            "verdict": col.texts("verdict", empty_is_none=True),
            "verdict_reason": col.texts("verdict_reason", empty_is_none=True),
            "last_rebalance_ms": col.times("last_rebalance_time"), "last_commit_ms": col.times("last_commit_time"),
            "state_since_ms": col.times("state_time"), "is_simple": col.flags("is_simple"),
            "deleted": col.flags("deleted"), "updated_ms": col.times("updated_time"),
            "catch_up_seconds": col.floats("catch_up_seconds"), "catching_up": col.maybe_flags("catching_up"),
        }
        if tuple(columns) != _GROUP_VIEW_FIELDS:  # every field, in the order the positional calls below fill
            raise AssertionError(f"GroupView.of_table does not fill the view's fields: {_GROUP_VIEW_FIELDS}")
        return tuple(cls(*values) for values in zip(*columns.values()))

    @property
    def judged(self) -> bool:
        """Whether the group has a status: False while no log end offset is known for its partitions."""
        return self.status is not None

    def members_by_id(self) -> dict[str, MemberView]:
        return {m.member_id: m for m in self.members if m.member_id}


_GROUP_VIEW_FIELDS = tuple(f.name for f in fields(GroupView))


class _TableColumns:
    """The columns of one Arrow table as Python values coerced as the ``of_row`` methods coerce one value (a column
    the table lacks is None in every row): where Arrow's type already is the view's, the values are taken as they
    come, and only other types (tables written by older versions) go value by value."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows

    def _column(self, name: str):
        if name not in self.table.column_names:
            return None
        column = self.table.column(name)
        return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column

    def values(self, name: str) -> list:
        column = self._column(name)
        return [None] * self.n if column is None else column.to_pylist()

    def _typed(self, column, is_type, coerce, fill: Any = None) -> list:
        if column is None:
            return [coerce(None)] * self.n
        if not is_type(column.type):
            return [coerce(v) for v in column.to_pylist()]
        if fill is not None:
            column = pc.fill_null(column, fill)
        return column.to_pylist()

    def ints(self, name: str) -> list:
        return self._typed(self._column(name), pa.types.is_integer, _int)

    def counts(self, name: str) -> list:
        return self._typed(self._column(name), pa.types.is_integer, lambda v: _int(v) or 0, fill=0)

    def texts(self, name: str, *, empty_is_none: bool = False, missing: str | None = None) -> list:
        """``empty_is_none``: "" is None too; ``missing``: what None (and "") becomes, if not None."""
        values = self._typed(self._column(name), pa.types.is_string, _text)
        if missing is not None:
            return [v or missing for v in values]
        return [v or None for v in values] if empty_is_none else values

    def interned(self, name: str) -> list:
        values = self.values(name)
        once = {v: _interned(v) for v in set(values)}  # a few owners and reasons repeat over many partitions
        return [once[v] for v in values]

    def floats(self, name: str) -> list:
        column = self._column(name)
        if column is not None and pa.types.is_floating(column.type):
            column = pc.if_else(pc.is_nan(column), pa.scalar(None, column.type), column)
        return self._typed(column, pa.types.is_floating, _float)

    def flags(self, name: str) -> list:
        return self._typed(self._column(name), pa.types.is_boolean, bool, fill=False)

    def maybe_flags(self, name: str) -> list:
        return self._typed(self._column(name), pa.types.is_boolean, _bool)

    def times(self, name: str) -> list:
        column = self._column(name)
        if column is not None and pa.types.is_timestamp(column.type):
            column = epoch_ms_column(column)
        return self._typed(column, pa.types.is_integer, epoch_ms)

    def nested(self, name: str, of_item, of_columns) -> list[tuple]:
        """A list-of-structs column as a tuple per row of the items its list holds: ``of_columns`` builds every
        item of the table at once from the struct's columns (a :class:`_TableColumns`), ``of_item`` one item from a
        dict where the column is of another type."""
        column = self._column(name)
        if column is None:
            return [()] * self.n
        if (not pa.types.is_list(column.type) or not pa.types.is_struct(column.type.value_type)
                or column.null_count):
            return [tuple(of_item(item) for item in row or ()) for row in column.to_pylist()]
        items = pa.Table.from_batches([pa.RecordBatch.from_struct_array(column.flatten())])
        built = of_columns(_TableColumns(items))
        offsets = column.offsets.to_pylist()
        first = offsets[0]  # a sliced array's offsets count from its parent's start
        return [tuple(built[a - first:b - first]) for a, b in zip(offsets, offsets[1:])]


class PartitionView(NamedTuple):
    """One committed partition of a group, as the partition series and the API need it (a NamedTuple: a driver may
    hold one per partition of every group, and a tuple is a fraction of a row dict's size)."""

    lag: int | None
    lag_seconds: float | None
    committed_offset: int | None
    log_end_offset: int | None
    status: Status | None  # None: not judged (no log end offset known) or a status this version does not know
    owner: str | None = None  # member id holding the partition
    commit_ms: int | None = None  # epoch ms of the committed offset's commit
    lag_seconds_lower_bound: bool = False
    data_loss_risk: bool = False
    status_reason: str | None = None
    catch_up_seconds: float | None = None  # as GroupView's
    catching_up: bool | None = None
    lag_seconds_method: str | None = None  # "measured" or "interpolated" (the lag table's column)
    log_start_offset: int | None = None  # the low watermark (where the partition's log starts), as of the row

    @classmethod
    def of_table(cls, table: pa.Table) -> list[tuple[str, tuple[str, int], PartitionView]]:
        """``(group, (topic, partition), view)`` of each row of a ``LAG`` Arrow table, the view equal to
        :meth:`of_row` of the row; column by column for the reason :meth:`GroupView.of_table` gives.

        Raises:
            ValueError: a row without ``group_id``, topic or partition.
        """
        if table.num_rows == 0:
            return []
        col = _TableColumns(table)
        groups, topics, numbers = col.values("group_id"), col.values("topic"), col.values("partition")
        for at, (gid, topic, number) in enumerate(zip(groups, topics, numbers)):
            if not gid:
                raise ValueError(f"row without group_id: {table.slice(at, 1).to_pylist()[0]!r}")
            if topic is None or number is None:
                raise ValueError(f"partition row of group {gid!r} without topic/partition")
        lag = col.ints("lag")
        status = [judged_status(name, n) for name, n in zip(col.values("status"), lag)]
        views = [cls._make(values) for values in zip(  # _make: a NamedTuple without its __new__'s call
            lag, col.floats("lag_seconds"), col.ints("committed_offset"), col.ints("log_end_offset"), status,
            col.interned("owner"), col.times("commit_time"), col.flags("lag_seconds_lower_bound"),
            col.flags("data_loss_risk"), col.interned("status_reason"), col.floats("catch_up_seconds"),
            col.maybe_flags("catching_up"), col.interned("lag_seconds_method"), col.ints("log_start_offset"))]
        return [(str(gid), (str(topic), int(number)), view)
                for gid, topic, number, view in zip(groups, topics, numbers, views)]

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> PartitionView:
        lag = _int(row.get("lag"))
        return cls(lag, _float(row.get("lag_seconds")), _int(row.get("committed_offset")),
                   _int(row.get("log_end_offset")), judged_status(row.get("status"), lag),
                   _interned(row.get("owner")), epoch_ms(row.get("commit_time")),
                   bool(row.get("lag_seconds_lower_bound")), bool(row.get("data_loss_risk")),
                   _interned(row.get("status_reason")), _float(row.get("catch_up_seconds")),
                   _bool(row.get("catching_up")), _interned(row.get("lag_seconds_method")),
                   log_start_offset=_int(row.get("log_start_offset")))


@dataclass(frozen=True, slots=True)
class GroupActivity:
    """A group's recent rebalances and verdicts, and its newest event, from event rows (times in epoch ms)."""

    rebalance_ms: tuple[int, ...] = ()
    last_verdict_ms: int | None = None
    last_event_ms: int | None = None
    last_event_kind: str | None = None

    def rebalances_since(self, since_ms: int) -> int:
        return sum(1 for t in self.rebalance_ms if t >= since_ms)

    def verdict_since(self, since_ms: int) -> bool:
        return self.last_verdict_ms is not None and self.last_verdict_ms >= since_ms

    def with_event(self, kind: str, at_ms: int) -> GroupActivity:
        out = self
        if kind == "Rebalance":
            out = replace(out, rebalance_ms=(*out.rebalance_ms, at_ms))
        elif kind in VERDICT_OF_KIND and (out.last_verdict_ms is None or at_ms > out.last_verdict_ms):
            out = replace(out, last_verdict_ms=at_ms)
        if out.last_event_ms is None or at_ms >= out.last_event_ms:
            out = replace(out, last_event_ms=at_ms, last_event_kind=kind)
        return out

    def merged(self, newer: GroupActivity) -> GroupActivity:
        """This activity followed by ``newer``'s (a later batch's)."""
        verdicts = [t for t in (self.last_verdict_ms, newer.last_verdict_ms) if t is not None]
        last = newer if newer.last_event_ms is not None and (
            self.last_event_ms is None or newer.last_event_ms >= self.last_event_ms) else self
        return GroupActivity((*self.rebalance_ms, *newer.rebalance_ms), max(verdicts, default=None),
                             last.last_event_ms, last.last_event_kind)

    def since(self, since_ms: int) -> GroupActivity:
        """Only the rebalances at or after ``since_ms`` (older ones can no longer be counted as recent)."""
        kept = tuple(t for t in self.rebalance_ms if t >= since_ms)
        return self if len(kept) == len(self.rebalance_ms) else replace(self, rebalance_ms=kept)


def group_activity(events: Iterable[Mapping[str, Any]], *, since_ms: int | None = None) -> dict[str, GroupActivity]:
    """Each group's activity from ``GROUP_EVENTS`` rows (``group_id``, ``kind``, ``event_time``); events without a
    group or a time, or before ``since_ms``, are left out."""
    out: dict[str, GroupActivity] = {}
    for e in events:
        gid, at = e.get("group_id"), epoch_ms(e.get("event_time"))
        if not gid or at is None or (since_ms is not None and at < since_ms):
            continue
        out[gid] = out.get(gid, _NONE).with_event(str(e.get("kind")), at)
    return out


_NONE = GroupActivity()


@dataclass(frozen=True, slots=True)
class BatchView:
    """What one micro-batch changes in the driver's read model, built once from its rows.

    ``partitions``: per group that has partition rows in the batch, all of its partitions (they replace the
    group's previous ones). ``deletions``: groups a ``GroupDeleted`` or ``OffsetDeleted`` event names (removed
    unless the batch also has a live row for them); ``offsets_deleted``: ``(group, topic, partition)`` of each
    ``OffsetDeleted``. ``anomalies``: ``Anomaly`` events. ``activity``: the batch's rebalances and verdicts.
    """

    groups: tuple[GroupView, ...] = ()
    partitions: Mapping[str, Mapping[tuple[str, int], PartitionView]] = field(default_factory=dict)
    deletions: frozenset[str] = frozenset()
    offsets_deleted: tuple[tuple[str, str, int], ...] = ()
    anomalies: int = 0
    activity: Mapping[str, GroupActivity] = field(default_factory=dict)

    @classmethod
    def of_rows(cls, group_rows: Iterable[Mapping[str, Any]] | pa.Table = (),
                partition_rows: Iterable[Mapping[str, Any]] | pa.Table | None = None,
                event_rows: Iterable[Mapping[str, Any]] = ()) -> BatchView:
        """The batch of ``GROUPS``, ``LAG`` and ``GROUP_EVENTS`` rows (any may be empty); the group and partition
        rows may be Arrow tables (:meth:`GroupView.of_table`, :meth:`PartitionView.of_table`).

        Raises:
            ValueError: a row without ``group_id``, or a partition row without topic or partition.
        """
        groups = GroupView.of_table(group_rows) if isinstance(group_rows, pa.Table) else \
            tuple(GroupView.of_row(r) for r in group_rows)
        partitions: dict[str, dict[tuple[str, int], PartitionView]] = {}
        if isinstance(partition_rows, pa.Table):
            for gid, key, view in PartitionView.of_table(partition_rows):
                partitions.setdefault(gid, {})[key] = view
            partition_rows = None
        for r in partition_rows or ():
            gid = r.get("group_id")
            if not gid:
                raise ValueError(f"row without group_id: {dict(r)!r}")
            if r.get("topic") is None or r.get("partition") is None:
                raise ValueError(f"partition row of group {gid!r} without topic/partition")
            partitions.setdefault(str(gid), {})[(str(r["topic"]), int(r["partition"]))] = PartitionView.of_row(r)
        events = list(event_rows)
        deletions: set[str] = set()
        offsets: list[tuple[str, str, int]] = []
        anomalies = 0
        for e in events:
            kind, gid = e.get("kind"), e.get("group_id")
            if kind == "Anomaly":
                anomalies += 1
            elif gid and kind in ("GroupDeleted", "OffsetDeleted"):
                deletions.add(str(gid))
                if kind == "OffsetDeleted" and e.get("topic") is not None and e.get("partition") is not None:
                    offsets.append((str(gid), str(e["topic"]), int(e["partition"])))
        return cls(groups, partitions, frozenset(deletions), tuple(offsets), anomalies,
                   group_activity(e for e in events if e.get("kind") in ACTIVITY_EVENT_KINDS))
