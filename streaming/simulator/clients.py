"""Simulated consumer clients: how real consumers poll, commit, heartbeat, stall, crash and restart.

The behaviour follows librdkafka (the clients of the kafka-4.0 captures) and Kafka's client rules:

* consumption: each member processes up to ``capacity`` messages per second spread over its partitions and never
  past the log end; a new partition starts at the group's committed offset, else at ``auto.offset.reset``;
* ``commit="auto"``: ``enable.auto.commit`` — every ``auto.commit.interval.ms`` (5 s) the stored positions of
  partitions that moved since the last commit, with the fetched records' leader epoch; also on revocation and close;
* ``commit="changed"``: the application calls librdkafka's ``commit()`` without offsets every
  ``commit_interval_ms`` (1 s): librdkafka commits the stored positions of the partitions that moved since its last
  commit, with their leader epoch, and sends no OffsetCommit at all when none moved (``_NO_OFFSET``); also on
  revocation and before close. This is what every client of the verdict recordings does
  (``shared/conformance/verdicts``: one OffsetCommit per member per second, leader epoch 0, empty metadata;
  ``idle_then_stop``'s id-quiet wrote no commit at all during 120 s of idle topic);
* ``commit="sync"`` / ``"async"``: the application commits explicit offsets of every assigned partition (leader
  epoch -1, its own metadata) after each processed batch (``commit_interval_ms``), unchanged ones included (like
  ``idle_then_stop``'s id-chatty, which re-committed the same offsets every 5 s while idle); async commits reach
  the broker a few ms later;
* a stalled application (stops polling) commits nothing; its heartbeat thread keeps it in the group until
  ``max.poll.interval.ms`` passes, then the client leaves the group itself;
* a crash (SIGKILL, ``os._exit``) stops everything: no commit, no LeaveGroup. The member stays in the group as a
  *ghost* until ``session.timeout.ms`` passes without a heartbeat, and a classic join phase waits for it to rejoin
  until then (see :meth:`SimConsumer.cannot_rejoin_until`; ``storm_crashloop``: rebalances every ~14 s, 16 members
  removed on session expiry). A graceful close commits (auto / changed / sync), then leaves — except a static
  member (``group.instance.id``), which does not send LeaveGroup and is expired (or replaced when it restarts in
  time);
* KIP-848 members heartbeat every ``group.consumer.heartbeat.interval.ms`` and acknowledge a revocation with an
  immediate heartbeat once the partitions are given up.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Protocol

from protocol.records import MemberState

from .clock import Scheduler
from .coordinator import CommitRejected, Coordinator
from .topics import Topic

__all__ = ["ConsumerConfig", "SimConsumer", "SimpleConsumer", "TransactionalApp", "COMMIT_MODES", "Simulation"]


class Simulation(Protocol):
    """What a client needs of the simulation it runs in (``simulation.Simulation`` provides it). A protocol rather
    than an import, so the clients do not depend on the module that builds the scenarios out of them."""

    coordinator: Coordinator
    rng: random.Random
    sched: Scheduler
    topics: dict[str, Topic]

    def next_producer_id(self) -> int: ...

COMMIT_MODES = ("auto", "changed", "sync", "async", "none")
_STORED = ("auto", "changed")  # commits of librdkafka's stored positions: changed partitions only, leader epoch
TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """One consumer process: librdkafka settings (Kafka names in comments) and application behaviour."""

    group: str
    client_id: str
    topics: tuple[str, ...]
    protocol: str = "classic"  # group.protocol: classic | consumer (KIP-848)
    assignor: str | None = "range"  # classic: partition.assignment.strategy; consumer: group.remote.assignor
    instance_id: str | None = None  # group.instance.id
    commit: str = "auto"  # auto | changed | sync | async | none
    auto_commit_interval_ms: int = 5000  # auto.commit.interval.ms
    commit_interval_ms: int = 1000  # the application's commit() (changed) / commit(offsets) (sync, async) cadence
    metadata: str = ""
    capacity: float = 1000.0  # messages per second the application processes
    session_timeout_ms: int = 45000  # session.timeout.ms (classic)
    heartbeat_interval_ms: int = 3000  # heartbeat.interval.ms (classic)
    max_poll_interval_ms: int = 300000  # max.poll.interval.ms (also the classic rebalance timeout)
    auto_offset_reset: str = "latest"  # auto.offset.reset: latest | earliest
    leader_epoch: int = 0  # the consumed partitions' leader epoch (single broker that never failed over: 0)

    def __post_init__(self) -> None:
        if self.protocol not in ("classic", "consumer"):
            raise ValueError(f"protocol must be classic or consumer, got {self.protocol!r}")
        if self.commit not in COMMIT_MODES:
            raise ValueError(f"commit must be one of {', '.join(COMMIT_MODES)}, got {self.commit!r}")
        if self.auto_offset_reset not in ("latest", "earliest"):
            raise ValueError(f"auto_offset_reset must be latest or earliest, got {self.auto_offset_reset!r}")


class SimConsumer:
    """A consumer process in a group. ``start`` joins; ``stall``, ``resume``, ``close``, ``crash`` change it."""

    def __init__(self, sim: Simulation, config: ConsumerConfig) -> None:
        self.sim = sim
        self.config = config
        self.coord: Coordinator = sim.coordinator
        self.rng: random.Random = sim.rng
        self.member_id: str | None = None
        self.generation = -1
        self.assigned: tuple[TP, ...] = ()
        self.positions: dict[TP, float] = {}
        self.committed: dict[TP, int] = {}  # what this client last committed (auto-commit skips unchanged)
        self.alive = False
        self.stalled = False
        self.paused = False  # eager rebalance in progress: nothing is fetched
        self.held: frozenset[TP] = frozenset()  # partitions the application paused: no progress, still committed
        self.stalled_until_leave: int | None = None
        self.in_group = False
        self._last_ms = sim.sched.now_ms
        self._session = 0  # bumps on every (re)start so stale timers of an old life do nothing
        # member ids of earlier lives that died without leaving -> when the coordinator expires them
        self.ghosts: dict[str, int] = {}  # member id of a dead life -> when its session expires
        self.deaths: dict[str, int] = {}  # member id of a dead life -> when it died
        # called once per life with the first non-empty assignment (scenarios: "lifetime after first assignment")
        self.on_first_assignment = None
        self._assigned_once = False

    @property
    def heartbeat_interval_ms(self) -> int:
        return self.config.heartbeat_interval_ms

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        c = self.config
        self._session += 1
        life = self._session
        self.alive, self.stalled, self.paused, self.stalled_until_leave = True, False, False, None
        self._last_ms = self.sim.sched.now_ms
        self.assigned, self.positions, self.committed = (), {}, {}
        self._assigned_once = False
        if c.protocol == "classic":
            self.member_id = self.coord.classic_join(
                c.group, self, strategy=c.assignor or "range", client_id=c.client_id, topics=c.topics,
                instance_id=c.instance_id, session_timeout=c.session_timeout_ms,
                rebalance_timeout=c.max_poll_interval_ms)
            self.in_group = True
        else:
            self.member_id = self.coord.consumer_join(
                c.group, self, client_id=c.client_id, topics=c.topics, server_assignor=c.assignor,
                rebalance_timeout=c.max_poll_interval_ms, instance_id=c.instance_id)
            self.in_group = True
            self.generation = -1
            self._after_heartbeat(self.coord.groups[c.group].members[self.member_id])
            hb = self.coord.config.consumer_heartbeat_interval_ms
            self.sim.sched.after(self.rng.randint(hb // 2, hb), lambda: self._heartbeat(life))
        self._log("member_start", member_id=self.member_id)
        if c.commit == "auto":
            self.sim.sched.after(c.auto_commit_interval_ms, lambda: self._auto_commit(life))
        elif c.commit in ("changed", "sync", "async"):
            self.sim.sched.after(c.commit_interval_ms, lambda: self._manual_commit(life))

    def _log(self, event: str, **detail) -> None:
        log = getattr(self.sim, "client_events", None)
        if log is not None:
            log.append({"t_ms": self.sim.sched.now_ms, "group": self.config.group, "client_id": self.config.client_id,
                        "event": event, **detail})

    def cannot_rejoin_until(self, member_id: str) -> int | None:
        """When ``member_id`` of this client leaves a classic join phase it cannot take part in: the session expiry
        of a ghost (a life that died without LeaveGroup), or the max.poll.interval.ms leave of a stalled
        application. None: the member rejoins at its next heartbeat."""
        if member_id in self.ghosts:
            return self.ghosts[member_id]
        if member_id == self.member_id and self.alive and self.stalled_until_leave is not None:
            return self.stalled_until_leave
        return None

    def died_at(self, member_id: str) -> int | None:
        """When the life that held ``member_id`` died without leaving (None: it did not, or it has expired)."""
        return self.deaths.get(member_id) if member_id in self.ghosts else None

    def reset_session(self, member_id: str, expires_ms: int) -> None:
        """Classic: a dead member carried into a generation gets a new session from the join's completion."""
        if member_id in self.ghosts:
            self.ghosts[member_id] = expires_ms
            self.sim.sched.at(expires_ms, lambda: self._expire_classic(member_id, expires_ms))

    def stall(self) -> None:
        """The application stops calling poll(); the client leaves after ``max.poll.interval.ms``."""
        if not self.alive or self.stalled:
            return
        self._progress()
        self.stalled = True
        life = self._session
        self.stalled_until_leave = self.sim.sched.now_ms + self.config.max_poll_interval_ms
        self.sim.sched.at(self.stalled_until_leave, lambda: self._max_poll_exceeded(life))

    def hold_partitions(self) -> None:
        """The application pauses its assigned partitions (``consumer.pause``) but keeps polling and committing:
        it stays in the group and commits the same offsets again and again while the lag grows (a STALL)."""
        self._progress()
        self.held = frozenset(self.assigned)

    def release_partitions(self) -> None:
        """``consumer.resume`` of the held partitions: progress goes on from where it stopped."""
        self._progress()
        self.held = frozenset()

    def resume(self) -> None:
        """The application polls again: a client that left on max.poll.interval rejoins as a new member."""
        if not self.alive or not self.stalled:
            return
        self._last_ms = self.sim.sched.now_ms
        self.stalled, self.stalled_until_leave = False, None
        if not self.in_group:
            self.start()

    def close(self) -> None:
        """Graceful close: final commit (auto-commit, commit(), sync), then LeaveGroup (static members do not
        leave)."""
        if not self.alive:
            return
        if self.config.commit in ("auto", "changed", "sync") and not self.stalled:
            self._commit(self.config.commit in _STORED)
        self.alive = False
        self._log("member_exit", how="close", member_id=self.member_id)
        self._leave(graceful=True)

    def crash(self) -> None:
        """The process dies (SIGKILL, crash): no commit, no leave; the coordinator expires it after the session
        timeout, and until then it is a ghost member that holds its partitions (and a classic join phase)."""
        if not self.alive:
            return
        self._progress()
        self.alive = False
        self._log("member_exit", how="crash", member_id=self.member_id)
        self._leave(graceful=False)

    def _leave(self, graceful: bool) -> None:
        c = self.config
        mid = self.member_id
        self.in_group = False
        if mid is None:
            return
        if c.protocol == "classic":
            if graceful and c.instance_id is None:
                self.coord.classic_leave(c.group, mid)
            else:
                # The session runs from the last heartbeat (up to one interval before the death).
                timeout = c.session_timeout_ms - self.rng.randint(0, c.heartbeat_interval_ms)
                expires = self.ghosts[mid] = self.sim.sched.now_ms + timeout
                self.deaths[mid] = self.sim.sched.now_ms
                self.sim.sched.at(expires, lambda: self._expire_classic(mid, expires))
        else:
            if graceful:
                self.coord.consumer_leave(c.group, mid)
            else:
                # KIP-848: the broker fences the member after group.consumer.session.timeout.ms (45 s); until then
                # it keeps its partitions (kip848_storm_and_rolling: 8 SIGKILLed flappers, each a member for 45 s).
                timeout = self.coord.config.consumer_session_timeout_ms
                self.ghosts[mid] = self.sim.sched.now_ms + timeout
                self.sim.sched.after(timeout, lambda: self._expire_consumer(mid))

    def _expire_classic(self, member_id: str, expires_ms: int) -> None:
        if self.ghosts.get(member_id) != expires_ms:
            return  # its session was renewed when a generation carried it (reset_session)
        self.ghosts.pop(member_id, None)
        self.deaths.pop(member_id, None)
        g = self.coord.groups.get(self.config.group)
        m = None if g is None else g.members.get(member_id)
        if m is not None and m.client is self and (member_id != self.member_id or not self.alive):
            self.coord.classic_leave(self.config.group, member_id)  # session expired

    def _expire_consumer(self, member_id: str) -> None:
        self.ghosts.pop(member_id, None)
        self.coord.consumer_leave(self.config.group, member_id)

    def _max_poll_exceeded(self, life: int) -> None:
        if life != self._session or not self.alive or not self.stalled:
            return
        self.stalled_until_leave = None
        c = self.config
        self.in_group = False
        self.assigned, self.positions = (), {}
        if c.protocol == "classic":
            self.coord.classic_leave(c.group, self.member_id)
        else:
            self.coord.consumer_leave(c.group, self.member_id)

    # ---- assignment callbacks (from the coordinator) ---------------------------------------------------------

    def on_rebalance_start(self, now: int) -> None:
        """Classic: the group is rebalancing. Eager assignors revoke everything first (committing as they do)."""
        if not self.alive or self.stalled or self.config.assignor == "cooperative-sticky":
            return
        if self.config.commit in ("auto", "changed", "sync", "async"):
            self._commit(self.config.commit in _STORED)
        self.paused = True

    def on_assignment(self, member_id: str, generation: int, partitions) -> None:
        if not self.alive or member_id in self.ghosts:
            return  # a dead life's member id (this object was restarted): nobody receives that assignment
        self._progress()
        self.member_id, self.generation, self.paused = member_id, generation, False
        self._set_assignment(partitions)
        self._log("assigned", member_id=member_id, generation=generation, partitions=len(self.assigned))

    def _set_assignment(self, partitions) -> None:
        new = tuple(sorted(partitions))
        committed = self.coord.offsets.get(self.config.group, {})
        now = self.sim.sched.now_ms
        positions = {}
        for tp in new:
            if tp in self.positions:
                positions[tp] = self.positions[tp]
            elif tp in committed:
                positions[tp] = float(committed[tp].offset)
                self.committed[tp] = committed[tp].offset
            elif self.config.auto_offset_reset == "earliest":
                positions[tp] = 0.0
            else:
                positions[tp] = float(self.sim.topics[tp[0]].end_offset(tp[1], now))
        self.assigned, self.positions = new, positions
        if new and not self._assigned_once:
            self._assigned_once = True
            if self.on_first_assignment is not None:
                self.on_first_assignment(self)

    # ---- KIP-848 heartbeats ------------------------------------------------------------------------------------

    def _heartbeat(self, life: int, regular: bool = True) -> None:
        if life != self._session or not self.alive or not self.in_group:
            return
        self._progress()
        m = self.coord.consumer_heartbeat(self.config.group, self.member_id)
        if m is not None:
            self._after_heartbeat(m)
        if regular:
            self.sim.sched.after(self.coord.config.consumer_heartbeat_interval_ms, lambda: self._heartbeat(life))

    def _after_heartbeat(self, m) -> None:
        self.generation = m.member_epoch
        before = self.assigned
        self._set_assignment(m.assigned | m.pending)
        if self.assigned != before:
            self._log("assigned", member_id=self.member_id, generation=m.member_epoch, partitions=len(self.assigned))
        if m.state == MemberState.UNREVOKED_PARTITIONS:
            # Revoke (committing first when auto-commit / commit() is on), then acknowledge with an immediate
            # heartbeat.
            if self.config.commit in _STORED and not self.stalled:
                self._commit(True)
            life = self._session
            self.sim.sched.after(self.rng.randint(8, 20), lambda: self._heartbeat(life, regular=False))

    # ---- consumption and commits -------------------------------------------------------------------------------

    def _progress(self) -> None:
        now = self.sim.sched.now_ms
        dt = now - self._last_ms
        self._last_ms = now
        if dt <= 0 or not self.alive or self.stalled or self.paused or not self.positions:
            return
        budget = self.config.capacity * dt / 1000.0 / len(self.positions)
        topics = self.sim.topics
        for tp, pos in self.positions.items():
            if tp in self.held:
                continue
            end = topics[tp[0]].end_offset(tp[1], now)
            if pos < end:
                pos += budget
                self.positions[tp] = end if pos > end else pos

    def _commit(self, auto: bool) -> None:
        """Commits the current positions: auto-commit only partitions that moved, with their leader epoch."""
        self._progress()
        c = self.config
        epoch = c.leader_epoch if auto else -1
        items = []
        for tp, pos in self.positions.items():
            off = int(pos)
            if auto and self.committed.get(tp) == off:
                continue
            items.append((tp[0], tp[1], off, epoch))
        if not items:
            return
        try:
            self.coord.commit_offsets(c.group, items, metadata=c.metadata, member_id=self.member_id,
                                      generation=self.generation)
        except CommitRejected:
            return  # e.g. ILLEGAL_GENERATION during a rebalance: the client logs it and carries on
        for t, p, off, _ in items:
            self.committed[(t, p)] = off

    def _auto_commit(self, life: int) -> None:
        if life != self._session or not self.alive:
            return
        if self.in_group and not self.paused:
            self._commit(True)
        self.sim.sched.after(self.config.auto_commit_interval_ms, lambda: self._auto_commit(life))

    def _manual_commit(self, life: int) -> None:
        if life != self._session or not self.alive:
            return
        if self.in_group and not self.stalled and not self.paused and self.positions:
            if self.config.commit == "changed":
                self._commit(True)  # librdkafka commit(): the moved partitions only, nothing when none moved
            elif self.config.commit == "async":
                self.sim.sched.after(self.rng.randint(1, 20), lambda: self._async_done(life))
            else:
                self._commit(False)
        self.sim.sched.after(self.config.commit_interval_ms, lambda: self._manual_commit(life))

    def _async_done(self, life: int) -> None:
        if life == self._session and self.alive and self.in_group:
            self._commit(False)


