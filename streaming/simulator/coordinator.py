"""Emulates a Kafka 4.0 group coordinator: the records it appends to ``__consumer_offsets``, when, and in what order.

Mirrors ``GroupMetadataManager`` / ``OffsetMetadataManager`` as of 4.0 (the new coordinator, default since 4.0), per
docs/kafka-formats.md#coordinator-writes and the kafka-4.0 captures:

* classic groups: the first JoinGroup creates the group and writes an empty ``GroupMetadataValue`` v3
  (protocolType "", generation 0); a completed join phase writes nothing; the leader's SyncGroup writes the
  generation's value with every member's subscription and assignment blob; a join phase that ends with no member
  writes generation+1 with no protocol, leader or members; a static member re-joining with a new member id while
  Stable rewrites the same generation with the replaced id. Members appear in the record in ``java.util.HashMap``
  iteration order, as the broker's ``HashMap`` of members yields them.
* KIP-848 consumer groups (4.0 style: type 4 still written): a join writes 5, [4], 3, then the target
  assignment 7* (delta) and 6, then 8 for the member; a heartbeat computes a pending target assignment and
  reconciles the member (8 when it changed); a leave or session expiry writes tombstones 8, 7, 5, [4], then 3;
  deletion writes 6, 4, 3 tombstones (after the offsets' tombstones).
* offsets: one batch per OffsetCommit request, value v3; transactional commits in a transactional batch,
  pending per producer id until a COMMIT/ABORT marker; a COMMIT applies a pending offset only when its log offset
  is newer than the stored one; an offset tombstone also drops pending offsets of that partition.

The coordinator also keeps the truth the tests compare against: what Kafka's loader would restore from the log at
any moment (``persisted`` views), plus offsets and pending transactions. It never reads a clock: ``now`` comes
from the :class:`~streaming.simulator.clock.Scheduler`.
"""

from __future__ import annotations

import base64
import random
import struct
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from protocol.builders import (
    new_classic_member,
    new_consumer_assignment,
    new_consumer_group_epoch,
    new_consumer_group_epoch_tombstone,
    new_consumer_group_member,
    new_consumer_group_member_tombstone,
    new_consumer_group_partition_metadata,
    new_consumer_group_partition_metadata_tombstone,
    new_consumer_subscription,
    new_current_assignment,
    new_current_assignment_tombstone,
    new_empty_group_metadata,
    new_group_metadata,
    new_group_metadata_tombstone,
    new_offset_commit_tombstone,
    new_target_assignment_epoch,
    new_target_assignment_epoch_tombstone,
    new_target_assignment_member,
    new_target_assignment_member_tombstone,
)
from protocol.codec import encode_record
from protocol.partitioner import java_string_hash, partition_for
from protocol.records import CoordinatorRecord, MemberState
from streaming.model.assignors import assign, cooperative_sticky_assign

from .clock import Scheduler
from .sinks import Append, Marker, Sink
from .topics import Topic

__all__ = [
    "CoordinatorConfig",
    "Coordinator",
    "ClassicGroupSim",
    "ClassicMemberSim",
    "ConsumerGroupSim",
    "ConsumerMemberSim",
    "Committed",
    "CommitRejected",
    "java_hashmap_order",
    "librdkafka_member_id",
    "kip848_member_id",
]

TP = tuple[str, int]
_V3_HEAD = struct.Struct(">hqi")  # version 3, offset, leaderEpoch
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")


class CommitRejected(Exception):
    """The coordinator refused an offset commit (stale generation or epoch, unknown member): nothing written."""


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker settings that shape the records' timing (Kafka defaults unless noted)."""

    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    consumer_session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    default_server_assignor: str = "uniform"  # group.consumer.assignors[0]


@dataclass(slots=True)
class Committed:
    """A committed offset as the coordinator holds it (``log_offset``: where its record sits)."""

    offset: int
    metadata: str
    leader_epoch: int
    commit_timestamp: int
    log_offset: int


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap<String, ?>`` holding ``keys`` (inserted in the given order).

    Buckets by the spread hash ``h ^ (h >>> 16)`` masked to the table size (16, doubling past 0.75 load); inside a
    bucket insertion order (no treeification at simulator sizes). This is the member order of the broker's
    ``GroupMetadataValue`` (checked against the kafka-4.0 captures).
    """
    keys = list(keys)
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: insertion order inside a bucket


def librdkafka_member_id(prefix: str, rng: random.Random) -> str:
    """A classic member id as the broker assigns it: ``<client.id or group.instance.id>-<uuid4>``."""
    return f"{prefix}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def kip848_member_id(rng: random.Random) -> str:
    """A KIP-848 member id as librdkafka generates it: a random UUID in 22 chars of standard base64, no padding."""
    return base64.b64encode(rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode()


def _sticky_user_data(owned: Mapping[str, Iterable[int]], generation: int) -> bytes:
    """librdkafka's sticky user data (the StickyAssignor "v1" layout): [topic, [partition]], generation."""
    out = bytearray(struct.pack(">i", len(owned)))
    for topic, parts in owned.items():
        raw = topic.encode()
        parts = list(parts)
        out += _INT16.pack(len(raw)) + raw + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    out += struct.pack(">i", generation)
    return bytes(out)


