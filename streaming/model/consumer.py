"""KIP-848 consumer groups (record types 3-8 and 16), rebuilt the way ``GroupMetadataManager.replay`` does.

Mirrors ``modern/consumer/ConsumerGroup.java`` and ``ConsumerGroupMember.java``: the group epoch (type 3), the
subscription metadata (type 4, ≤ 4.0), members (type 5), the target assignment (types 6 and 7), each member's
current assignment, epoch and state (type 8) and resolved regular expressions (type 16). The group state is derived
after every change by :func:`states.derive_consumer_group_state` (``maybeUpdateGroupState``). Member records follow
the :data:`states.MODERN_MEMBER` table: Kafka refuses a member-metadata tombstone before the current-assignment one.

A rebalance is a group-epoch bump. Its outcome is known only once the target assignment reaches that epoch (type 6),
so the Rebalance event is emitted then (or at once when the bump empties the group, or when a newer bump arrives
first), comparing membership and target assignment with those of the previous epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from protocol.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupCurrentMemberAssignmentValue_3_7,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMemberMetadataValue_3_7,
    MemberState,
)

from . import events as ev
from ._base import ModernGroup, id_assignment, member_state_name, resolve
from .rebalance import MemberView, infer_causes, movement
from .verdicts import RebalanceJudge
from .state_format import build, fields_of
from .states import (
    MODERN_MEMBER,
    ConsumerGroupState,
    GroupType,
    InconsistentRecord,
    MemberLifecycle,
    MemberTrigger,
    apply,
    derive_consumer_group_state,
)

__all__ = ["ConsumerMember", "ConsumerGroup", "LEAVE_GROUP_MEMBER_EPOCH"]

LEAVE_GROUP_MEMBER_EPOCH = -1
IdAssignment = dict[bytes, tuple[int, ...]]


@dataclass(slots=True)
class ConsumerMember:
    """``ConsumerGroupMember`` with the Java builder's defaults."""

    member_id: str
    lifecycle: MemberLifecycle = MemberLifecycle.ABSENT
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    host: str = ""
    topics: tuple[str, ...] = ()
    regex: str = ""
    rebalance_timeout: int = -1
    server_assignor: str | None = None
    classic_session_timeout: int | None = None  # set for a member that joined with the classic protocol
    classic_protocols: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_epoch: int = -1
    state: int = int(MemberState.STABLE)
    assigned: IdAssignment = field(default_factory=dict)
    pending_revocation: IdAssignment = field(default_factory=dict)
    # Liveness as the log shows it: the time of the member's latest record (its heartbeats write one whenever
    # its epoch or state changes), and the first group-epoch bump after it, which a live member follows within a
    # heartbeat interval (None: it followed every bump so far).
    seen_ms: int = -1
    missed_bump_ms: int | None = None

    def view(self, topics_of_regexes: dict[str, tuple[str, ...]]) -> MemberView:
        topics = set(self.topics)
        if self.regex:
            topics.update(topics_of_regexes.get(self.regex, ()))
        return MemberView(self.member_id, self.instance_id, self.client_id, self.host, frozenset(topics), None)

    @classmethod
    def from_state(cls, state: Mapping) -> "ConsumerMember":
        return build(cls, state, lifecycle=MemberLifecycle(state["lifecycle"]))

    def seen(self, timestamp: int) -> None:
        """The member's heartbeat wrote a record: it is alive at ``timestamp``."""
        self.seen_ms = max(self.seen_ms, timestamp)
        self.missed_bump_ms = None

    def missed_bump(self) -> int | None:
        """The first epoch bump the member has not followed, where following it needs no application (None: it
        followed every one). A consumer-protocol member follows every bump at its next heartbeat (its epoch
        advances, or it is told to revoke: either way a record), whether or not the application polls; only a
        member waiting for its application to revoke partitions (UNREVOKED_PARTITIONS) may rightly stay silent,
        and a member that joined with the classic protocol rejoins from the application's poll. Silent for
        ``silent_after_ms`` after such a bump, a member has stopped heartbeating: killed, crashed, or cut off, and
        gone once its session expires."""
        if self.state == int(MemberState.UNREVOKED_PARTITIONS) or self.classic_session_timeout is not None:
            return None
        return self.missed_bump_ms