class TransactionalApp:
    """A consume-transform-produce application (EOS): offsets go through ``sendOffsetsToTransaction``.

    Every ``interval_ms`` it opens a transaction, sends its positions as a TxnOffsetCommit, and ends it
    ``end_delay_ms`` later with COMMIT, or ABORT every ``abort_every``-th time (then it rewinds to the committed
    offsets, as an EOS application does).
    """

    def __init__(self, sim: Simulation, config: ConsumerConfig, *, interval_ms: int = 2000, end_delay_ms: int = 80,
                 abort_every: int = 3) -> None:
        self.sim = sim
        self.consumer = SimConsumer(sim, replace(config, commit="none"))
        self.producer_id = sim.next_producer_id()
        self.producer_epoch = 0
        self.interval_ms, self.end_delay_ms, self.abort_every = interval_ms, end_delay_ms, abort_every
        self.count = 0
        self.open = False

    def start(self) -> None:
        self.consumer.start()
        self.sim.sched.after(self.interval_ms, self._begin)

    def close(self) -> None:
        self.consumer.close()

    def _begin(self) -> None:
        c = self.consumer
        if not c.alive:
            return
        self.sim.sched.after(self.interval_ms, self._begin)
        if self.open or not c.in_group or not c.positions:
            return
        c._progress()
        items = [(t, p, int(pos), -1) for (t, p), pos in c.positions.items()]
        self.sim.coordinator.txn_commit_offsets(self.producer_id, self.producer_epoch, c.config.group, items)
        self.open = True
        self.sim.sched.after(self.end_delay_ms, self._end)

    def _end(self) -> None:
        self.count += 1
        commit = self.abort_every <= 0 or self.count % self.abort_every != 0
        self.sim.coordinator.end_transaction(self.producer_id, self.producer_epoch, commit)
        self.open = False
        if not commit:
            committed = self.sim.coordinator.offsets.get(self.consumer.config.group, {})
            for tp in list(self.consumer.positions):
                if tp in committed:
                    self.consumer.positions[tp] = float(committed[tp].offset)