def _by_topic(tps: Iterable[TP]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        out.setdefault(t, []).append(p)
    return out


# ---------------------------------------------------------------------------------------------------------------
# classic groups


@dataclass(slots=True)
class ClassicMemberSim:
    member_id: str
    client_id: str
    instance_id: str | None
    host: str
    session_timeout: int
    rebalance_timeout: int
    topics: tuple[str, ...]
    owned: tuple[TP, ...] = ()  # what it owned when it (re)joined (cooperative / sticky user data)
    owned_generation: int = -1
    assignment: tuple[TP, ...] = ()
    client: object = None  # the simulated client, notified of assignments
    subscription: bytes = b""
    assignment_blob: bytes = b""
    # when it (re)joined the current join phase: a new member at its JoinGroup, a known one at the heartbeat after
    # the rebalance began. A member that died after rejoining is carried into the generation (see _complete_join).
    rejoin_at: int = 0


@dataclass(slots=True)
class ClassicGroupSim:
    group_id: str
    strategy: str
    state: str = "EMPTY"  # EMPTY PREPARING_REBALANCE COMPLETING_REBALANCE STABLE DEAD
    generation: int = 0
    protocol_type: str = ""
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, ClassicMemberSim] = field(default_factory=dict)  # join order
    current_state_timestamp: int = -1
    persisted: dict | None = None  # the group as the last type-2 record shows it (None: no record yet)
    join_deadline: int | None = None
    rebalance_started: int | None = None
    group_type = "CLASSIC"


# ---------------------------------------------------------------------------------------------------------------
# KIP-848 consumer groups


@dataclass(slots=True)
class ConsumerMemberSim:
    member_id: str
    client_id: str
    instance_id: str | None
    host: str
    topics: tuple[str, ...]
    rebalance_timeout: int
    server_assignor: str | None
    member_epoch: int = 0
    previous_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TP] = frozenset()
    pending: frozenset[TP] = frozenset()
    client: object = None


@dataclass(slots=True)
class ConsumerGroupSim:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMemberSim] = field(default_factory=dict)
    target: dict[str, frozenset[TP]] = field(default_factory=dict)
    subscription_metadata: dict[str, int] = field(default_factory=dict)  # topic -> partitions (type 4 as written)
    has_partition_metadata: bool = False
    group_type = "CONSUMER"

    @property
    def state(self) -> str:
        """``ConsumerGroup.maybeUpdateGroupState``."""
        if not self.members:
            return "EMPTY"
        if self.group_epoch > self.assignment_epoch:
            return "ASSIGNING"
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE:
                return "RECONCILING"
        return "STABLE"


# ---------------------------------------------------------------------------------------------------------------