@dataclass(slots=True)
class ConsumerGroup(ModernGroup):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, IdAssignment] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # name -> (id, partitions)
    regexes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    state: ConsumerGroupState = ConsumerGroupState.EMPTY
    rebalances: int = 0
    last_rebalance_ts: int | None = None
    # the membership / target / partition counts at the last finalised epoch, and an epoch bump awaiting its target
    epoch_views: dict[str, MemberView] | None = None
    epoch_target: dict[str, IdAssignment] = field(default_factory=dict)
    epoch_partitions: dict[str, int] = field(default_factory=dict)
    epoch_ts: int | None = None
    pending_epoch: tuple[int, int, int, int] | None = None  # (new epoch, previous epoch, offset, timestamp)
    # the membership when the pending epoch's record was replayed: Kafka writes a bump's member records before
    # its epoch record, so this is exactly the epoch's membership, whatever records follow before it is finalised
    pending_views: dict[str, MemberView] | None = None
    # (instance id, member id) of a static member whose metadata tombstone was the last member change with no
    # epoch bump since: a new member with that instance id next is the same member restarted (see replay_member)
    departed_static: tuple[str, str] | None = None
    # members removed since the last finalised epoch -> the first bump each had not followed (their session
    # expired after they went silent): judged with the rebalance that removes them
    departed_silent: dict[str, int] = field(default_factory=dict)
    # when a member that missed an epoch bump will have been silent for the judge's silent_after_ms (None: no such
    # member): the shard's heartbeat tick then tells the judge (check_silence)
    silence_due_ms: int | None = None

    group_type = GroupType.CONSUMER

    @property
    def state_name(self) -> str:
        return self.state.value

    # ---- derived state -------------------------------------------------------------------------------------

    def update_state(self, offset: int, timestamp: int, out: list) -> None:
        """Recomputes the state (``maybeUpdateGroupState``) and reports a change."""
        new = derive_consumer_group_state(
            len(self.members), self.group_epoch, self.assignment_epoch,
            ((m.member_epoch, m.state) for m in self.members.values()))
        if new != self.state:
            out.append(ev.GroupStateChanged(self.group_id, offset, timestamp, GroupType.CONSUMER, self.state.value,
                                            new.value))
            self.state = new

    def _member(self, member_id: str) -> ConsumerMember:
        m = self.members.get(member_id)
        if m is None:
            m = self.members[member_id] = ConsumerMember(member_id)
        return m

    # ---- replay, one method per record type -----------------------------------------------------------------

    def replay_epoch(self, epoch: int, metadata_hash: int, offset: int, timestamp: int, judge: RebalanceJudge,
                     out: list) -> None:
        """Type 3 value: a new group epoch."""
        old = self.group_epoch
        self.group_epoch = epoch
        self.metadata_hash = metadata_hash
        if epoch != old:
            self.departed_static = None  # a removal that bumps the epoch is a departure, not a replacement
            for m in self.members.values():
                # The bump's own member records come first, at the same time: those members are not behind.
                if m.missed_bump_ms is None and m.seen_ms < timestamp:
                    m.missed_bump_ms = timestamp
                    due = timestamp + judge.config.silent_after_ms
                    self.silence_due_ms = due if self.silence_due_ms is None else min(self.silence_due_ms, due)
            if self.pending_epoch is not None:
                self._finalise(judge, out)
            self.pending_epoch = (epoch, old, offset, timestamp)
            self.pending_views = self._views()
            if not self.members:
                self._finalise(judge, out)
        self.update_state(offset, timestamp, out)

    def missed_bumps(self) -> dict[str, int]:
        """Present member id -> the first epoch bump it has not followed (:meth:`ConsumerMember.missed_bump`), for
        the members that missed one."""
        return {k: since for k, m in self.members.items() if (since := m.missed_bump()) is not None}

    def silent_members(self, now_ms: int, silent_after_ms: int) -> dict[str, int]:
        """The members that missed an epoch bump at least ``silent_after_ms`` ago (:meth:`missed_bumps`)."""
        return {k: now_ms - since for k, since in self.missed_bumps().items() if now_ms - since >= silent_after_ms}

    def check_silence(self, now_ms: int, judge: RebalanceJudge, out: list) -> None:
        """Tells the judge of the members silent for ``silent_after_ms`` by ``now_ms`` (see
        :meth:`RebalanceJudge.silence`); called from the heartbeat tick once :attr:`silence_due_ms` has come."""
        if self.silence_due_ms is None or now_ms < self.silence_due_ms:
            return
        after = judge.config.silent_after_ms
        missed = self.missed_bumps()
        silent = {k: since for k, since in missed.items() if since + after <= now_ms}
        later = [since + after for since in missed.values() if since + after > now_ms]
        self.silence_due_ms = min(later) if later else None
        if silent:
            out.extend(judge.silence(self.group_id, silent))

    def replay_partition_metadata(self, topics, offset: int, timestamp: int) -> None:
        """Type 4: the subscribed topics' ids and partition counts (tombstone = empty)."""
        self.subscription_metadata = {t.topic_name: (t.topic_id, t.num_partitions) for t in topics}

    def replay_member(self, member_id: str, value, offset: int, timestamp: int, judge: RebalanceJudge,
                      out: list) -> None:
        """Type 5: member metadata, or its tombstone (member removed).

        A static member (``group.instance.id``) that left with epoch -2 and comes back under a new member id
        before its session expires is replaced in place: Kafka writes the old member's three tombstones, then the
        new member's metadata, target and current assignment, and bumps no epoch (``replaceMember``). That pair,
        tombstone then a new member of the same instance id with no epoch record between, is one member
        restarted: it is reported as such and the new id takes the old one's place in the epoch's membership, so
        the next rebalance does not count it as a departure and a join.

        Raises:
            InvalidTransition: a member-metadata tombstone before the current-assignment tombstone.
            InconsistentRecord: a member removed while still in the target assignment.
        """
        gid = self.group_id
        if value is None:
            m = self.members.get(member_id)
            if m is None:
                return  # Kafka ignores a tombstone for an unknown member
            apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.METADATA_TOMBSTONE)
            if member_id in self.target:
                raise InconsistentRecord(f"group {gid}: member {member_id} deleted but still in the target "
                                         "assignment (type-7 tombstone missing)")
            del self.members[member_id]
            if (missed := m.missed_bump()) is not None:
                self.departed_silent[member_id] = missed
            self.departed_static = None if m.instance_id is None else (m.instance_id, member_id)
            out.append(ev.MemberLeft(gid, offset, timestamp, member_id, m.client_id, m.instance_id))
            self.update_state(offset, timestamp, out)
            return
        m = self.members.get(member_id)
        created = m is None
        if created:
            m = self.members[member_id] = ConsumerMember(member_id)
        m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.METADATA)
        m.seen(timestamp)
        m.instance_id = value.instance_id
        m.rack_id = value.rack_id
        m.client_id = value.client_id
        m.host = value.client_host
        m.topics = tuple(value.subscribed_topic_names)
        m.regex = value.subscribed_topic_regex or ""
        m.rebalance_timeout = value.rebalance_timeout_ms
        m.server_assignor = value.server_assignor
        if isinstance(value, ConsumerGroupMemberMetadataValue) and value.classic_member_metadata is not None:
            cm = value.classic_member_metadata
            m.classic_session_timeout = cm.session_timeout_ms
            m.classic_protocols = tuple(p.name for p in cm.supported_protocols)
        elif isinstance(value, (ConsumerGroupMemberMetadataValue, ConsumerGroupMemberMetadataValue_3_7)):
            m.classic_session_timeout = None
            m.classic_protocols = ()
        if created:
            out.append(ev.MemberJoined(self.group_id, offset, timestamp, member_id, m.client_id, m.host,
                                       m.instance_id))
            departed, self.departed_static = self.departed_static, None
            if departed is not None and departed[0] == m.instance_id:
                self._replace_static(departed[1], m, offset, timestamp, judge, out)
        self.update_state(offset, timestamp, out)

    def _replace_static(self, old_id: str, new: ConsumerMember, offset: int, timestamp: int,
                        judge: RebalanceJudge, out: list) -> None:
        """The static member ``old_id`` restarted as ``new``: renamed in the epoch's membership and target."""
        assert new.instance_id is not None
        out.append(ev.StaticMemberReplaced(self.group_id, offset, timestamp, new.instance_id, old_id, new.member_id))
        out.extend(judge.static_restart(self.group_id, offset, timestamp, old_id, new.member_id))
        view = new.view(self.regexes)
        for views in (self.epoch_views, self.pending_views):
            if views is not None and views.pop(old_id, None) is not None:
                views[new.member_id] = view
        if old_id in self.epoch_target:
            self.epoch_target[new.member_id] = self.epoch_target.pop(old_id)

    def replay_target_epoch(self, epoch: int | None, offset: int, timestamp: int, judge: RebalanceJudge,
                            out: list) -> None:
        """Type 6: the target assignment reached ``epoch`` (None = tombstone, epoch -1).

        Raises:
            InconsistentRecord: a tombstone while members are still in the target assignment.
        """
        if epoch is None:
            if self.target:
                raise InconsistentRecord(f"group {self.group_id}: target assignment tombstone while "
                                         f"{len(self.target)} members are still in it")
            self.assignment_epoch = -1
        else:
            self.assignment_epoch = epoch
            if self.pending_epoch is not None and epoch >= self.pending_epoch[0]:
                self._finalise(judge, out)
        self.update_state(offset, timestamp, out)

    def replay_target_member(self, member_id: str, topic_partitions, offset: int, timestamp: int) -> None:
        """Type 7: one member's target partitions (None = tombstone)."""
        if topic_partitions is None:
            self.target.pop(member_id, None)
        else:
            self.target[member_id] = id_assignment(topic_partitions)

    def replay_current_assignment(self, member_id: str, value, offset: int, timestamp: int, out: list) -> None:
        """Type 8: a member's epoch, state, assigned and pending-revocation partitions (tombstone = leaving)."""
        m = self.members.get(member_id)
        if value is None:
            if m is None:
                return
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle,
                                MemberTrigger.CURRENT_ASSIGNMENT_TOMBSTONE)
            m.member_epoch = m.previous_epoch = LEAVE_GROUP_MEMBER_EPOCH
            m.assigned = {}
            m.pending_revocation = {}
        else:
            created = m is None
            if created:
                m = self.members[member_id] = ConsumerMember(member_id)
            m.lifecycle = apply("modern_member", MODERN_MEMBER, m.lifecycle, MemberTrigger.CURRENT_ASSIGNMENT)
            m.seen(timestamp)
            m.member_epoch = value.member_epoch
            m.previous_epoch = value.previous_member_epoch
            if isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
                m.state = int(MemberState.parse(value.state))
            elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue_3_7):
                # 3.6/3.7 had no State: a member at its target epoch was stable.
                m.state = int(MemberState.STABLE if value.member_epoch == value.target_member_epoch
                              else MemberState.UNRELEASED_PARTITIONS)
            m.assigned = id_assignment(value.assigned_partitions)
            m.pending_revocation = id_assignment(value.partitions_pending_revocation)
            if created:
                out.append(ev.MemberJoined(self.group_id, offset, timestamp, member_id, "", "", None))
        self.update_state(offset, timestamp, out)

    def replay_regex(self, regex: str, topics: tuple[str, ...] | None) -> None:
        """Type 16: the topics a subscribed regular expression resolved to (None = tombstone)."""
        if topics is None:
            self.regexes.pop(regex, None)
        else:
            self.regexes[regex] = tuple(topics)

    # ---- rebalance events -----------------------------------------------------------------------------------

    def _views(self) -> dict[str, MemberView]:
        return {k: m.view(self.regexes) for k, m in self.members.items() if m.member_epoch != LEAVE_GROUP_MEMBER_EPOCH}

    def _finalise(self, judge: RebalanceJudge, out: list) -> None:
        """Emits the Rebalance of the pending epoch bump and makes its membership the new baseline.

        The event carries the offset and time of the bump's own epoch record, so two bumps finalised by the same
        later record stay two distinct events.
        """
        pending = self.pending_epoch
        views = self.pending_views if self.pending_views is not None else self._views()
        self.pending_epoch = None
        self.pending_views = None
        partitions = {name: n for name, (_, n) in self.subscription_metadata.items()}
        target = {k: dict(v) for k, v in self.target.items()}
        if pending is not None and self.epoch_views is not None and (self.epoch_views or views):
            epoch, old_epoch, offset, timestamp = pending
            causes, joined, left = infer_causes(self.epoch_views, views,
                                                partitions_before=self.epoch_partitions or None,
                                                partitions_after=partitions or None)
            identity = {k: v.identity for k, v in self.epoch_views.items()} | {k: v.identity for k, v in views.items()}
            if self.assignment_epoch >= epoch:
                flat = lambda a: {m: [(t, p) for t, ps in tps.items() for p in ps] for m, tps in a.items()}
                moved, stayed = movement(flat(self.epoch_target), flat(target), identity)
            else:
                moved = stayed = None
            since = None if self.epoch_ts is None else max(0.0, (timestamp - self.epoch_ts) / 1000.0)
            self.rebalances += 1
            self.last_rebalance_ts = timestamp
            rebalance = ev.Rebalance(self.group_id, offset, timestamp, GroupType.CONSUMER, epoch, old_epoch, causes,
                                     len(self.epoch_views), len(views), moved, stayed, since, joined, left)
            out.append(rebalance)
            # The epoch's members that stopped following the group, still here or removed by this bump.
            missed = {k: m.missed_bump() if (m := self.members.get(k)) is not None else self.departed_silent.get(k)
                      for k in self.epoch_views}
            silent = {k: since for k, since in missed.items()
                      if since is not None and timestamp - since >= judge.config.silent_after_ms}
            out.extend(judge.observe(rebalance, {k: v.identity for k, v in self.epoch_views.items()},
                                     {k: v.identity for k, v in views.items()}, silent))
            self.epoch_ts = timestamp
        elif pending is not None and self.epoch_views is None:
            epoch, old_epoch, offset, timestamp = pending
            if views:
                formed = None
                if epoch == 1:
                    # The group's first epoch in a log that holds its whole life (a compacted log starts at a later
                    # one): its formation is its first rebalance, as a classic group's first generation is.
                    causes, joined, _ = infer_causes({}, views, partitions_after=partitions or None)
                    known = self.assignment_epoch >= epoch  # nothing was owned before: nothing moved or stayed
                    self.rebalances += 1
                    self.last_rebalance_ts = timestamp
                    formed = ev.Rebalance(self.group_id, offset, timestamp, GroupType.CONSUMER, epoch, old_epoch,
                                          causes, 0, len(views), 0 if known else None, 0 if known else None, None,
                                          joined, ())
                    out.append(formed)
                judge.baseline(self.group_id, offset, timestamp, {k: v.identity for k, v in views.items()}, formed)
            self.epoch_ts = timestamp
        self.departed_silent = {}
        self.epoch_views = views
        self.epoch_target = target
        self.epoch_partitions = partitions

    # ---- views ----------------------------------------------------------------------------------------------

    def member_snapshots(self, topic_names: Mapping[bytes, str]) -> list[ev.MemberSnapshot]:
        """Members with their current and target assignments, epochs and states, and their classic-protocol
        session timeout when they joined with it."""
        return [ev.MemberSnapshot(
            m.member_id, m.client_id, m.host, m.instance_id, resolve(topic_names, m.assigned),
            resolve(topic_names, self.target.get(m.member_id, {})), m.member_epoch, member_state_name(m.state),
            m.topics, m.regex or None, resolve(topic_names, m.pending_revocation),
            m.classic_session_timeout is not None, m.classic_session_timeout, m.rebalance_timeout)
            for m in self.members.values()]

    @property
    def assignment_known(self) -> bool:
        """Every member's current assignment is a record of its own (type 8)."""
        return True

    def subscriptions(self) -> dict[str, tuple[str, ...]]:
        """Named topics and the topics the members' regular expressions resolved to, sorted."""
        return {k: tuple(sorted(m.view(self.regexes).topics)) for k, m in self.members.items()}

    def partition_counts(self) -> dict[str, int]:
        return {name: n for name, (_, n) in self.subscription_metadata.items()}

    def preferred_assignor(self, default: str) -> str:
        """``preferredServerAssignor().orElse(defaultAssignor)``: the assignor most members ask for.

        Ties are broken the way Java's HashMap iterates small maps (bucket order of the spread String hash), which
        is what ``stream().max(...)`` over ``serverAssignors`` sees first.
        """
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        best = max(counts.values())
        tied = [a for a in counts if counts[a] == best]
        if len(tied) == 1:
            return tied[0]
        from protocol.partitioner import java_string_hash

        def bucket(name: str) -> int:
            h = java_string_hash(name) & 0xFFFFFFFF
            return (h ^ (h >> 16)) & 15

        return min(tied, key=bucket)

    def subscribed_topics(self) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out.update(m.topics)
            if m.regex:
                out.update(self.regexes.get(m.regex, ()))
        return out

    def to_state(self) -> dict:
        """The group by field name (:mod:`.state_format`)."""
        return fields_of(self, state=self.state.value,
                         members=[fields_of(m, lifecycle=m.lifecycle.value) for m in self.members.values()],
                         epoch_views=_views_state(self.epoch_views), pending_views=_views_state(self.pending_views))

    @classmethod
    def from_state(cls, state: Mapping) -> "ConsumerGroup":
        return build(cls, state, state=ConsumerGroupState(state["state"]),
                     members={m["member_id"]: ConsumerMember.from_state(m) for m in state["members"]},
                     epoch_views=_views_from_state(state.get("epoch_views")),
                     pending_views=_views_from_state(state.get("pending_views")))


def _views_state(views: dict[str, MemberView] | None) -> list[dict] | None:
    return None if views is None else [fields_of(v) for v in views.values()]


def _views_from_state(views: list[Mapping] | None) -> dict[str, MemberView] | None:
    return None if views is None else {v["member_id"]: build(MemberView, v) for v in views}