class SimpleConsumer:
    """A "simple" consumer: ``assign()``ed partitions, commits with no group membership (generation -1)."""

    def __init__(self, sim: Simulation, group: str, partitions: tuple[TP, ...], *, interval_ms: int = 2000,
                 metadata: str = "", capacity: float = 1000.0) -> None:
        self.sim = sim
        self.group = group
        self.config = ConsumerConfig(group=group, client_id=f"{group}-simple", topics=(), commit="sync",
                                     commit_interval_ms=interval_ms, metadata=metadata, capacity=capacity)
        self.partitions = partitions
        self.positions: dict[TP, float] = {}
        self.alive = False
        self._last = 0

    def start(self) -> None:
        now = self.sim.sched.now_ms
        self.alive, self._last = True, now
        committed = self.sim.coordinator.offsets.get(self.group, {})
        self.positions = {tp: float(committed[tp].offset) if tp in committed else
                          float(self.sim.topics[tp[0]].end_offset(tp[1], now)) for tp in self.partitions}
        self.sim.sched.after(self.config.commit_interval_ms, self._tick)

    def close(self) -> None:
        self.alive = False

    def _tick(self) -> None:
        if not self.alive:
            return
        now = self.sim.sched.now_ms
        budget = self.config.capacity * (now - self._last) / 1000.0 / max(1, len(self.positions))
        self._last = now
        for (t, p), pos in self.positions.items():
            self.positions[(t, p)] = min(float(self.sim.topics[t].end_offset(p, now)), pos + budget)
        try:
            self.sim.coordinator.commit_offsets(
                self.group, [(t, p, int(pos), -1) for (t, p), pos in self.positions.items()],
                metadata=self.config.metadata)
        except CommitRejected:
            pass
        self.sim.sched.after(self.config.commit_interval_ms, self._tick)
