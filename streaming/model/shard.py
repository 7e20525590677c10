"""The state of one ``__consumer_offsets`` partition: groups, offsets and end offsets, rebuilt by replay.

Mirrors Kafka's ``GroupCoordinatorShard`` (docs/design-notes.md#code-style): ``replay`` makes ONE dispatch on the record type, through
the table :data:`DISPATCH`, to the owner of that type (offsets, classic, consumer, share, streams groups); a null
value is a tombstone; ``replay_end_txn_marker`` forwards COMMIT/ABORT to the offsets. Group get-or-create follows
``GroupMetadataManager``: an offset commit for an unknown group creates Kafka's "simple" classic group; KIP-848
records may replace a simple group; a tombstone for an unknown group or member is ignored; a type-2 value replaces
whatever group had the id (that is how a consumer group is downgraded). Records the model cannot apply become
:class:`events.Anomaly` events and replay goes on (Kafka's loader logs unknown types and skips them).

Two input paths give the same state (docs/design-notes.md#two-input-paths): records read with ``isolation.level=read_committed`` are
replayed with ``transactional=False`` (aborted commits never arrive, committed ones arrive in place), and raw
segment files are replayed with their batch headers (``transactional=True`` plus the producer id) and their
control records through ``replay_end_txn_marker``.

No I/O and no clock: ``now_ms`` is always an argument (the heartbeat's clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from protocol.records import CoordinatorRecord, RecordType, UnknownRecord

from . import events as ev
from . import state_format, state_v1
from .availability import AvailabilityTracker
from .catch_up import UNKNOWN as CATCH_UP_UNKNOWN, group_catch_up, partition_catch_up
from .classic import ClassicGroup
from .consumer import ConsumerGroup
from .knobs import check_bounds, internal, knob
from .lazy import lazy_variant
from .lag import DEFAULT_HISTORY, INTERPOLATED, MEASURED, EndOffsetHistory, EndOffsetSample
from .offsets import OffsetStore
from .offsets import NO_STATUS
from .rules import (Ownership, Status, Thresholds, commit_cadence_ms, data_loss_reason, evaluate_partition,
                    group_status, is_data_loss)
from .verdicts import RebalanceConfig, RebalanceJudge
from .share import ShareGroup
from .states import GroupType, InconsistentRecord, ModelError
from .streams import StreamsGroup

__all__ = ["ModelConfig", "GroupCoordinatorShard", "CoordinatorModel", "DISPATCH", "Group", "CONTROL_ABORT",
           "CONTROL_COMMIT"]

Group = ClassicGroup | ConsumerGroup | ShareGroup | StreamsGroup
_G = TypeVar("_G", ClassicGroup, ConsumerGroup, ShareGroup, StreamsGroup)
CONTROL_ABORT, CONTROL_COMMIT = 0, 1  # ControlRecordType codes in a control record key
_RECORD_TICK_MS = 1_000  # without heartbeats, time-driven verdicts are taken once per second of the records' clock


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Everything tunable about the model, each knob settable in the ``model:`` section (:mod:`.knobs`).

    Raises:
        ValueError: a value outside its knob's bounds.
    """

    thresholds: Thresholds = Thresholds()
    rebalance: RebalanceConfig = RebalanceConfig()
    end_offset_history: int = knob(DEFAULT_HISTORY, "samples", "end-offset samples kept per partition for time lag",
                                   ge=2, le=10_000)
    default_assignor: str = knob("uniform", "name", "the broker's group.consumer.assignors[0]: reported for "
                                 "consumer-protocol groups whose members name none")
    track_all_topics: bool = internal(False, "end offsets of topics no group consumes are read by no status or "
                                      "verdict; keeping them would grow the state with the cluster's topics (tools "
                                      "that look at every topic set it)")

    def __post_init__(self) -> None:
        check_bounds(self)