class Coordinator:
    """All group coordinator shards of one cluster (one object; records routed by ``partition_for``).

    Raises (from request methods): ``CommitRejected`` for commits Kafka would refuse, ``ValueError`` for misuse
    (unknown group or member, deleting a non-empty group).
    """

    def __init__(self, sched: Scheduler, sink: Sink, rng: random.Random, topics: Mapping[str, Topic], *,
                 offsets_partitions: int = 50, config: CoordinatorConfig = CoordinatorConfig()) -> None:
        self.sched = sched
        self.sink = sink
        self.rng = rng
        self.topics = topics
        self.offsets_partitions = offsets_partitions
        self.config = config
        self.groups: dict[str, ClassicGroupSim | ConsumerGroupSim] = {}
        self.offsets: dict[str, dict[TP, Committed]] = {}
        # producer id -> group -> tp -> Committed (pending until the marker)
        self.pending: dict[int, dict[str, dict[TP, Committed]]] = {}
        self.log_end = [0] * offsets_partitions
        self._partition_of: dict[str, int] = {}
        self._key_cache: dict[tuple[str, str, int], bytes] = {}
        self._md_cache: dict[str, bytes] = {}
        self.records_written = 0
        self.listeners: list[Callable[[str, str], None]] = []  # (group, what) for tests / the demo

    # ---- the log ---------------------------------------------------------------------------------------------

    def partition_of(self, group: str) -> int:
        p = self._partition_of.get(group)
        if p is None:
            p = self._partition_of[group] = partition_for(group, self.offsets_partitions)
        return p

    def _append(self, group: str, records: list, *, producer_id: int = -1, producer_epoch: int = -1,
                transactional: bool = False) -> int:
        """Appends one batch (records or pre-encoded (key, value) pairs); returns its base offset."""
        encoded = [encode_record(r) if isinstance(r, CoordinatorRecord) else r for r in records]
        part = self.partition_of(group)
        base = self.log_end[part]
        self.log_end[part] = base + len(encoded)
        self.records_written += len(encoded)
        self.sink.append(Append(part, base, self.sched.now_ms, encoded, producer_id, producer_epoch, transactional))
        return base

    def _offset_key(self, group: str, topic: str, partition: int) -> bytes:
        k = (group, topic, partition)
        key = self._key_cache.get(k)
        if key is None:
            g, t = group.encode(), topic.encode()
            key = self._key_cache[k] = (_INT16.pack(1) + _INT16.pack(len(g)) + g + _INT16.pack(len(t)) + t
                                        + struct.pack(">i", partition))
        return key

    def _metadata_block(self, metadata: str) -> bytes:
        block = self._md_cache.get(metadata)
        if block is None:
            raw = metadata.encode()
            block = self._md_cache[metadata] = _INT16.pack(len(raw)) + raw
        return block

    # ---- offsets ---------------------------------------------------------------------------------------------

    def commit_offsets(self, group: str, offsets: Iterable[tuple[str, int, int, int]], *, metadata: str = "",
                       member_id: str | None = None, generation: int = -1) -> int:
        """OffsetCommit: ``(topic, partition, offset, leader_epoch)`` items in one batch; returns records written.

        ``member_id``/``generation`` are the request's (classic: generation id; consumer: member epoch).

        Raises:
            CommitRejected: a stale generation/epoch, an unknown member, or a rebalance completing.
        """
        g = self.groups.get(group)
        if member_id is not None:
            if g is None:
                raise CommitRejected(f"unknown group {group}")
            if isinstance(g, ClassicGroupSim):
                if member_id not in g.members:
                    raise CommitRejected("UNKNOWN_MEMBER_ID")
                if g.state == "COMPLETING_REBALANCE":
                    raise CommitRejected("REBALANCE_IN_PROGRESS")
                if generation != g.generation:
                    raise CommitRejected("ILLEGAL_GENERATION")
            else:
                m = g.members.get(member_id)
                if m is None:
                    raise CommitRejected("UNKNOWN_MEMBER_ID")
                if generation != m.member_epoch:
                    raise CommitRejected("STALE_MEMBER_EPOCH")
        elif g is not None and g.members:
            raise CommitRejected("UNKNOWN_MEMBER_ID")  # a simple commit into a group with members
        now = self.sched.now_ms
        md = self._metadata_block(metadata)
        tail = _INT64.pack(now)
        head = _V3_HEAD.pack
        key = self._offset_key
        records = []
        items = []
        for topic, partition, offset, epoch in offsets:
            records.append((key(group, topic, partition), head(3, offset, epoch) + md + tail))
            items.append((topic, partition, offset, epoch))
        if not records:
            return 0
        base = self._append(group, records)
        store = self.offsets.get(group)
        if store is None:
            store = self.offsets[group] = {}
        for i, (topic, partition, offset, epoch) in enumerate(items):
            store[(topic, partition)] = Committed(offset, metadata, epoch, now, base + i)
        return len(records)

    def txn_commit_offsets(self, producer_id: int, producer_epoch: int, group: str,
                           offsets: Iterable[tuple[str, int, int, int]], *, metadata: str = "") -> int:
        """TxnOffsetCommit: a transactional batch; the offsets stay pending until :meth:`end_transaction`."""
        now = self.sched.now_ms
        md = self._metadata_block(metadata)
        tail = _INT64.pack(now)
        items = list(offsets)
        records = [(self._offset_key(group, t, p), _V3_HEAD.pack(3, o, e) + md + tail) for t, p, o, e in items]
        if not records:
            return 0
        base = self._append(group, records, producer_id=producer_id, producer_epoch=producer_epoch,
                            transactional=True)
        pend = self.pending.setdefault(producer_id, {}).setdefault(group, {})
        for i, (t, p, o, e) in enumerate(items):
            pend[(t, p)] = Committed(o, metadata, e, now, base + i)
        return len(records)

    def end_transaction(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """WriteTxnMarkers: one COMMIT/ABORT marker in every offsets partition the transaction wrote to."""
        groups = self.pending.pop(producer_id, {})
        now = self.sched.now_ms
        for part in sorted({self.partition_of(g) for g in groups}):
            offset = self.log_end[part]
            self.log_end[part] += 1
            self.sink.marker(Marker(part, offset, now, producer_id, producer_epoch, commit))
        if not commit:
            return
        for group, pend in groups.items():
            store = self.offsets.setdefault(group, {})
            for tp, c in pend.items():
                old = store.get(tp)
                if old is None or c.log_offset > old.log_offset:  # docs/kafka-formats.md#offset-replay: newer record wins
                    store[tp] = c

    def delete_offsets(self, group: str, topic: str) -> int:
        """OffsetDelete for every committed partition of ``topic``.

        Raises:
            ValueError: the group is not empty and subscribes to the topic (GROUP_SUBSCRIBED_TO_TOPIC).
        """
        g = self.groups.get(group)
        if g is not None and g.members and any(topic in m.topics for m in g.members.values()):
            raise ValueError(f"GROUP_SUBSCRIBED_TO_TOPIC: {group} consumes {topic}")
        store = self.offsets.get(group, {})
        tps = sorted(tp for tp in store if tp[0] == topic)
        if not tps:
            return 0
        self._append(group, [new_offset_commit_tombstone(group, t, p) for t, p in tps])
        for tp in tps:
            del store[tp]
            for groups in self.pending.values():
                groups.get(group, {}).pop(tp, None)
        if not store:
            self.offsets.pop(group, None)
        return len(tps)

    def delete_group(self, group: str) -> None:
        """DeleteGroups: offset tombstones, then the group's tombstones, in one batch.

        Raises:
            ValueError: the group has members (NON_EMPTY_GROUP) or does not exist (GROUP_ID_NOT_FOUND).
        """
        g = self.groups.get(group)
        store = self.offsets.get(group, {})
        if g is None and not store:
            raise ValueError(f"GROUP_ID_NOT_FOUND: {group}")
        if g is not None and g.members:
            raise ValueError(f"NON_EMPTY_GROUP: {group}")
        records: list = [new_offset_commit_tombstone(group, t, p) for t, p in sorted(store)]
        if isinstance(g, ConsumerGroupSim):
            # ConsumerGroup.createGroupTombstoneRecords: 8*, 7*, 6, 5*, 16*, 4, 3 (no members left: 6, 4, 3)
            records += [new_target_assignment_epoch_tombstone(group), new_consumer_group_partition_metadata_tombstone(group),
                        new_consumer_group_epoch_tombstone(group)]
        else:
            records.append(new_group_metadata_tombstone(group))
        self._append(group, records)
        self.offsets.pop(group, None)
        for groups in self.pending.values():
            groups.pop(group, None)
        self.groups.pop(group, None)
        self._notify(group, "deleted")

    def _notify(self, group: str, what: str) -> None:
        for fn in self.listeners:
            fn(group, what)

    # ---- classic groups ----------------------------------------------------------------------------------------

    def classic_join(self, group: str, client, *, strategy: str, client_id: str, topics: Iterable[str],
                     instance_id: str | None = None, session_timeout: int = 45000,
                     rebalance_timeout: int = 300000, host: str = "/127.0.0.1") -> str:
        """JoinGroup of a new client (empty member id); returns the member id it will use."""
        now = self.sched.now_ms
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = ClassicGroupSim(group, strategy)
            g.current_state_timestamp = now
            # The first JoinGroup (answered MEMBER_ID_REQUIRED) creates the group: docs/kafka-formats.md#group-states.
            self._append(group, [new_empty_group_metadata(group, generation=0, protocol_type="",
                                                          current_state_timestamp=now)])
            g.persisted = _classic_persisted(g)
        elif not isinstance(g, ClassicGroupSim):
            raise ValueError(f"group {group} is a consumer group")
        g.strategy = strategy
        if instance_id is not None:
            old = next((m for m in g.members.values() if m.instance_id == instance_id), None)
            if old is not None:
                return self._replace_static_member(g, old, client)
        member_id = librdkafka_member_id(instance_id or client_id, self.rng)
        g.members[member_id] = ClassicMemberSim(member_id, client_id, instance_id, host, session_timeout,
                                                rebalance_timeout, tuple(sorted(topics)), client=client,
                                                rejoin_at=now)
        self._prepare_rebalance(g)
        return member_id

    def _replace_static_member(self, g: ClassicGroupSim, old: ClassicMemberSim, client) -> str:
        """KIP-345: a known group.instance.id re-joins with a new member id and gets the old one's assignment."""
        new_id = librdkafka_member_id(old.instance_id or old.client_id, self.rng)
        old_id = old.member_id
        if g.leader == old_id:
            g.leader = new_id  # isLeader(oldMemberId) -> the new id leads
        members = {}
        for mid, m in g.members.items():
            if mid == old_id:
                m.member_id, m.client = new_id, client
                members[new_id] = m
            else:
                members[mid] = m
        g.members = members
        if g.state == "STABLE":
            # Same generation, same state timestamp, the replaced id (docs/kafka-formats.md#group-states; capture a_classic offset 412).
            self._write_classic(g)
            client.on_assignment(new_id, g.generation, g.members[new_id].assignment)
        return new_id

    def _prepare_rebalance(self, g: ClassicGroupSim) -> None:
        """Stable/Completing -> PreparingRebalance (members rejoin within a heartbeat); Empty -> PreparingRebalance
        with ``group.initial.rebalance.delay.ms``; already preparing: the new member is simply part of it."""
        now = self.sched.now_ms
        if g.state in ("STABLE", "COMPLETING_REBALANCE"):
            g.state = "PREPARING_REBALANCE"
            g.rebalance_started = now
            for m in list(g.members.values()):
                if m.client is not None:
                    m.client.on_rebalance_start(now)
            if not g.members:
                # The last member left: nobody to wait for, the empty generation is written at once (every verdict
                # recording: generation N+1 with no members within ~0.1 s of the last clean close).
                self._schedule_join_completion(g, now)
                return
            # Members learn of the rebalance from their next heartbeat and rejoin; the phase can complete once
            # the last of them has.
            for m in g.members.values():
                hb = getattr(m.client, "heartbeat_interval_ms", 3000)
                m.rejoin_at = now + self.rng.randint(hb // 4, hb)
            self._schedule_join_completion(g, max(m.rejoin_at for m in g.members.values()) + 5)
        elif g.state == "EMPTY":
            g.state = "PREPARING_REBALANCE"
            g.rebalance_started = now
            self._schedule_join_completion(g, now + self.config.initial_rebalance_delay_ms)

    def _schedule_join_completion(self, g: ClassicGroupSim, when: int) -> None:
        if g.join_deadline is not None and g.join_deadline <= when:
            return
        g.join_deadline = when
        gen = g.generation
        self.sched.at(when, lambda: self._complete_join(g, gen, when))

    def _complete_join(self, g: ClassicGroupSim, gen: int, deadline: int) -> None:
        if self.groups.get(g.group_id) is not g or g.state != "PREPARING_REBALANCE" or g.generation != gen \
                or g.join_deadline != deadline:
            return
        # The join phase completes only when every known member has rejoined (or the rebalance timeout passes).
        # A member that cannot rejoin holds it until it is removed: an application that stopped polling until its
        # client leaves on max.poll.interval.ms, a ghost (killed or crashed without LeaveGroup) until its session
        # expires. Real: storm_crashloop's rebalances came every ~14 s, each waiting for a SIGKILLed member's 10 s
        # session timeout (broker log: 16 members removed on session expiry).
        # A member that rejoined before it died is not waited for: it counts as joined (a member awaiting a join
        # satisfies its heartbeats), so the generation is written with it, and its session runs from then on
        # (ClassicGroupMember.hasSatisfiedHeartbeat; real: storm_crashloop generation 3 holds sc-m1-r02, killed
        # 8 s before it, after it had rejoined).
        now = self.sched.now_ms
        blocked = [t for t in (_cannot_rejoin_until(m) for m in g.members.values()
                               if not _rejoined_then_died(m)) if t is not None and t >= now]
        if blocked:
            g.join_deadline = None
            self._schedule_join_completion(g, min(blocked) + 1)
            return
        g.join_deadline = None
        g.generation += 1
        g.current_state_timestamp = now
        if not g.members:
            g.state = "EMPTY"
            g.protocol = g.leader = None
            self._append(g.group_id, [new_empty_group_metadata(
                g.group_id, generation=g.generation, protocol_type=g.protocol_type, current_state_timestamp=now)])
            g.persisted = _classic_persisted(g)
            self._notify(g.group_id, "empty")
            return
        g.state = "COMPLETING_REBALANCE"
        g.protocol_type = "consumer"
        for m in g.members.values():
            if _rejoined_then_died(m):
                m.client.reset_session(m.member_id, now + m.session_timeout)
        g.protocol = g.strategy
        if g.leader is None:
            g.leader = next(iter(g.members))  # the first member added to an empty group leads
        elif g.leader not in g.members:
            # A leader that left is succeeded by the first member in the broker's member-map order.
            g.leader = java_hashmap_order(g.members)[0]
        # The leader's SyncGroup arrives a few ms later (assignment computed client side).
        gen_now = g.generation
        self.sched.after(self.rng.randint(2, 15), lambda: self._sync(g, gen_now))

    def _sync(self, g: ClassicGroupSim, gen: int) -> None:
        if self.groups.get(g.group_id) is not g or g.state != "COMPLETING_REBALANCE" or g.generation != gen:
            return  # a join arrived meanwhile: the sync for this generation failed
        leader = g.members.get(g.leader)
        if leader is not None and _rejoined_then_died(leader):
            # A dead leader sends no assignment: the generation stabilised but is never written, and the group
            # waits in CompletingRebalance until the dead members' sessions expire (real: storm_crashloop's
            # generations 7 and 8, in the broker's log but not in __consumer_offsets).
            return
        strategy = g.strategy
        subs = {mid: m.topics for mid, m in g.members.items()}
        counts = {t: self.topics[t].partitions for m in g.members.values() for t in m.topics if t in self.topics}
        sticky = strategy in ("sticky", "cooperative-sticky")
        owned = {mid: list(m.owned) for mid, m in g.members.items()} if sticky else None
        gens = {mid: m.owned_generation for mid, m in g.members.items()} if sticky else None
        revoked: list[TP] = []
        if strategy == "cooperative-sticky":
            result = cooperative_sticky_assign(subs, counts, owned=owned, generations=gens)
            assignment, revoked = result.assignment, result.revoked
        else:
            assignment = assign(strategy, subs, counts, owned=owned, generations=gens,
                                instance_ids={mid: m.instance_id for mid, m in g.members.items()})
        for mid, m in g.members.items():
            m.assignment = tuple(sorted(assignment.get(mid, ())))
            m.subscription, m.assignment_blob = _classic_blobs(m, strategy)
        g.state = "STABLE"
        self._write_classic(g)
        for m in g.members.values():  # what each member will report owning when it next joins
            m.owned, m.owned_generation = m.assignment, g.generation
        for mid, m in list(g.members.items()):
            if m.client is not None:
                m.client.on_assignment(mid, g.generation, m.assignment)
        if revoked:
            # Cooperative: members that gave partitions up rejoin at once for the follow-up rebalance.
            self.sched.after(self.rng.randint(200, 1000), lambda: self._cooperative_follow_up(g, gen))
        self._notify(g.group_id, "stable")

    def _cooperative_follow_up(self, g: ClassicGroupSim, gen: int) -> None:
        if self.groups.get(g.group_id) is g and g.state == "STABLE" and g.generation == gen:
            self._prepare_rebalance(g)

    def _write_classic(self, g: ClassicGroupSim) -> None:
        order = java_hashmap_order(g.members)
        members = [new_classic_member(mid, client_id=g.members[mid].client_id, client_host=g.members[mid].host,
                                      group_instance_id=g.members[mid].instance_id,
                                      session_timeout=g.members[mid].session_timeout,
                                      rebalance_timeout=g.members[mid].rebalance_timeout,
                                      subscription=g.members[mid].subscription,
                                      assignment=g.members[mid].assignment_blob) for mid in order]
        self._append(g.group_id, [new_group_metadata(
            g.group_id, generation=g.generation, protocol_type=g.protocol_type, protocol=g.protocol,
            leader=g.leader, members=members, current_state_timestamp=g.current_state_timestamp)])
        g.persisted = _classic_persisted(g)

    def classic_leave(self, group: str, member_id: str) -> None:
        """LeaveGroup (or session expiry / removal): the member goes, a rebalance starts."""
        g = self.groups.get(group)
        if not isinstance(g, ClassicGroupSim) or member_id not in g.members:
            return
        del g.members[member_id]
        if g.state == "PREPARING_REBALANCE":
            if not g.members:
                g.join_deadline = None
                self._schedule_join_completion(g, self.sched.now_ms)
            return
        self._prepare_rebalance(g)

    def classic_metadata_changed(self, group: str) -> None:
        """The leader saw a subscribed topic's partition count change: it rejoins, forcing a rebalance."""
        g = self.groups.get(group)
        if isinstance(g, ClassicGroupSim) and g.state == "STABLE":
            self._prepare_rebalance(g)

    # ---- KIP-848 consumer groups -------------------------------------------------------------------------------

    def _subscription_metadata(self, g: ConsumerGroupSim) -> dict[str, int]:
        topics = {t for m in g.members.values() for t in m.topics if t in self.topics}
        return {t: self.topics[t].partitions for t in sorted(topics)}

    def _partition_metadata_record(self, g: ConsumerGroupSim, meta: dict[str, int]) -> CoordinatorRecord:
        return new_consumer_group_partition_metadata(
            g.group_id, [(self.topics[t].topic_id, t, n) for t, n in meta.items()])

    def _ids(self, tps: Iterable[TP]) -> dict:
        out: dict = {}
        for t, p in sorted(tps):
            out.setdefault(self.topics[t].topic_id, []).append(p)
        return out

    def consumer_join(self, group: str, client, *, client_id: str, topics: Iterable[str],
                      server_assignor: str | None = None, rebalance_timeout: int = 300000,
                      instance_id: str | None = None, host: str = "/127.0.0.1") -> str:
        """ConsumerGroupHeartbeat with member epoch 0: records 5, [4], 3, 7*, 6, 8 in one batch."""
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = ConsumerGroupSim(group)
        elif not isinstance(g, ConsumerGroupSim):
            raise ValueError(f"group {group} is a classic group")
        member_id = kip848_member_id(self.rng)
        m = g.members[member_id] = ConsumerMemberSim(member_id, client_id, instance_id, host, tuple(sorted(topics)),
                                                     rebalance_timeout, server_assignor, client=client)
        records: list = [new_consumer_group_member(group, member_id, client_id=client_id, client_host=host,
                                                   subscribed_topic_names=m.topics, subscribed_topic_regex="",
                                                   instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout,
                                                   server_assignor=server_assignor)]
        self._bump_epoch(g, records)
        self._update_target(g, records)
        self._reconcile(g, m, records)
        self._append(group, records)
        return member_id

    def _bump_epoch(self, g: ConsumerGroupSim, records: list) -> None:
        meta = self._subscription_metadata(g)
        if meta != g.subscription_metadata or not g.has_partition_metadata:
            records.append(self._partition_metadata_record(g, meta))
            g.subscription_metadata = meta
            g.has_partition_metadata = True
        g.group_epoch += 1
        records.append(new_consumer_group_epoch(g.group_id, g.group_epoch))

    def consumer_heartbeat(self, group: str, member_id: str, *, acknowledged: bool = True) -> ConsumerMemberSim | None:
        """A regular heartbeat: metadata refresh, pending target assignment, then this member's reconciliation."""
        g = self.groups.get(group)
        if not isinstance(g, ConsumerGroupSim) or member_id not in g.members:
            return None
        m = g.members[member_id]
        records: list = []
        if self._subscription_metadata(g) != g.subscription_metadata:
            self._bump_epoch(g, records)  # partitions added: 4 and 3
        self._update_target(g, records)
        self._reconcile(g, m, records, acknowledged)
        if records:
            self._append(group, records)
        return m

    def consumer_leave(self, group: str, member_id: str) -> None:
        """Leave (epoch -1) or session expiry: tombstones 8, 7, 5, then [4] and 3."""
        g = self.groups.get(group)
        if not isinstance(g, ConsumerGroupSim) or member_id not in g.members:
            return
        del g.members[member_id]
        g.target.pop(member_id, None)
        records: list = [new_current_assignment_tombstone(group, member_id),
                         new_target_assignment_member_tombstone(group, member_id),
                         new_consumer_group_member_tombstone(group, member_id)]
        self._bump_epoch(g, records)
        self._append(group, records)
        if not g.members:
            self._notify(group, "empty")

    def _update_target(self, g: ConsumerGroupSim, records: list) -> None:
        """``updateTargetAssignment`` when the group epoch is ahead: 7 per changed member, then 6."""
        if g.group_epoch <= g.assignment_epoch or not g.members:
            return
        assignor = next((m.server_assignor for m in g.members.values() if m.server_assignor),
                        self.config.default_server_assignor)
        new = _server_assign(assignor, {mid: m.topics for mid, m in g.members.items()}, g.subscription_metadata,
                             g.target)
        for mid in g.members:
            tgt = new.get(mid, frozenset())
            if g.target.get(mid) != tgt:
                g.target[mid] = tgt
                records.append(new_target_assignment_member(g.group_id, mid, self._ids(tgt)))
        g.assignment_epoch = g.group_epoch
        records.append(new_target_assignment_epoch(g.group_id, g.assignment_epoch))

    def _reconcile(self, g: ConsumerGroupSim, m: ConsumerMemberSim, records: list, acknowledged: bool = True) -> None:
        """``CurrentAssignmentBuilder``: revoke first (UNREVOKED_PARTITIONS, same epoch), then move to the
        target epoch with the partitions nobody else still owns (UNRELEASED_PARTITIONS until they are free)."""
        target = g.target.get(m.member_id, frozenset())
        epoch = g.assignment_epoch
        old = (m.member_epoch, m.state, m.assigned, m.pending)
        if m.state == MemberState.UNREVOKED_PARTITIONS:
            if not acknowledged:
                return
            m.pending = frozenset()  # the member confirmed it gave the partitions up
        if m.member_epoch == epoch and m.state == MemberState.STABLE and m.assigned == target:
            return
        keep = m.assigned & target
        revoke = m.assigned - target
        if revoke and m.state != MemberState.UNREVOKED_PARTITIONS:
            new_epoch, state, assigned, pending = m.member_epoch, MemberState.UNREVOKED_PARTITIONS, keep, revoke
        else:
            owned_elsewhere = set()
            for other in g.members.values():
                if other is not m:
                    owned_elsewhere.update(other.assigned)
                    owned_elsewhere.update(other.pending)
            wanted = target - keep
            free = frozenset(tp for tp in wanted if tp not in owned_elsewhere)
            new_epoch, assigned, pending = epoch, keep | free, frozenset()
            state = MemberState.STABLE if free == wanted else MemberState.UNRELEASED_PARTITIONS
        if (new_epoch, state, assigned, pending) == old:
            return
        m.previous_epoch, m.member_epoch, m.state, m.assigned, m.pending = m.member_epoch, new_epoch, state, \
            assigned, pending
        records.append(new_current_assignment(g.group_id, m.member_id, member_epoch=m.member_epoch,
                                              previous_member_epoch=m.previous_epoch, state=m.state,
                                              assigned=self._ids(m.assigned),
                                              pending_revocation=self._ids(m.pending)))


def _classic_blobs(m: ClassicMemberSim, strategy: str) -> tuple[bytes, bytes]:
    """librdkafka's subscription (v3) and assignment (v0) blobs, as the kafka-4.0 captures show them.

    Eager assignors: no owned partitions, generation -1, empty (not null) user data, rack "". cooperative-sticky:
    owned partitions and the generation they were owned in, plus the sticky user data (owned + generation) once
    the member had a generation; librdkafka's leader echoes that user data into the member's assignment.
    """
    user_data = b""
    owned = None
    generation = -1
    if strategy in ("sticky", "cooperative-sticky") and m.owned_generation >= 0:
        user_data = _sticky_user_data(_by_topic(m.owned), m.owned_generation)
    if strategy == "cooperative-sticky":
        owned = _by_topic(m.owned)
        generation = m.owned_generation
    sub = new_consumer_subscription(m.topics, owned_partitions=owned, generation_id=generation, rack_id="",
                                    user_data=user_data)
    asg = new_consumer_assignment(_by_topic(m.assignment), user_data=user_data if strategy == "cooperative-sticky"
                                  else b"", version=0)
    return sub, asg


def _classic_persisted(g: ClassicGroupSim) -> dict:
    """The group as Kafka's loader rebuilds it from the record just written."""
    return {
        "state": "STABLE" if g.members and g.state == "STABLE" else "EMPTY",
        "generation": g.generation,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol if g.members else None,
        "leader": g.leader if g.members else None,
        "members": {mid: {"client_id": m.client_id, "host": m.host, "group_instance_id": m.instance_id,
                          "assignment": sorted(m.assignment)} for mid, m in g.members.items()}
        if g.state == "STABLE" else {},
    }


def _server_assign(assignor: str, subs: Mapping[str, tuple[str, ...]], counts: Mapping[str, int],
                   current: Mapping[str, frozenset[TP]]) -> dict[str, frozenset[TP]]:
    """The broker-side assignors: ``range`` (per topic, contiguous, members by id) and ``uniform`` (balanced and
    sticky: members keep what they had up to their quota; the rest goes to the least loaded subscriber)."""
    members = sorted(subs)
    out: dict[str, set[TP]] = {m: set() for m in members}
    if assignor == "range":
        for topic in sorted(counts):
            subscribers = [m for m in members if topic in subs[m]]
            if not subscribers:
                continue
            base, extra = divmod(counts[topic], len(subscribers))
            start = 0
            for i, m in enumerate(subscribers):
                size = base + (1 if i < extra else 0)
                out[m].update((topic, p) for p in range(start, start + size))
                start += size
        return {m: frozenset(v) for m, v in out.items()}
    partitions = [(t, p) for t in sorted(counts) for p in range(counts[t]) if any(t in subs[m] for m in members)]
    total = len(partitions)
    base, extra = divmod(total, len(members)) if members else (0, 0)
    taken: set[TP] = set()
    # keep: up to the quota, the first `extra` members in id order may keep one more
    extras = extra
    for m in members:
        mine = sorted(tp for tp in current.get(m, ()) if tp[0] in subs[m] and tp[1] < counts.get(tp[0], 0))
        quota = base + (1 if extras > 0 and len(mine) > base else 0)
        if quota > base:
            extras -= 1
        for tp in mine[:quota]:
            out[m].add(tp)
            taken.add(tp)
    for tp in partitions:
        if tp in taken:
            continue
        eligible = [m for m in members if tp[0] in subs[m]]
        if eligible:
            best = min(eligible, key=lambda m: (len(out[m]), m))
            out[best].add(tp)
    return {m: frozenset(v) for m, v in out.items()}


def _rejoined_then_died(m: ClassicMemberSim) -> bool:
    """The member's process died (no LeaveGroup) after it had rejoined the current join phase."""
    died = getattr(m.client, "died_at", lambda _mid: None)(m.member_id)
    return died is not None and died >= m.rejoin_at


def _cannot_rejoin_until(m: ClassicMemberSim) -> int | None:
    """When a member that will not rejoin the current join phase is removed (None: it rejoins normally)."""
    fn = getattr(m.client, "cannot_rejoin_until", None)
    if fn is not None:
        return fn(m.member_id)
    return getattr(m.client, "stalled_until_leave", None)