class GroupCoordinatorShard:
    """Replays one ``__consumer_offsets`` partition in offset order; emits events and snapshots."""

    __slots__ = ("partition", "config", "groups", "offsets", "ends", "topic_names", "judge", "_events",
                 "last_offset", "last_timestamp", "now_ms", "_deleted", "unknown_records",
                 "_unknown_seen", "tracked_topics", "availability", "_record_tick_ms")

    def __init__(self, partition: int = -1, config: ModelConfig = ModelConfig()) -> None:
        self.partition = partition
        self.config = config
        self.groups: dict[str, Group] = {}
        th = config.thresholds
        self.offsets = OffsetStore(th.window, th.min_distance_ms)
        self.ends: dict[tuple[str, int], EndOffsetHistory] = {}
        self.topic_names: dict[bytes, str] = {}
        self.judge = RebalanceJudge(config.rebalance)
        self._events: list[ev.Event] = []
        self.last_offset = -1
        self.last_timestamp = -1
        self.now_ms = -1
        self._deleted: dict[str, tuple[GroupType, int]] = {}  # last tombstoned type per group id
        self.unknown_records = 0
        self._unknown_seen: set[tuple[int, int]] = set()
        self.tracked_topics: set[str] = set()
        rc = config.rebalance
        self.availability = AvailabilityTracker(rc.kafka_gap_ms, rc.kafka_rejoin_ms)
        self._record_tick_ms = 0  # the records' clock time of the next tick while no heartbeat came (not state)

    def _tick_by_records(self, timestamp: int) -> None:
        """No heartbeat has set the clock (segment files have none: a backfill of old data): the time-driven
        verdicts (settled episodes, ended storms) follow the records' own clock instead, at most once per second
        of it. Their times are those the quiet periods give, whenever they are taken; without this a storm in
        four-day-old data would stay active for ever."""
        self._record_tick_ms = timestamp + _RECORD_TICK_MS
        self._events.extend(self.judge.tick(timestamp))

    def _after_silence(self, timestamp: int) -> None:
        """A record stamped well past the heartbeat clock: Kafka may have been away (see ``availability``)."""
        self._events.extend(self.availability.on_record(timestamp, self.now_ms, self.last_timestamp))
        self.judge.away = self.availability.window()

    # ---- replay --------------------------------------------------------------------------------------------

    def replay(self, offset: int, timestamp: int, record: CoordinatorRecord | UnknownRecord, producer_id: int = -1,
               producer_epoch: int = -1, transactional: bool = False) -> None:
        """Applies one decoded record at log position ``offset`` (record timestamp ``timestamp``, ms).

        ``transactional`` is the batch header's flag: only then is an offset commit held pending for
        ``producer_id``. Model errors become Anomaly events; nothing raises for bad input.
        """
        if offset > self.last_offset:
            self.last_offset = offset
        if self.now_ms >= 0 and timestamp - self.now_ms > self.availability.gap:
            self._after_silence(timestamp)
        if timestamp > self.last_timestamp:
            self.last_timestamp = timestamp
            if self.now_ms < 0 and timestamp >= self._record_tick_ms:
                self._tick_by_records(timestamp)
        if type(record) is UnknownRecord:
            self.unknown_records += 1
            key = (record.type, record.version)
            if key not in self._unknown_seen:  # once per type/version: skipped without noise, but visible
                self._unknown_seen.add(key)
                self._events.append(ev.Anomaly(record.group_id or "", offset, timestamp, self.partition,
                                               f"skipped: {record.reason}"))
            return
        handler = DISPATCH.get(record.type)
        if handler is None:
            self._events.append(ev.Anomaly(record.group_id, offset, timestamp, self.partition,
                                           f"no handler for record type {record.type!r}"))
            return
        try:
            handler(self, record, offset, timestamp, producer_id, transactional)
        except ModelError as exc:
            self._events.append(ev.Anomaly(record.group_id, offset, timestamp, self.partition,
                                           f"{type(exc).__name__}: {exc}"))

    def replay_offset_commit(self, offset: int, group: str, topic: str, partition: int, committed_offset: int,
                             leader_epoch: int, metadata: str, commit_ts: int, timestamp: int = -1,
                             producer_id: int = -1, transactional: bool = False) -> None:
        """The hot path: one offset commit as plain values (no record object). Same semantics as ``replay``."""
        if offset > self.last_offset:
            self.last_offset = offset
        if self.now_ms >= 0 and timestamp - self.now_ms > self.availability.gap:
            self._after_silence(timestamp)
        if timestamp > self.last_timestamp:
            self.last_timestamp = timestamp
            if self.now_ms < 0 and timestamp >= self._record_tick_ms:
                self._tick_by_records(timestamp)
        if group not in self.groups:
            self._create_simple_group(group, offset, timestamp)
        if transactional:
            self.offsets.commit_pending(producer_id, group, topic, partition, committed_offset, leader_epoch,
                                        metadata, commit_ts, offset)
        elif self.offsets.commit(group, topic, partition, committed_offset, leader_epoch, metadata, commit_ts,
                                 offset):
            self.tracked_topics.add(topic)

    def replay_end_txn_marker(self, producer_id: int, control_type: int | str, offset: int = -1,
                              timestamp: int = -1) -> None:
        """A COMMIT or ABORT control record for ``producer_id`` (``ControlRecordType`` code or name).

        Raises:
            ValueError: a control type that is neither COMMIT nor ABORT.
        """
        if isinstance(control_type, str):
            name = control_type.upper()
            if name not in ("COMMIT", "ABORT"):
                raise ValueError(f"control type must be COMMIT or ABORT, got {control_type!r}")
            commit = name == "COMMIT"
        else:
            if int(control_type) not in (CONTROL_ABORT, CONTROL_COMMIT):
                raise ValueError(f"control type must be 0 (ABORT) or 1 (COMMIT), got {control_type!r}")
            commit = int(control_type) == CONTROL_COMMIT
        if offset > self.last_offset:
            self.last_offset = offset
        if timestamp > self.last_timestamp:
            self.last_timestamp = timestamp
        applied, skipped, groups = self.offsets.end_transaction(producer_id, commit)
        if groups:
            for g in groups:
                for topic, *_ in self.offsets.iter_group(g):
                    self.tracked_topics.add(topic)
            gid = next(iter(groups)) if len(groups) == 1 else ""
            self._events.append(ev.TransactionEnded(gid, offset, timestamp, producer_id, commit, applied, skipped))

    # ---- record handlers (one per record type; DISPATCH below) ---------------------------------------------

    def _create_simple_group(self, group: str, offset: int, timestamp: int) -> None:
        """Kafka's replay creates an empty classic group without protocol type for offsets of an unknown group."""
        self.groups[group] = ClassicGroup(group)
        self._events.append(ev.GroupCreated(group, offset, timestamp, GroupType.CLASSIC))

    def _offset_commit(self, rec: CoordinatorRecord, offset: int, ts: int, pid: int, txn: bool) -> None:
        k, v = rec.key, rec.value
        if v is None:
            if self.offsets.delete(k.group, k.topic, k.partition):
                self._events.append(ev.OffsetDeleted(k.group, offset, ts, k.topic, k.partition))
                if k.group not in self.groups and not self.offsets.has_group(k.group):
                    self.judge.forget(k.group)  # the last trace of a deleted group is gone
            return
        if v.topic_id and any(v.topic_id):
            self.topic_names.setdefault(v.topic_id, k.topic)
        self.replay_offset_commit(offset, k.group, k.topic, k.partition, v.offset, v.leader_epoch, v.metadata,
                                  v.commit_timestamp, ts, pid, txn)

    def _remove_group(self, gid: str, offset: int, ts: int) -> Group | None:
        g = self.groups.pop(gid, None)
        if g is not None:
            self._deleted[gid] = (g.group_type, ts)
            if not self.offsets.has_group(gid):
                self.judge.forget(gid)  # nothing of the group is left; with offsets left it shows as DEAD
            self._events.append(ev.GroupDeleted(gid, offset, ts, g.group_type))
        return g

    def _created(self, gid: str, gtype: GroupType, offset: int, ts: int) -> None:
        self._events.append(ev.GroupCreated(gid, offset, ts, gtype))
        prev = self._deleted.pop(gid, None)
        if prev is not None and prev[0] != gtype and prev[1] == ts:
            # Deleted and re-created in one write: Kafka's online classic <-> consumer conversion. The group's
            # verdicts and counters go on.
            self._events.append(ev.GroupTypeChanged(gid, offset, ts, prev[0], gtype))
        elif prev is not None:
            self.judge.forget(gid)  # a new group under an old name starts its counters again

    def _group_metadata(self, rec: CoordinatorRecord, offset: int, ts: int, pid: int, txn: bool) -> None:
        gid, value = rec.key.group, rec.value
        g = self.groups.get(gid)
        classic = _of_type(g, ClassicGroup)
        if value is None:
            if g is not None:
                if classic is not None:
                    classic.replay(None, offset, ts, self.judge, self._events)
                self._remove_group(gid, offset, ts)
            return
        if classic is None:
            carried = 0
            if g is not None:  # Kafka's replay puts a new ClassicGroup over whatever had this id
                carried = g.rebalances
                self._remove_group(gid, offset, ts)
            classic = self.groups[gid] = ClassicGroup(gid, rebalances=carried)
            self._created(gid, GroupType.CLASSIC, offset, ts)
        classic.replay(value, offset, ts, self.judge, self._events)
        for m in classic.members.values():
            self.tracked_topics.update(m.topics)

    def _consumer_group(self, gid: str, create: bool, offset: int, ts: int) -> ConsumerGroup | None:
        """``getOrMaybeCreatePersistedConsumerGroup``.

        Raises:
            InconsistentRecord: the id belongs to a non-simple group of another type.
        """
        g = self.groups.get(gid)
        cg = _of_type(g, ConsumerGroup)
        if cg is not None:
            return cg
        if g is None and not create:
            return None
        if g is not None and not g.is_simple:
            raise InconsistentRecord(f"group {gid} is a {g.group_type.value} group, not a consumer group")
        if g is not None:
            self.groups.pop(gid)  # a simple group is not backed by records: replaced silently, as in Kafka
        cg = self.groups[gid] = ConsumerGroup(gid)
        if g is None:
            self._created(gid, GroupType.CONSUMER, offset, ts)
        return cg

    def _cg_epoch(self, rec, offset, ts, pid, txn) -> None:
        gid = rec.key.group_id
        g = self._consumer_group(gid, rec.value is not None, offset, ts)
        if g is None:
            return
        if rec.value is not None:
            g.replay_epoch(rec.value.epoch, rec.value.metadata_hash, offset, ts, self.judge, self._events)
            return
        if g.members:
            raise InconsistentRecord(f"group {gid} tombstoned with {len(g.members)} members left")
        if g.target:
            raise InconsistentRecord(f"group {gid} tombstoned with {len(g.target)} members in its target assignment")
        self._remove_group(gid, offset, ts)

    def _cg_partition_metadata(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is None:
            return
        topics = () if rec.value is None else rec.value.topics
        for t in topics:
            self.topic_names[t.topic_id] = t.topic_name
            self.tracked_topics.add(t.topic_name)
        g.replay_partition_metadata(topics, offset, ts)

    def _cg_member(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            g.replay_member(rec.key.member_id, rec.value, offset, ts, self.judge, self._events)
            if rec.value is not None:
                self.tracked_topics.update(rec.value.subscribed_topic_names)

    def _cg_target_epoch(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            g.replay_target_epoch(None if rec.value is None else rec.value.assignment_epoch, offset, ts,
                                  self.judge, self._events)

    def _cg_target_member(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            g.replay_target_member(rec.key.member_id, None if rec.value is None else rec.value.topic_partitions,
                                   offset, ts)

    def _cg_current_assignment(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            g.replay_current_assignment(rec.key.member_id, rec.value, offset, ts, self._events)

    def _cg_regex(self, rec, offset, ts, pid, txn) -> None:
        g = self._consumer_group(rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            topics = None if rec.value is None else rec.value.topics
            g.replay_regex(rec.key.regular_expression, topics)
            if topics:
                self.tracked_topics.update(topics)

    def _typed_group(self, cls, gid: str, create: bool, offset: int, ts: int):
        g = self.groups.get(gid)
        typed = _of_type(g, cls)
        if typed is not None:
            return typed
        if g is None and not create:
            return None
        if g is not None and not g.is_simple:
            raise InconsistentRecord(f"group {gid} is a {g.group_type.value} group, not a "
                                     f"{cls.group_type.value} group")
        new = self.groups[gid] = cls(gid)
        if g is None:
            self._created(gid, cls.group_type, offset, ts)
        return new

    # Share and streams groups: one handler per record type, each given the group the record's id names (got or
    # created as Kafka's replay does it, by ``_typed`` in DISPATCH below).

    def _typed_group_metadata(self, g: ShareGroup | StreamsGroup, rec, offset: int, ts: int) -> None:
        """Share and streams groups alike: the group epoch, or the group's tombstone (members must be gone)."""
        if rec.value is None:
            if g.members or g.target:
                raise InconsistentRecord(f"{g.group_type.value.lower()} group {g.group_id} tombstoned with members "
                                         "left")
            self._remove_group(g.group_id, offset, ts)
        else:
            g.replay_epoch(rec.value.epoch, offset, ts, self._events)

    def _share_partition_metadata(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        topics = () if rec.value is None else rec.value.topics
        for tm in topics:
            self.topic_names[tm.topic_id] = tm.topic_name
        g.subscription_metadata = {tm.topic_name: (tm.topic_id, tm.num_partitions) for tm in topics}

    def _share_member(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        g.replay_member(rec.key.member_id, rec.value, offset, ts, self._events)

    def _share_target_epoch(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        g.replay_target_epoch(None if rec.value is None else rec.value.assignment_epoch)

    def _share_target_member(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        g.replay_target_member(rec.key.member_id, None if rec.value is None else rec.value.topic_partitions)

    def _share_current_assignment(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        g.replay_current_assignment(rec.key.member_id, rec.value, offset, ts, self._events)

    def _share_state_partition_metadata(self, g: ShareGroup, rec, offset: int, ts: int) -> None:
        if rec.value is not None:
            v = rec.value
            for info in (*getattr(v, "initializing_topics", ()), *v.initialized_topics, *v.deleting_topics):
                self.topic_names[info.topic_id] = info.topic_name

    def _streams_topology(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        g.replay_topology(rec.value, offset, ts, self._events)

    def _streams_member(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        g.replay_member(rec.key.member_id, rec.value, offset, ts, self._events)

    def _streams_target_epoch(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        g.replay_target_epoch(None if rec.value is None else rec.value.assignment_epoch, offset, ts, self._events)

    def _streams_target_member(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        g.replay_target_member(rec.key.member_id, rec.value)

    def _streams_current_assignment(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        g.replay_current_assignment(rec.key.member_id, rec.value, offset, ts, self._events)

    def _streams_partition_metadata(self, g: StreamsGroup, rec, offset: int, ts: int) -> None:
        """Type 18 (trunk-only partition metadata) carries nothing the model needs; the group is still made."""

    # ---- heartbeats ----------------------------------------------------------------------------------------

    def apply_heartbeat(self, now_ms: int, end_offsets: Mapping[tuple[str, int], EndOffsetSample | int | tuple],
                        topic_ids: Mapping[str, bytes] | None = None) -> None:
        """Records end offsets observed at ``now_ms`` (a sample without its own time gets ``now_ms``).

        A value may be an :class:`EndOffsetSample`, a bare high watermark, or ``(hwm, lso, lwm)``. ``topic_ids``
        (name -> Uuid) lets 4.1+ groups, whose records carry only topic ids, be described with names.

        Raises:
            ValueError: a value of another shape.
        """
        if now_ms > self.now_ms:
            tracker = self.availability
            tracker.groups |= self.judge.kafka_rejoins
            self.judge.kafka_rejoins.clear()
            self._events.extend(tracker.on_heartbeat(now_ms, self.now_ms, self.last_timestamp))
            self.judge.away = tracker.window()
            self.now_ms = now_ms
            self._events.extend(self.judge.tick(now_ms))
            for g in self.groups.values():  # members whose silence became certain by now
                g.check_silence(now_ms, self.judge, self._events)
        if topic_ids:
            for name, tid in topic_ids.items():
                self.topic_names[tid] = name
        keep_all = self.config.track_all_topics
        tracked = self.tracked_topics
        cap = self.config.end_offset_history
        for key, s in end_offsets.items():
            if not keep_all and key[0] not in tracked:
                continue
            if isinstance(s, EndOffsetSample):
                if s.time_ms < 0:
                    s = EndOffsetSample(s.high_watermark, s.last_stable_offset, s.low_watermark, now_ms,
                                        s.transactional, s.quiet_from, s.oldest)
            elif isinstance(s, int):
                s = EndOffsetSample(s, -1, -1, now_ms)
            elif isinstance(s, tuple) and 1 <= len(s) <= 3:
                s = EndOffsetSample(*s, *(-1,) * (3 - len(s)), now_ms)
            else:
                raise ValueError(f"end offsets of {key}: expected EndOffsetSample, int or (hwm, lso, lwm), got {s!r}")
            h = self.ends.get(key)
            if h is None:
                h = self.ends[key] = EndOffsetHistory(cap)
            h.observe(s)

    # ---- output --------------------------------------------------------------------------------------------

    def drain_events(self) -> list[ev.Event]:
        """Returns and forgets the events emitted since the last call, in the order they happened."""
        out, self._events = self._events, []
        return out

    def group_ids(self) -> list[str]:
        """Every group the shard knows: live groups and groups that only have offsets left (Dead)."""
        return sorted(set(self.groups) | set(self.offsets.groups))

    def member_views(self, gid: str) -> list[ev.MemberSnapshot]:
        """The members of group ``gid`` as a snapshot shows them (none for a group that only has offsets left)."""
        g = self.groups.get(gid)
        return [] if g is None else g.member_snapshots(self.topic_names)

    def snapshot(self, now_ms: int | None = None, caught_up: bool = True) -> ev.ShardSnapshot:
        """Every group with members, offsets, lag, time lag and status at ``now_ms`` (default: last heartbeat).

        A query: the statuses are judged against those :meth:`evaluate` recorded last (for hysteresis), and nothing
        is recorded; asked twice, it answers the same. ``caught_up=False`` (the source has not yet reached the log
        end) holds every status at OK except data loss: replayed history must not raise STOP or STALL
        (docs/design-notes.md#lag-lessons).
        """
        now = self._now(now_ms)
        groups = tuple(self._group_snapshot(gid, now, caught_up) for gid in self.group_ids())
        return ev.ShardSnapshot(self.partition, now, self.last_offset, groups)

    def snapshot_groups(self, group_ids: Iterable[str], now_ms: int | None = None,
                        caught_up: bool = True) -> list[ev.GroupSnapshot]:
        """Like :meth:`snapshot` for the given groups only (those a micro-batch touched): cheap on large shards."""
        now = self._now(now_ms)
        known = set(self.groups) | set(self.offsets.groups)
        return [self._group_snapshot(gid, now, caught_up) for gid in sorted(set(group_ids)) if gid in known]

    def evaluate(self, now_ms: int | None = None, caught_up: bool = True) -> ev.ShardSnapshot:
        """:meth:`snapshot`, and its statuses recorded: each partition whose status differs from the one recorded
        before gets a StatusChanged event (its first status: with no previous one) and the new status is kept for
        the next judgement. This is the only place statuses are written."""
        snapshot = self.snapshot(now_ms, caught_up)
        for g in snapshot.groups:
            self._record(g, snapshot.now_ms)
        return snapshot

    def evaluate_groups(self, group_ids: Iterable[str], now_ms: int | None = None,
                        caught_up: bool = True) -> list[ev.GroupSnapshot]:
        """:meth:`snapshot_groups`, with its statuses recorded as :meth:`evaluate` records them."""
        now = self._now(now_ms)
        snapshots = self.snapshot_groups(group_ids, now, caught_up)
        for g in snapshots:
            self._record(g, now)
        return snapshots

    def _now(self, now_ms: int | None) -> int:
        """``now_ms``, else the last heartbeat's clock, else the newest record's."""
        now = self.now_ms if now_ms is None else now_ms
        return self.last_timestamp if now < 0 else now

    def _recorded_status(self, gid: str, topic: str, partition: int) -> Status | None:
        """The status :meth:`evaluate` recorded last for the partition (None: never judged)."""
        code = self.offsets.status_of(gid, topic, partition)
        return None if code == NO_STATUS else _STATUS_OF_CODE[code]

    def _record(self, g: ev.GroupSnapshot, now: int) -> None:
        """Records the group's statuses; a change is a StatusChanged event at the shard's last applied offset."""
        store, gid = self.offsets, g.group_id
        for p in g.partitions:
            previous = self._recorded_status(gid, p.topic, p.partition)
            if p.status != previous:
                self._events.append(ev.StatusChanged(gid, self.last_offset, now, p.topic, p.partition, previous,
                                                     p.status, p.status_reason))
                store.set_status(gid, p.topic, p.partition, int(p.status))

    def _measure(self, topic: str, partition: int, committed: int, now: int) -> tuple:
        """``(end, lag, seconds behind, lower bound, log start, end-offset samples, how the seconds were found)`` of
        a committed offset against the partition's end-offset history (Nones, False, -1 and no samples before its
        first heartbeat). The seconds are measured where the heartbeat brought the oldest unprocessed record's
        timestamp for this offset, else interpolated (``streaming.model.lag``)."""
        h = self.ends.get((topic, partition))
        if h is None or h.hwm < 0:
            return None, None, None, False, -1, (), None
        end, lag = h.lag(committed)
        measured = h.measured_lag(committed, now) if lag and h.oldest else None
        if measured is not None:
            return end, lag, measured, False, h.lwm, h.samples(), MEASURED
        secs, lower = h.time_lag(committed, now, lag)
        return end, lag, secs, lower, h.lwm, h.samples(), None if secs is None else INTERPOLATED

    def _group_snapshot(self, gid: str, now: int, caught_up: bool) -> ev.GroupSnapshot:
        g = self.groups.get(gid)
        members = tuple(self.member_views(gid))
        owners = {tp: m for m in members for tp in m.assignment}
        th = self.config.thresholds
        store = self.offsets
        rows = list(store.iter_group(gid))
        measured = [self._measure(topic, p, off, now) for topic, p, off, *_ in rows]
        # While replaying history every status but ERR is held at OK (old commits must not raise STOP), so the rules
        # and the membership facts they read are not worked out at all (most of a snapshot's time while replaying).
        status_rules = _GroupStatusRules(g, members, owners, store, gid, rows, [m[2] for m in measured], th, now,
                                         self.judge.config.silent_after_ms,
                                         self.availability.returned()) if caught_up else None
        parts: list[ev.PartitionLag] = []
        for i, (topic, p, off, epoch, md, cts) in enumerate(rows):
            end, lag, secs, lower, lwm, ends_list, method = measured[i]
            loss = is_data_loss(off, lwm)
            owner = owners.get((topic, p))
            previous = self._recorded_status(gid, topic, p)
            if status_rules is not None:
                verdict = status_rules.evaluate(i, topic, owner, ends_list, lag, now, lwm, previous)
                status, reason = verdict.status, verdict.reason
            elif loss:
                status, reason = Status.ERR, data_loss_reason(off, lwm)
            else:
                status, reason = Status.OK, "replaying history: statuses are held until the log end is reached"
            # replaying history, the commit windows are old and not even read: catching up is not known
            catch_up = (partition_catch_up(lag, status_rules.windows[i], ends_list, now) if status_rules is not None
                        else CATCH_UP_UNKNOWN)
            parts.append(ev.PartitionLag(topic, p, off, epoch, md, cts, end, lag, secs, lower, loss, status,
                                         None if owner is None else owner.member_id, reason,
                                         catch_up=catch_up,
                                         log_start=lwm if lwm >= 0 else None,
                                         lag_seconds_method=method))
        topics: dict[str, list[ev.PartitionLag]] = {}
        for pl in parts:
            topics.setdefault(pl.topic, []).append(pl)
        topic_lags = tuple(
            ev.TopicLag(t, *_lag_totals([x.lag for x in ps]),
                        max((x.lag_seconds for x in ps if x.lag_seconds is not None), default=None))
            for t, ps in topics.items())
        if g is None:
            gtype = self._deleted.get(gid, (GroupType.CLASSIC, 0))[0]
            state, ptype, assignor, gen, aepoch, leader, rebal, last_rb, cst, simple = \
                "DEAD", None, "", 0, None, None, 0, None, None, False
        else:
            gtype = g.group_type
            state = g.state_name
            rebal, last_rb = g.rebalances, g.last_rebalance_ts
            ptype, gen, aepoch, leader, cst = g.header()
            assignor = g.preferred_assignor(self.config.default_assignor)
            simple = g.is_simple
        c = self.judge.counters(gid)
        return ev.GroupSnapshot(
            gid, gtype, state, ptype, assignor, gen, aepoch, leader, members, tuple(parts), topic_lags,
            *(_lag_totals([t.sum_lag for t in topic_lags], [t.max_lag for t in topic_lags]) if topic_lags else (0, 0)),
            max((t.max_lag_seconds for t in topic_lags if t.max_lag_seconds is not None), default=None),
            group_status(p.status for p in parts), rebal, last_rb, cst, simple,
            c, catch_up=group_catch_up(p.catch_up for p in parts))

    # ---- state serialization -------------------------------------------------------------------------------

    def to_state(self) -> dict:
        """The shard by field name (:mod:`.state_format`). Events not yet drained are not part of the state (the
        caller drains them every batch)."""
        self.availability.groups |= self.judge.kafka_rejoins
        self.judge.kafka_rejoins.clear()
        return {
            "partition": self.partition, "last_offset": self.last_offset, "last_timestamp": self.last_timestamp,
            "now_ms": self.now_ms,
            "groups": [{"type": g.group_type.value, "group": g.saved_state()} for g in self.groups.values()],
            "offsets": self.offsets.to_state(), "ends": {k: h.to_state() for k, h in self.ends.items()},
            "topic_names": self.topic_names, "judge": self.judge.to_state(),
            "deleted": {k: (t.value, ts) for k, (t, ts) in self._deleted.items()},
            "unknown_records": self.unknown_records, "tracked_topics": tuple(self.tracked_topics),
            "availability": self.availability.to_state(),
        }

    @classmethod
    def from_state(cls, state: Mapping, config: ModelConfig = ModelConfig()) -> "GroupCoordinatorShard":
        """Restores :meth:`to_state`."""
        self = cls(state["partition"], config)
        self.last_offset, self.last_timestamp, self.now_ms = state["last_offset"], state["last_timestamp"], \
            state["now_ms"]
        for entry in state["groups"]:
            g = _RESTORED_GROUP_CLASSES[GroupType(entry["type"])].restore(entry["group"])
            self.groups[g.group_id] = g
        self.offsets = OffsetStore.from_state(state["offsets"])
        self.ends = {k: EndOffsetHistory.from_state(h) for k, h in state["ends"].items()}
        self.topic_names = dict(state["topic_names"])
        self.judge.load_state(state["judge"])
        self._deleted = {k: (GroupType(t), ts) for k, (t, ts) in state["deleted"].items()}
        self.unknown_records = state["unknown_records"]
        self.tracked_topics = set(state["tracked_topics"])
        self.availability.load_state(state["availability"])
        self.judge.away = self.availability.window()
        return self

    def to_bytes(self) -> bytes:
        """The shard alone as one blob of the current state format (the job's step saves it with its own
        bookkeeping: :meth:`streaming.job.step.ShardStep.state`)."""
        return state_format.encode(self.to_state())

    @classmethod
    def from_bytes(cls, data: bytes, config: ModelConfig = ModelConfig()) -> "GroupCoordinatorShard":
        """Restores a shard from a blob of any state version this code reads (a version-1 one is migrated).

        Raises:
            StateFormatError: (a ValueError) bytes that are not a shard state, or one written by a newer version.
        """
        return cls.from_document(state_format.decode(data), config)

    @classmethod
    def from_document(cls, doc: state_format.StateDocument,
                      config: ModelConfig = ModelConfig()) -> "GroupCoordinatorShard":
        """The shard of a decoded state document."""
        if doc.v1_shard is not None:
            return cls.from_state(state_v1.migrate(doc.v1_shard), config)
        if doc.shard is None:
            raise state_format.StateFormatError("not a groupscope state (no shard in it)")
        return cls.from_state(doc.shard, config)


_STATUS_OF_CODE = tuple(Status)  # code -> Status without the enum call on the hot path

def _of_type(g: Group | None, cls: type[_G]) -> _G | None:
    """``g`` when it is a group of type ``cls`` (the type a record type belongs to), else None: a group's type is
    its ``group_type``, one per class."""
    return g if g is not None and g.group_type is cls.group_type else None


_GROUP_CLASSES = {GroupType.CLASSIC: ClassicGroup, GroupType.CONSUMER: ConsumerGroup, GroupType.SHARE: ShareGroup,
                  GroupType.STREAMS: StreamsGroup}


def _tick_fields(state: Mapping) -> Iterable[tuple[str, object]]:
    """What the shard reads of every group every batch: its id, and, of a consumer group (the only type that keeps
    the field), when a member's silence comes due (the heartbeat tick's question)."""
    yield "group_id", state["group_id"]
    if "silence_due_ms" in state:
        yield "silence_due_ms", state["silence_due_ms"]


# Groups as a batch restores them: built on first use (streaming.model.lazy); the heartbeat tick's questions are
# answered without building one.
_RESTORED_GROUP_CLASSES = {kind: lazy_variant(cls, _tick_fields) for kind, cls in _GROUP_CLASSES.items()}

_T = RecordType
_S = GroupCoordinatorShard
Handler = Callable[[GroupCoordinatorShard, CoordinatorRecord, int, int, int, bool], None]


def _typed(cls, apply: Callable) -> Handler:
    """The handler of a share or streams record type: gets the group the record's id names, creating it for a
    value (a tombstone of an unknown group is ignored), then ``apply(shard, group, record, offset, timestamp)``.

    Raises (inside replay, reported as an Anomaly):
        InconsistentRecord: the id belongs to a non-simple group of another type.
    """

    def handler(shard: GroupCoordinatorShard, rec: CoordinatorRecord, offset: int, ts: int, pid: int,
                txn: bool) -> None:
        g = shard._typed_group(cls, rec.key.group_id, rec.value is not None, offset, ts)
        if g is not None:
            apply(shard, g, rec, offset, ts)

    return handler
DISPATCH: dict[RecordType, Handler] = {
    _T.LEGACY_OFFSET_COMMIT: GroupCoordinatorShard._offset_commit,  # same logical key space as type 1 (docs/kafka-formats.md#coordinator-records)
    _T.OFFSET_COMMIT: GroupCoordinatorShard._offset_commit,
    _T.GROUP_METADATA: GroupCoordinatorShard._group_metadata,
    _T.CONSUMER_GROUP_METADATA: GroupCoordinatorShard._cg_epoch,
    _T.CONSUMER_GROUP_PARTITION_METADATA: GroupCoordinatorShard._cg_partition_metadata,
    _T.CONSUMER_GROUP_MEMBER_METADATA: GroupCoordinatorShard._cg_member,
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: GroupCoordinatorShard._cg_target_epoch,
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: GroupCoordinatorShard._cg_target_member,
    _T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: GroupCoordinatorShard._cg_current_assignment,
    _T.CONSUMER_GROUP_REGULAR_EXPRESSION: GroupCoordinatorShard._cg_regex,
    **{t: _typed(ShareGroup, apply) for t, apply in (
        (_T.SHARE_GROUP_METADATA, _S._typed_group_metadata),
        (_T.SHARE_GROUP_PARTITION_METADATA, _S._share_partition_metadata),
        (_T.SHARE_GROUP_MEMBER_METADATA, _S._share_member),
        (_T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, _S._share_target_epoch),
        (_T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, _S._share_target_member),
        (_T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, _S._share_current_assignment),
        (_T.SHARE_GROUP_STATE_PARTITION_METADATA, _S._share_state_partition_metadata))},
    **{t: _typed(StreamsGroup, apply) for t, apply in (
        (_T.STREAMS_GROUP_METADATA, _S._typed_group_metadata),
        (_T.STREAMS_GROUP_PARTITION_METADATA, _S._streams_partition_metadata),
        (_T.STREAMS_GROUP_MEMBER_METADATA, _S._streams_member),
        (_T.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, _S._streams_target_epoch),
        (_T.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER, _S._streams_target_member),
        (_T.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, _S._streams_current_assignment),
        (_T.STREAMS_GROUP_TOPOLOGY, _S._streams_topology))},
}


class CoordinatorModel:
    """All shards of one cluster (what the CLI's segment-file path builds): one shard per offsets partition."""

    __slots__ = ("config", "shards")

    def __init__(self, config: ModelConfig = ModelConfig()) -> None:
        self.config = config
        self.shards: dict[int, GroupCoordinatorShard] = {}

    def shard(self, partition: int) -> GroupCoordinatorShard:
        s = self.shards.get(partition)
        if s is None:
            s = self.shards[partition] = GroupCoordinatorShard(partition, self.config)
        return s

    def __iter__(self) -> Iterator[GroupCoordinatorShard]:
        return iter(self.shards[p] for p in sorted(self.shards))

    def apply_heartbeat(self, now_ms: int, end_offsets, topic_ids=None) -> None:
        for s in self.shards.values():
            s.apply_heartbeat(now_ms, end_offsets, topic_ids)

    def drain_events(self) -> list[ev.Event]:
        return [e for s in self for e in s.drain_events()]

    def snapshot(self, now_ms: int | None = None, caught_up: bool = True) -> list[ev.ShardSnapshot]:
        """Every shard's :meth:`GroupCoordinatorShard.snapshot` (a query)."""
        return [s.snapshot(now_ms, caught_up) for s in self]

    def evaluate(self, now_ms: int | None = None, caught_up: bool = True) -> list[ev.ShardSnapshot]:
        """Every shard's :meth:`GroupCoordinatorShard.evaluate`: the snapshots, with their statuses recorded."""
        return [s.evaluate(now_ms, caught_up) for s in self]


class _GroupStatusRules:
    """The membership facts the status rules read for one group's partitions, worked out once per snapshot.

    Membership facts: a group that never had members in the log ("simple": assign() and commit) can only be judged
    by its commits; a group whose metadata is gone (DEAD) or that has no members is consumed by nobody."""

    __slots__ = ("th", "windows", "cadence", "ownership_of", "unowned", "unsubscribed", "subscribed")

    def __init__(self, g: Group | None, members: tuple[ev.MemberSnapshot, ...],
                 owners: Mapping[tuple[str, int], ev.MemberSnapshot], store: OffsetStore, gid: str,
                 rows: Sequence[tuple], behind_s: Sequence[float | None],
                 th: Thresholds, now_ms: int, silent_after_ms: int,
                 kafka_outage: tuple[int, int] | None = None) -> None:
        """``behind_s``: how far behind each row is now, in seconds (None: no end-offset history).
        ``silent_after_ms``: how long a consumer-protocol member may go without following the group's epoch
        before it is known to have stopped heartbeating (the rebalance judge's threshold). ``kafka_outage``:
        ``(went away, came back)`` of Kafka's latest outage (None: none seen)."""
        self.th = th
        if g is None:  # only offsets are left (DEAD): no membership facts
            simple, assignment_known, self.subscribed, silent_ms, rebalanced = False, False, None, {}, None
        else:
            simple, assignment_known = g.is_simple, g.assignment_known
            # The topics the members subscribe to (None: not known, e.g. an undecodable classic subscription).
            self.subscribed = g.subscribed_topics()
            silent_ms = g.silent_members(now_ms, silent_after_ms)
            rebalanced = g.last_rebalance_ts
        known = not simple
        empty = known and not members
        self.windows = [store.window_of(gid, topic, p) for topic, p, *_ in rows]  # in the order of ``rows``
        cadences = [c for c in map(commit_cadence_ms, self.windows) if c is not None]
        self.cadence = sorted(cadences)[len(cadences) // 2] if cadences else None
        owner_last: dict[str, int] = {}
        owner_windows: dict[str, list] = {m.member_id: [] for m in members}
        owner_behind: dict[str, list] = {m.member_id: [] for m in members}
        for (topic, p, _off, _epoch, _md, cts), window, behind in zip(rows, self.windows, behind_s):
            m = owners.get((topic, p))
            if m is None:
                continue
            if cts > owner_last.get(m.member_id, -1):
                owner_last[m.member_id] = cts
            owner_windows[m.member_id].append(window)
            owner_behind[m.member_id].append(None if behind is None else behind * 1000.0)
        # One Ownership per member (and one for unowned partitions), shared by its partitions.
        self.unowned = Ownership(known, empty, None, "", None, None, assignment_known, kafka_outage=kafka_outage)
        self.unsubscribed = Ownership(known, empty, None, "", None, None, assignment_known, topic_subscribed=False,
                                      kafka_outage=kafka_outage)
        self.ownership_of = {
            m.member_id: Ownership(known, empty, m.member_id, f"{m.client_id or m.member_id}@{m.host}",
                                   owner_last.get(m.member_id), m.rebalance_timeout_ms, assignment_known,
                                   owner_windows=tuple(owner_windows[m.member_id]),
                                   owner_behind_ms=tuple(owner_behind[m.member_id]),
                                   assigned_since_ms=rebalanced, owner_silent_ms=silent_ms.get(m.member_id),
                                   kafka_outage=kafka_outage)
            for m in members}

    def evaluate(self, row: int, topic: str, owner: ev.MemberSnapshot | None, ends: Sequence[tuple[int, int]],
                 lag: int | None, now: int, lwm: int, previous: Status | None):
        """The status of the ``row``-th of the rows this was built with (a partition of ``topic``)."""
        if owner is not None:
            ownership = self.ownership_of[owner.member_id]
        elif self.subscribed is not None and topic not in self.subscribed:
            ownership = self.unsubscribed
        else:
            ownership = self.unowned
        return evaluate_partition(self.windows[row], ends, lag, now, self.th, lwm, ownership, previous,
                                  self.cadence)


def shards_of(shard_or_model) -> Iterable[GroupCoordinatorShard]:
    """A shard, a CoordinatorModel or an iterable of shards, as an iterable of shards."""
    if isinstance(shard_or_model, GroupCoordinatorShard):
        return (shard_or_model,)
    return tuple(shard_or_model)


def _lag_totals(lags: list[int | None], maxima: list[int | None] | None = None) -> tuple[int | None, int | None]:
    """``(sum, max)`` of the lags that are known. None when none is: no heartbeat has given the end offsets of
    those partitions yet (or their topic is excluded from heartbeats, or the job reads segment files), and a 0
    there would read as "caught up". ``maxima``: the maxima to take the max of, when they differ from ``lags``."""
    known = [x for x in lags if x is not None]
    if not known:
        return None, None
    return sum(known), max(x for x in (lags if maxima is None else maxima) if x is not None)
