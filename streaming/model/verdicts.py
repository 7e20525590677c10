"""Rebalance verdicts: storm, rolling restart, scale-out, scale-in and formation, judged again at every rebalance.

A rebalance on its own says little: a deploy restarts every member once, a crash loop restarts the same ones over
and over, and both write the same kind of records. What tells them apart is *who* leaves and *how long they had
been there*, so the judge keeps, per group, when each current member joined and a sliding window of departures.

Definitions (every number is a :class:`RebalanceConfig` field; docs/verdicts.md gives the reasons):

* a **churn rebalance** changes membership (a member joined, left, or a static member came back). Epoch bumps with
  the same members (metadata, subscription, cooperative follow-ups) never count.
* a **flap** is a departure of a member that had been in the group less than ``flap_lifetime_ms`` (it crashed or was
  killed soon after joining), or the third and later departure, within the window, of a member *identity* (static
  ``group.instance.id``, else ``client.id@host``) that names one member (or one member beside the ghost of its
  previous instance), or the third and later join of a new instance of such an identity beside a present one (a
  restart while the killed instance waits for its session to expire), while at most one member present at the
  episode's start holds it. Identities catch crash loops whose members outlive ``flap_lifetime_ms`` only because a
  killed member stays until its session expires; counting the restarts calls the loop while it runs. At the third,
  the identity's earlier departures (or restarts) in the window become flaps too: they were the same loop. A
  departure is a flap, too, when a member that came in a **wholesale replacement** (one rebalance replacing more
  members than a rolling restart does at a time) goes in the next one less than ``restart_wait_ms`` after joining: a
  classic group killed soon after every assignment, seen one session timeout apart. A consumer-protocol member
  that **goes silent** (follows no epoch bump for ``silent_after_ms``: it stopped heartbeating) within
  ``flap_lifetime_ms`` of joining flapped too, counted when the silence is certain (at a rebalance, or from the
  heartbeat tick: :meth:`RebalanceJudge.silence`) rather than when its session expires. Young departures that
  **stop** the group (its last members leaving in one rebalance) are held, and become flaps only if members join
  again within the window: a group stopped soon after it started (or soon after Kafka made it rejoin) is no loop.
* a **shared** identity is one that two members have held side by side for longer than ``ghost_wait_ms`` (no
  ghost lives that long at default settings): default client ids on one host. It says nothing, and only
  lifetimes count for it.
* an **episode** is a run of churn rebalances, each less than ``settle_ms`` after the previous one. It is over
  once the group has been quiet for ``settle_ms`` -- or for ``return_wait_ms`` while the group is smaller than
  when the episode began, so a member being rescheduled (a pod or a JVM taking a minute or two to start) can come
  back first, or for ``ghost_wait_ms`` while a new instance has joined beside a present one of its name (a
  restart if that one expires, an addition if not). A formation episode ends at its first departure, or when a
  member of a new name joins after the group ran ``formation_settle_ms`` unchanged: it had formed, and the
  newcomer is a scale-out.

The verdicts, as a table (:data:`VERDICTS`, which the code runs: each row a named predicate and a reason template,
tried in this order), first match wins. Each row belongs to the moment it is tried at: as a churn rebalance arrives,
before it is counted (a formation it ends), once it is counted (a storm; a rolling restart complete at once), when
a quiet period has passed (a storm's end), or when an episode settles:

=================  =====================================================================================  ==========
verdict            when                                                                                    reported
=================  =====================================================================================  ==========
storm              ≥ ``storm_rebalances`` churn rebalances and ≥ ``storm_flaps`` flaps in the window       at once
storm_ended        an active storm and no churn rebalance for ``storm_quiet_ms`` (or twice the storm's      on time
                   longest quiet between churn rebalances, if longer)
rolling_restart    the group never emptied; only members present at the episode's start left, at most     when every
                   ``max(1, size // 4)`` per rebalance, each replaced, no flap (but one member leaving     member is
                   young once, whose new instance stays); ≥ 2 left (or all of them); or every member has  back, or at
                   a new instance beside its ghost or in its place, not all started together               settle
formation          the episode started from an empty (or new) group and nobody left                        at settle,
                                                                                                           or first
                                                                                                           departure
scale_out          members only joined, and no present member of the same name expired (no restarts); or  at settle
                   members left and joined and the group grew
scale_in           members only left; or members left and joined and the group shrank                     at settle
                   (no return wait when they left one after another over ``stepwise_leave_ms``)
=================  =====================================================================================  ==========

While a storm is active no other verdict is taken: its rebalances belong to the storm.

No clock and no I/O: record-driven verdicts carry the rebalance record's offset and time; time-driven ones
(settle, storm end) carry the offset of the episode's last rebalance and the time the quiet period elapsed, so a
replay and a live run produce the same events.
"""

from __future__ import annotations

from collections import Counter, deque
from itertools import pairwise
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping

from . import events as ev
from .knobs import MS, check_bounds, knob
from .lazy import Restorable, lazy_variant
from .state_format import build, fields_of

__all__ = ["RebalanceConfig", "RebalanceJudge", "VerdictRule", "VERDICTS"]


@dataclass(frozen=True, slots=True)
class RebalanceConfig:
    """How rebalances are judged, each knob settable in the ``model:`` section (:mod:`.knobs`).

    Raises:
        ValueError: a value outside its knob's bounds.
    """

    storm_rebalances: int = knob(3, "rebalances", "churn rebalances in the window before a storm can be called",
                                 ge=2)
    storm_window_ms: int = knob(600_000, MS, "window in which churn and flaps are counted toward a storm", gt=0)
    storm_flaps: int = knob(2, "flaps", "flaps in the window that make the churn a storm", ge=1)
    flap_lifetime_ms: int = knob(20_000, MS, "a member leaving sooner than this after joining flapped", gt=0)
    identity_flap_departures: int = knob(3, "departures", "the n-th departure of one identity in the storm window "
                                         "is a flap", ge=2)
    settle_ms: int = knob(20_000, MS, "quiet time that ends an episode (and lets its verdict be taken)", gt=0)
    # such a join ends the formation: the group had formed, and the member adds capacity
    formation_settle_ms: int = knob(10_000, MS, "a member of a new name joining a forming group that has run this "
                                    "long unchanged is a scale-out", gt=0)
    # also how long two holders of one identity side by side make it an identity they share
    restart_wait_ms: int = knob(60_000, MS, "an episode waits this long while a new instance stands beside a "
                                "present one of its name (the killed one's session expiring)", gt=0)
    # time for the member that left to come back (a pod rescheduled, a JVM starting, a static member past its
    # session) before the departure is called a scale-in
    return_wait_ms: int = knob(180_000, MS, "an episode waits this long while the group is smaller than at its "
                               "start", gt=0)
    # judged at settle without the return wait (a deploy brings each member back before it takes the next one
    # down; members lost together leave within seconds of each other)
    stepwise_leave_ms: int = knob(10_000, MS, "members leaving one after another over at least this long, nobody "
                                  "joining: a stepwise scale-in", gt=0)
    storm_quiet_ms: int = knob(60_000, MS, "quiet time that ends a storm", gt=0)
    restart_chain_gap_ms: int = knob(300_000, MS, "single-member restarts this close together form one rolling "
                                     "restart", gt=0)
    # live ones follow within a heartbeat interval: 5 s by default, at most 15 s
    silent_after_ms: int = knob(20_000, MS, "a consumer-protocol member that has not followed an epoch bump for "
                                "this long has stopped heartbeating", gt=0)
    kafka_gap_ms: int = knob(15_000, MS, "no heartbeat and no coordinator write for longer than this (or three "
                             "heartbeat intervals): Kafka was away", gt=0)
    # a new member id once their session timed out, the old one expiring a session later: 45 s by default
    kafka_rejoin_ms: int = knob(60_000, MS, "after Kafka is back, members present before it went away rejoin "
                                "within this without counting as churn", gt=0)

    @property
    def ghost_wait_ms(self) -> int:
        """How long a killed member can stay in the group beside its new instance: twice the restart wait. In a
        classic group a member that had rejoined the join phase before it died is carried into the generation
        and gets a new session from there, and the generation that shows it gone also waits for any member
        killed before it rejoined -- up to two sessions after the restart."""
        return 2 * self.restart_wait_ms

    def __post_init__(self) -> None:
        check_bounds(self)


@dataclass(slots=True)
class _Episode:
    start_ms: int
    last_ms: int
    last_offset: int
    size_before: int
    started_empty: bool
    baseline: frozenset[str]  # member ids present when the episode began
    size_now: int = 0
    joins: int = 0
    departures: int = 0
    max_departures: int = 0  # most departures in one rebalance
    outsider_departures: int = 0  # departures of members that joined during the episode
    flaps: int = 0
    went_empty: bool = False
    restart_joins: int = 0  # joins whose identity was already held by a present member
    rebalances: int = 0
    replaced_departures: int = 0  # departures of a ghost whose identity stays with its new instance
    # who left, each as its identity, or as its member id when the identity names several members
    leavers: tuple[str, ...] = ()
    # identities whose departure was a flap only for being young (the first of that identity in the window): a
    # deploy soon after a deploy restarts members younger than the flap lifetime, once each
    young_leavers: tuple[str, ...] = ()
    join_rounds: int = 0  # rebalances in which someone joined
    departures_by_first_join: int = -1  # departures up to and with the first rebalance someone joined in
    leave_rounds: int = 0  # rebalances in which someone left
    first_leave_ms: int = -1  # when the first and the latest of them happened
    last_leave_ms: int = -1

    def leaver(self, k: int) -> str | None:
        """Who the ``k``-th departure was (None in a state written before departures were named)."""
        return self.leavers[k] if k < len(self.leavers) else None

    def to_state(self) -> dict:
        return fields_of(self, baseline=tuple(sorted(self.baseline)))

    @classmethod
    def from_state(cls, state: Mapping) -> "_Episode":
        return build(cls, state, baseline=frozenset(state["baseline"]))


@dataclass(slots=True)
class _GroupJudgement(Restorable):
    # member id -> (joined ms, identity, joined in a wholesale replacement)
    members: dict[str, tuple[int, str, bool]] = field(default_factory=dict)
    churn: deque = field(default_factory=deque)  # times of churn rebalances in the window
    departures: deque = field(default_factory=deque)  # (time, identity, flap)
    episode: _Episode | None = None
    storm_since: int | None = None
    storm_last_churn: int = -1
    storm_last_offset: int = -1
    storm_rebalances: int = 0
    # single-member restarts that settled one by one (a slow rolling restart): (settled ms, start ms, rebalances)
    chain: list = field(default_factory=list)
    chain_reported: bool = False
    counters: ev.GroupVerdicts = ev.GroupVerdicts()  # per-group totals, checkpointed: restarts keep them
    # identities held side by side by two or more members for longer than a restart takes (default client ids on
    # one host): they name nobody, so neither their departures nor their joins say who restarted
    shared: set = field(default_factory=set)
    restarts: deque = field(default_factory=deque)  # (time, identity, flap): new instances beside a present one
    storm_gap: int = 0  # the longest quiet between two churn rebalances of the active storm (its rhythm)
    # (time, member id) of members counted as flaps when they went silent young (see ``observe``); their departure
    # when their session expires is the same flap, not another
    silenced: deque = field(default_factory=deque)
    # members a rolling restart was called over while they were still in the group, each beside its own new
    # instance: killed instances waiting for their sessions to expire. Their departure completes that restart.
    ghosts: set = field(default_factory=set)
    last_offset: int = -1  # offset of the latest churn rebalance (carried by a storm that silence calls)
    # Kafka's rejoins in the current outage window: (went away ms, identities present then, identities that have
    # rejoined since). Each identity present when Kafka went away rejoins once without counting as churn.
    kafka: tuple = ()
    # (time, identity) of young departures that emptied the group: a flap only once the group comes back (a crash
    # loop of the whole group), not while it stays stopped
    stopped: deque = field(default_factory=deque)

    def to_state(self) -> dict:
        """The group's judgement by field name (:mod:`.state_format`)."""
        return fields_of(self, churn=tuple(self.churn), departures=tuple(self.departures),
                         episode=None if self.episode is None else self.episode.to_state(), chain=tuple(self.chain),
                         counters=fields_of(self.counters), shared=tuple(sorted(self.shared)),
                         restarts=tuple(self.restarts), silenced=tuple(self.silenced),
                         ghosts=tuple(sorted(self.ghosts)), stopped=tuple(self.stopped))

    @classmethod
    def from_state(cls, state: Mapping) -> "_GroupJudgement":
        episode = state.get("episode")
        return build(cls, state, churn=deque(state.get("churn", ())), departures=deque(state.get("departures", ())),
                     episode=None if episode is None else _Episode.from_state(episode),
                     chain=list(state.get("chain", ())), counters=build(ev.GroupVerdicts, state.get("counters", {})),
                     shared=set(state.get("shared", ())), restarts=deque(state.get("restarts", ())),
                     silenced=deque(state.get("silenced", ())), ghosts=set(state.get("ghosts", ())),
                     stopped=deque(tuple(e) for e in state.get("stopped", ())))


def _quiet_judgement_fields(state: Mapping) -> Iterable[tuple[str, object]]:
    """What the heartbeat tick reads of every judgement (:meth:`RebalanceJudge.tick`), filled at restore so a quiet
    group's judgement is not built: no open episode (an open one is built when read) and no storm."""
    if state.get("episode") is None:
        yield "episode", None
    yield "storm_since", state.get("storm_since")


_RestoredJudgement = lazy_variant(_GroupJudgement, _quiet_judgement_fields)


class RebalanceJudge:
    """Judges every group's rebalances of one shard; see the module docstring for the rules."""

    __slots__ = ("config", "groups", "away", "kafka_rejoins")

    def __init__(self, config: RebalanceConfig = RebalanceConfig()) -> None:
        self.config = config
        self.groups: dict[str, _GroupJudgement] = {}
        # ``(went away, rejoin window's end)`` while membership changes may be Kafka's doing (set by the shard from
        # its availability tracker), and the groups whose members rejoined in it (drained by the shard).
        self.away: tuple[int, int] | None = None
        self.kafka_rejoins: set[str] = set()

    # ---- input ---------------------------------------------------------------------------------------------

    def baseline(self, group_id: str, offset: int, timestamp: int, identities: Mapping[str, str],
                 rebalance: ev.Rebalance | None = None) -> None:
        """The first membership seen for a group (generation 1, or a new consumer group's first epoch): a
        formation episode starts here. ``rebalance``: the group's first epoch as a rebalance, counted with the
        others (causes, partitions moved) though not judged as churn."""
        j = self.groups.setdefault(group_id, _GroupJudgement())
        if rebalance is not None:
            self._account(j, rebalance)
        for mid, ident in identities.items():
            j.members.setdefault(mid, (timestamp, ident, False))
        if identities and j.episode is None and j.storm_since is None:
            j.episode = _Episode(timestamp, timestamp, offset, 0, True, frozenset(), size_now=len(identities),
                                 joins=len(identities))

    def observe(self, rebalance: ev.Rebalance, before: Mapping[str, str], after: Mapping[str, str],
                silent: Mapping[str, int] | None = None) -> list[ev.Event]:
        """Judges one rebalance; ``before``/``after`` map member ids to identities. ``silent`` maps members of
        ``before`` that have stopped heartbeating (consumer protocol: see ``ConsumerMember.missed_bump``) to the
        first epoch bump each did not follow. Returns verdict events."""
        cfg = self.config
        gid, ts, offset = rebalance.group_id, rebalance.timestamp, rebalance.offset
        j = self.groups.setdefault(gid, _GroupJudgement())
        self._account(j, rebalance)
        out: list[ev.Event] = []
        out.extend(self._settle(gid, j, ts))  # an episode or storm that ended before this rebalance
        before = self._after_kafka_rejoins(gid, j, ts, before, after)
        joined = [m for m in after if m not in before]
        left = [m for m in before if m not in after]
        rejoined_static = ev.RebalanceCause.STATIC_MEMBER_REJOINED in rebalance.causes and not (
            self._kafka_window(j, ts) and not joined and not left)
        if not joined and not left and not rejoined_static:
            return out  # same members: metadata, subscription or cooperative follow-up; never churn
        if left and not joined and j.ghosts.issuperset(left):
            # The killed instances of a rolling restart already reported, expiring: its end, not new churn.
            for mid in left:
                j.members.pop(mid, None)
            j.ghosts.difference_update(left)
            return out
        # Departures, judged against when each member joined.
        holders = Counter(before.values())
        holders_after = Counter(after.values())
        window_start = ts - cfg.storm_window_ms
        while j.departures and j.departures[0][0] < window_start:
            j.departures.popleft()
        while j.churn and j.churn[0] < window_start:
            j.churn.popleft()
        while j.restarts and j.restarts[0][0] < window_start:
            j.restarts.popleft()
        while j.silenced and j.silenced[0][0] < window_start:
            j.silenced.popleft()
        while j.stopped and j.stopped[0][0] < window_start:
            j.stopped.popleft()
        # Two members holding one identity side by side for longer than any restart takes are two live members
        # named alike, not a member and the ghost of its previous instance: from then on the identity is shared.
        newest_join: dict[str, int] = {}
        for mid, ident in before.items():
            newest_join[ident] = max(newest_join.get(ident, -1), j.members.get(mid, (ts, ""))[0])
        j.shared.update(i for i, n in holders.items() if n >= 2 and newest_join[i] <= ts - cfg.ghost_wait_ms)
        flaps_now = 0
        outsiders = 0
        replaced = 0
        distinct = len(holders)
        # A member that went silent within the flap lifetime of joining died young, whether it left cleanly or
        # not: a killed consumer-protocol member stays until its session expires (45 s by default), so its
        # lifetime as the log shows it says nothing, while the first epoch bump it did not follow bounds when it
        # died. Counted when the silence is certain, not 45 s later when the session expires: crash loops whose
        # members are all killed (new names each time, every one a ghost for a session) are storms while they run.
        flaps_now += len(self._note_silent(j, silent or {}, lambda _since: ts))
        silenced = {m for _, m in j.silenced}
        if joined and j.stopped:
            # The group comes back after young members stopped it: those departures were a crash loop's after all.
            flaps_now += _mark_stopped_flaps(j.departures, j.stopped)
            j.stopped.clear()
        # Every member leaving young at once stops the group (an orderly shutdown, or Kafka having made them all
        # rejoin shortly before): their departures are flaps only if the group comes back (see ``stopped``).
        emptied = bool(left) and not after

        def informative(ident: str) -> bool:
            # An identity names one member (or one member and the ghost of its previous instance) unless members
            # share it (default client ids on one host): then it tells nothing.
            return ident not in j.shared and holders.get(ident, 0) <= 2 and (distinct > 1 or len(before) <= 2)

        ep = j.episode
        # An open episode this rebalance ends before it is counted (the arrival rows of VERDICTS).
        change = _Change(joined=len(joined), left=len(left),
                         new_names=not set(before.values()).intersection(after[m] for m in joined))
        rule = next((r for r in VERDICTS if r.taken == "arrival" and r.when(_Case(self, j, ep, ts, change=change))),
                    None)
        if rule is not None:
            out.append(self._verdict(gid, j, rule.verdict, offset, ts, ep, reason=rule.reason))
            ep = None
        leavers: list[str] = []
        young: list[str] = []
        # Several members replaced in one rebalance (more than a rolling restart takes at a time, as many or more
        # joining): members killed together, whose successors waited in the pending rebalance until the ghosts'
        # sessions expired (a classic group completes it only then), or a deploy that replaces everyone at once.
        # Members that came in such a replacement and go in the next one within a restart's wait of joining are
        # a crash loop of the whole group, seen one session timeout apart; once is a deploy, or a node lost.
        # Ghosts expiring beside new instances that were already in take no part in it: their replacements came
        # earlier, one at a time.
        kept = {after[m] for m in after if m in before}
        swapped = sum(1 for m in left if before[m] not in kept)
        wholesale = len(joined) >= swapped > max(1, len(before) // 4)
        for mid in left:
            joined_ms, ident, came_wholesale = j.members.pop(mid, (None, before[mid], False))
            named = informative(ident)
            leavers.append(ident if named else mid)
            tenure = None if joined_ms is None else ts - joined_ms
            short = tenure is not None and (tenure < cfg.flap_lifetime_ms or (
                wholesale and came_wholesale and tenure < cfg.restart_wait_ms))
            repeats = sum(1 for _, i, _ in j.departures if i == ident) if named else 0
            again = repeats + 1 >= cfg.identity_flap_departures
            if again:
                # The member keeps leaving: its earlier departures in the window were the same loop, so they are
                # flaps too. A member thrown out every poll interval is a storm at its third departure, not at a
                # fourth one four or five minutes in.
                flaps_now += _mark_flaps(j.departures, ident)
            if mid in silenced:
                # Counted when it went silent: its departure is that flap, moved from one window to the other.
                j.silenced.remove(next(e for e in j.silenced if e[1] == mid))
                j.departures.append((ts, ident, True))
            else:
                held = short and emptied and not again
                flap = (short or again) and not held
                j.departures.append((ts, ident, flap))
                if held:
                    j.stopped.append((ts, ident))
                flaps_now += flap
                if flap and not again and repeats == 0 and not (wholesale and came_wholesale):
                    # Named or not: under a shared name (Java's default client id in every JVM) the departure is
                    # still one member leaving young, and a new instance of that name replaces it.
                    young.append(ident)
            if ep is not None and mid not in ep.baseline:
                outsiders += 1
            # A member killed without leaving stays until its session expires, beside its own new instance: its
            # departure then completes a restart (only telling when the identity belongs to these two alone). In a
            # classic group the new instance may still be waiting in the join phase the ghost holds up, and the
            # two trade places in one generation: a restart too, unless everyone was replaced at once.
            if ident not in j.shared and holders_after.get(ident) == 1 and (
                    holders.get(ident) == 2 or (holders.get(ident) == 1 and not wholesale
                                                and any(after[m] == ident for m in joined))):
                replaced += 1
        restart_joins = 0
        # Holders present when the episode began: a crash loop piles up young ghosts beside one established
        # holder, while several established holders are separate members named alike (separate JVMs left at
        # Java's default client id on one host, restarted one after another by a deploy).
        baseline = ep.baseline if ep is not None else before.keys()
        established = Counter(i for m, i in before.items() if m in baseline) if joined else Counter()
        # While a group forms and nobody has left yet, members named alike are joining one by one (a consumer-
        # protocol group forms one epoch per member), not restarting.
        forming = (ep.started_empty and ep.departures == 0 and not left) if ep is not None else not before
        for mid in joined:
            ident = after[mid]
            if holders.get(ident, 0) >= 1 and ident not in j.shared and not forming:
                # A new instance beside a present one of the same name: a restart while the killed instance waits
                # for its session to expire (an added member if the other one stays: see ``_settle``). The n-th
                # restart of one identity in the window is a flap, even while every killed instance outlives the
                # flap lifetime as a ghost (a crash loop of members that never leave cleanly) -- as long as the
                # identity names one established member.
                if holders[ident] == 1:
                    restart_joins += 1
                if established[ident] <= 1:
                    repeats = sum(1 for _, i, _ in j.restarts if i == ident)
                    flap = repeats + 1 >= cfg.identity_flap_departures
                    if flap:
                        flaps_now += _mark_flaps(j.restarts, ident)
                    j.restarts.append((ts, ident, flap))
                    flaps_now += flap
            j.members[mid] = (ts, ident, wholesale)
        j.shared.intersection_update(holders_after)
        j.churn.append(ts)
        j.last_offset = offset
        # The episode this rebalance belongs to.
        if ep is None:
            ep = j.episode = _Episode(ts, ts, offset, len(before), len(before) == 0, frozenset(before))
        ep.last_ms, ep.last_offset = ts, offset
        ep.rebalances += 1
        ep.size_now = len(after)
        ep.joins += len(joined)
        ep.departures += len(left)
        ep.max_departures = max(ep.max_departures, len(left))
        ep.outsider_departures += outsiders
        ep.flaps += flaps_now
        ep.restart_joins += restart_joins
        ep.replaced_departures += replaced
        ep.leavers += tuple(leavers)
        ep.young_leavers += tuple(young)
        if left:
            ep.leave_rounds += 1
            ep.first_leave_ms = ts if ep.first_leave_ms < 0 else ep.first_leave_ms
            ep.last_leave_ms = ts
        if joined:
            ep.join_rounds += 1
            if ep.departures_by_first_join < 0:
                ep.departures_by_first_join = ep.departures
        ep.went_empty = ep.went_empty or (not after and bool(before))
        # Storm: judged again at every churn rebalance.
        flaps = self._flaps(j)
        if j.storm_since is not None:
            # While a storm is active no other verdict is taken: its rebalances belong to the storm.
            j.storm_gap = max(j.storm_gap, ts - j.storm_last_churn)
            j.storm_last_churn, j.storm_last_offset = ts, offset
            j.storm_rebalances += 1
            # What the group's latest verdict says follows the storm while it lasts, not frozen at its start.
            j.counters = replace(j.counters, last_reason=REASONS["storm"].format(
                c=_Case(self, j, None, ts, flaps=flaps)))
            return out
        case = _Case(self, j, ep, ts, flaps=flaps)
        rule = next((r for r in VERDICTS if r.taken == "rebalance" and r.when(case)), None)
        if rule is None:
            return out
        if rule is _STORM:
            out.append(self._start_storm(gid, j, flaps, offset, ts))
            return out
        # A restart called while killed instances are still in the group: their departure completes it.
        j.ghosts = (rule.ghosts(case) if rule.ghosts is not None else None) or set()
        out.append(self._verdict(gid, j, rule.verdict, offset, ts, ep, reason=rule.reason))
        return out

    def _kafka_window(self, j: _GroupJudgement, ts: int) -> bool:
        """Whether ``ts`` falls in the window of Kafka's rejoins; starts the group's record of it at its first use
        (the identities of the members present when Kafka went away)."""
        away = self.away
        if away is None or not away[0] <= ts <= away[1]:
            return False
        if not j.kafka or j.kafka[0] != away[0]:
            present = frozenset(ident for joined, ident, _ in j.members.values() if joined <= away[0])
            j.kafka = (away[0], present, frozenset())
        return True

    def _after_kafka_rejoins(self, gid: str, j: _GroupJudgement, ts: int, before: Mapping[str, str],
                             after: Mapping[str, str]) -> Mapping[str, str]:
        """``before`` with Kafka's own membership changes applied, so that only the consumers' are judged.

        In the window after Kafka was away (:data:`states.KAFKA_AVAILABILITY`), a member present when it went away
        that leaves was expired by Kafka, and a new instance of an identity present then that joins is that member
        rejoining (once per identity): neither is churn, a flap or a restart. Members that joined after Kafka came
        back are judged as always, so a group that really crash-loops is still a storm."""
        if not self._kafka_window(j, ts):
            return before
        since, present, used = j.kafka
        expired = [m for m in before if m not in after and j.members.get(m, (since, "", False))[0] <= since]
        rejoined = []
        for m in after:
            ident = after[m]
            if m not in before and ident in present and ident not in used:
                rejoined.append(m)
                used = used | {ident}
        if not expired and not rejoined:
            return before
        j.kafka = (since, present, used)
        for m in expired:
            j.members.pop(m, None)
            j.ghosts.discard(m)
        for m in rejoined:
            j.members[m] = (ts, after[m], False)
        self.kafka_rejoins.add(gid)
        adjusted = {m: ident for m, ident in before.items() if m not in expired}
        adjusted.update((m, after[m]) for m in rejoined)
        return adjusted

    def _start_storm(self, gid: str, j: _GroupJudgement, flaps: int, offset: int, ts: int) -> ev.Event:
        """The storm the window's churn and flaps make, called at ``ts`` (a rebalance's record, or the moment a
        member's silence became certain), carrying ``offset`` (that of the last churn rebalance)."""
        j.storm_since, j.storm_last_churn, j.storm_last_offset = j.churn[0], j.churn[-1], offset
        j.storm_rebalances = len(j.churn)
        j.storm_gap = max((b - a for a, b in pairwise(j.churn)), default=0)
        j.episode = None
        reason = REASONS["storm"].format(c=_Case(self, j, None, ts, flaps=flaps))
        self._count(j, "storm", reason, ts)
        return ev.RebalanceStorm(gid, offset, ts, len(j.churn), (ts - j.churn[0]) / 1000.0, j.churn[0],
                                 reason=reason)

    @staticmethod
    def _flaps(j: _GroupJudgement) -> int:
        return (sum(1 for _, _, f in j.departures if f) + sum(1 for _, _, f in j.restarts if f)
                + len(j.silenced))

    def silence(self, group_id: str, silent: Mapping[str, int]) -> list[ev.Event]:
        """Consumer protocol, between rebalances: ``silent`` maps present members to the first epoch bump each has
        not followed for ``silent_after_ms`` or more. A member that went silent young is a flap from the moment
        its silence is certain, not only at the next rebalance: a crash loop whose killed members hold their
        partitions until their sessions expire (45 s) writes nothing in between, while its new instances wait for
        those partitions. The storm this makes is called at that moment."""
        cfg = self.config
        j = self.groups.get(group_id)
        if j is None:
            return []
        certain = self._note_silent(j, silent, lambda since: since + cfg.silent_after_ms)
        if not certain or j.storm_since is not None:
            return []
        at = max(certain)
        if j.episode is not None:
            j.episode.flaps += len(certain)
        while j.churn and j.churn[0] < at - cfg.storm_window_ms:
            j.churn.popleft()
        flaps = self._flaps(j)
        if _STORM.when(_Case(self, j, None, at, flaps=flaps)):
            return [self._start_storm(group_id, j, flaps, j.last_offset, at)]
        return []

    def _note_silent(self, j: _GroupJudgement, silent: Mapping[str, int], when) -> list[int]:
        """Adds to the window each member of ``silent`` (member -> first bump missed) that went silent within the
        flap lifetime of joining and is not there yet, at ``when(first bump missed)``; returns those times."""
        silenced = {m for _, m in j.silenced}
        noted = []
        for mid, since in silent.items():
            entry = j.members.get(mid)
            if mid in silenced or entry is None or since - entry[0] >= self.config.flap_lifetime_ms:
                continue
            j.silenced.append((when(since), mid))
            noted.append(when(since))
        return noted

    @staticmethod
    def _account(j: _GroupJudgement, rebalance: ev.Rebalance) -> None:
        """Partitions moved and causes, summed per group (every rebalance, churn or not)."""
        c = j.counters
        counts = dict(c.causes)
        for cause in rebalance.causes:
            counts[cause.value] = counts.get(cause.value, 0) + 1
        moved = rebalance.partitions_moved
        j.counters = replace(c, causes=tuple(sorted(counts.items())),
                             partitions_moved=c.partitions_moved + (moved or 0),
                             last_partitions_moved=c.last_partitions_moved if moved is None else moved)

    def static_restart(self, group_id: str, offset: int, timestamp: int, old_member: str = "",
                       new_member: str = "") -> list[ev.Event]:
        """A static member (``group.instance.id``) came back under a new member id within its session timeout:
        no rebalance, but one member restarted. Two such restarts within the chain gap make a rolling restart
        (a deploy of statically-named consumers), reported at the second."""
        j = self.groups.setdefault(group_id, _GroupJudgement())
        if self._kafka_window(j, timestamp) and j.members.get(old_member, (timestamp,))[0] <= self.away[0]:
            # Its session ran out while Kafka was away and it came back under a new member id: Kafka's doing.
            entry = j.members.pop(old_member, None)
            if entry is not None:
                j.members[new_member] = (timestamp, entry[1], False)
            self.kafka_rejoins.add(group_id)
            return []
        who = None
        if old_member in j.members:
            who = j.members.pop(old_member)[1]
            j.members[new_member] = (timestamp, who, False)
        if j.storm_since is not None:
            return []
        chain = j.chain
        self._chain_add(j, (timestamp, timestamp, 0, who), len(j.members))
        if len(chain) < 2 or j.chain_reported:
            return []
        size = len(j.members)
        open_episode = j.episode
        event = self._chain_verdict(group_id, j, offset, timestamp, timestamp, size, size, frozenset(j.members))
        j.episode = open_episode
        return [event]

    def tick(self, now_ms: int) -> list[ev.Event]:
        """Takes the verdicts that time decides (settled episodes, ended storms) up to ``now_ms``."""
        out: list[ev.Event] = []
        for gid, j in list(self.groups.items()):
            if j.episode is None and j.storm_since is None:
                continue
            out.extend(self._settle(gid, j, now_ms))
        return out

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    # ---- verdicts ------------------------------------------------------------------------------------------

    def _settle(self, gid: str, j: _GroupJudgement, now_ms: int) -> list[ev.Event]:
        cfg = self.config
        out: list[ev.Event] = []
        if j.storm_since is not None:
            rule = next((r for r in VERDICTS if r.taken == "time" and r.when(_Case(self, j, None, now_ms))), None)
            if rule is not None:
                end = rule.due(_Case(self, j, None, now_ms))
                reason = rule.reason.format(c=_Case(self, j, None, end))
                out.append(self._end_storm(gid, j, j.storm_last_offset, end, reason))
            return out
        ep = j.episode
        if ep is None:
            return out
        # A smaller group waits for the member that left to come back; a new instance beside a present one of the
        # same name waits for that one to expire (a restart) or to stay (an added member sharing its name).
        quiet = cfg.settle_ms
        holders = Counter(ident for _, ident, _ in j.members.values())
        if ep.restart_joins > ep.replaced_departures and any(
                n >= 2 and ident not in j.shared for ident, n in holders.items()):
            quiet = max(quiet, cfg.ghost_wait_ms)
        if ep.size_now < ep.size_before and not ep.went_empty and not self._stepwise_scale_in(ep):
            quiet = max(quiet, cfg.return_wait_ms)
        if now_ms < ep.last_ms + quiet:
            return out
        j.episode = None
        at = ep.last_ms + quiet
        case = _Case(self, j, ep, at, settled=True)
        rule = next(r for r in VERDICTS if r.taken == "settle" and r.when(case))
        if rule.chain:
            # Single-member restarts: each counts towards a (slow) rolling restart, reported once two of them
            # settled within the chain gap; the chain goes on.
            for k in range(rule.chain(ep)):
                self._chain_add(j, (at, ep.start_ms, ep.rebalances, ep.leaver(k)), ep.size_before)
            if len(j.chain) >= 2 and not j.chain_reported:
                out.append(self._chain_verdict(gid, j, ep.last_offset, at, ep.last_ms, ep.size_before, ep.size_now,
                                               ep.baseline))
            return out
        j.chain.clear()
        j.chain_reported = False
        if rule.verdict is not None:
            out.append(self._verdict(gid, j, rule.verdict, ep.last_offset, at, ep, settled=True))
        return out

    @staticmethod
    def _end_storm(gid: str, j: _GroupJudgement, offset: int, at: int, reason: str) -> ev.Event:
        """The active storm ends at ``at``; a new one needs new evidence: the ended one's churn and flaps no
        longer count."""
        duration = (j.storm_last_churn - j.storm_since) / 1000.0
        event = ev.StormEnded(gid, offset, at, j.storm_rebalances, duration, j.storm_since, reason=reason)
        j.storm_since = None
        j.counters = replace(j.counters, storm_active=False, last_verdict="storm_ended", last_reason=reason,
                             last_verdict_ms=at)
        j.churn.clear()
        j.departures.clear()
        j.restarts.clear()
        j.silenced.clear()
        j.episode = None
        return event

    def _stepwise_scale_in(self, ep: _Episode) -> bool:
        """Members left one after another, in two or more rebalances spread over ``stepwise_leave_ms`` or more, and
        nobody joined: the group is being scaled in step by step, not waiting for a member to come back. A deploy
        takes the next member down only once the previous one is back (nobody joined: nobody is back), and members
        lost together (a node) leave within seconds of each other, so neither looks like this; they still get the
        return wait."""
        return (ep.joins == 0 and ep.leave_rounds >= 2 and not ep.started_empty
                and ep.last_leave_ms - ep.first_leave_ms >= self.config.stepwise_leave_ms)

    def _storm_quiet_ms(self, j: _GroupJudgement) -> int:
        """Quiet time that ends a storm: ``storm_quiet_ms``, or twice the storm's own longest quiet between two
        churn rebalances when that is longer (a member thrown out every 70 s for exceeding its poll interval keeps
        a slower rhythm than a minute), at most the storm window."""
        cfg = self.config
        return int(min(max(cfg.storm_quiet_ms, 2 * j.storm_gap), max(cfg.storm_quiet_ms, cfg.storm_window_ms)))

    def _chain_add(self, j: _GroupJudgement, restart: tuple, size: int) -> None:
        """Adds one settled single-member restart ``(settled ms, start ms, rebalances, who)`` to the chain. The
        chain starts over when
        * the restart began more than ``restart_chain_gap_ms`` after the chain's last one settled;
        * a reported chain holds as many restarts as the group has members: everyone has restarted, so this one
          begins the next deploy (a rollback or a hotfix minutes after the first), reported on its own;
        * the member is already in the chain: restarting again is a loop, not the next member of a deploy, so one
          member restarting again and again never makes a rolling restart."""
        chain = j.chain
        who = restart[3]
        if chain and (restart[1] - chain[-1][0] > self.config.restart_chain_gap_ms
                      or (j.chain_reported and len(chain) >= max(size, 2))
                      or (who is not None and any(len(c) > 3 and c[3] == who for c in chain))):
            chain.clear()
            j.chain_reported = False
        chain.append(restart)

    def _chain_verdict(self, gid: str, j: _GroupJudgement, offset: int, at: int, last_ms: int, size_before: int,
                       size_now: int, baseline: frozenset[str]) -> ev.Event:
        """The rolling restart made of the chain's single-member restarts (reported once per chain)."""
        chain = j.chain
        j.chain_reported = True
        ep = _Episode(chain[0][1], last_ms, offset, size_before, False, baseline, size_now, len(chain), len(chain),
                      1, 0, 0, False, 0, sum(c[2] for c in chain))
        return self._verdict(gid, j, "rolling_restart", offset, at, ep, settled=True)

    @staticmethod
    def _only_young_restarts(ep: _Episode, j: _GroupJudgement) -> bool:
        """Every flap of the episode was a member leaving young for the first time, that left once and whose
        name is back in the group: restarted once and replaced, which is what a deploy does to members it
        started shortly before. (They still count towards a storm: two young departures in the window call one,
        since a crash loop's first round looks the same; this only keeps a single young restart from vetoing
        the rolling restart it belongs to.)"""
        if ep.flaps != len(ep.young_leavers) or len(set(ep.young_leavers)) != len(ep.young_leavers):
            return False
        present = {ident for _, ident, _ in j.members.values()}
        # A shared name is listed among the leavers by member id (it names nobody): at most once by name.
        return all(ep.leavers.count(i) <= 1 and i in present for i in ep.young_leavers)

    def _rolling_restart_shape(self, ep: _Episode, j: _GroupJudgement) -> bool:
        return (not ep.started_empty and not ep.went_empty and (ep.flaps == 0 or self._only_young_restarts(ep, j))
                and ep.outsider_departures == 0 and ep.departures > 0
                and ep.max_departures <= max(1, ep.size_before // 4)
                and ep.departures <= ep.size_before and ep.joins >= ep.departures)

    @staticmethod
    def _restarted_beside_ghosts(ep: _Episode, j: _GroupJudgement) -> set[str] | None:
        """Every member present at the episode's start has a new instance of its name in the group, and each
        old one has left or is still there beside it: members killed one after another (no LeaveGroup) and
        started again, while the killed instances wait for their sessions to expire. Returns those still there
        (the restart's ghosts), or None when the episode is not that.

        Called as soon as the last new instance is in, not a session timeout later when the last ghost expires:
        in a classic group every new instance waits in a join phase the first ghost holds up, and the
        generation that admits them all still holds the others (a member that rejoined before it died is kept
        until its next session runs out). Each name must be one member's (not shared), every new instance must
        have come one at a time (not a wholesale replacement), nobody may have flapped, and nobody else left."""
        if (ep.started_empty or ep.went_empty or ep.flaps or ep.outsider_departures or ep.size_before < 2
                or ep.departures < 1 or ep.joins != ep.size_before):
            return None
        if ep.join_rounds == 1 and ep.departures_by_first_join == 0:
            # Every new instance came in one rebalance while all the old ones were still there: started together,
            # not one after another (in a classic group restarted one by one, the first one killed is gone
            # before the join phase that admits the others completes).
            return None
        new = [(ident, wholesale) for mid, (joined, ident, wholesale) in j.members.items()
               if mid not in ep.baseline and joined >= ep.start_ms]
        ghosts = {mid for mid in j.members if mid in ep.baseline}
        names = [ident for ident, _ in new]
        if (len(new) != ep.size_before or any(w for _, w in new) or len(set(names)) != len(names)
                or any(n in j.shared for n in names)):
            return None
        if sorted([*ep.leavers, *(j.members[m][1] for m in ghosts)]) != sorted(names):
            return None
        return ghosts

    def _rolling_restart_complete(self, ep: _Episode, j: _GroupJudgement) -> bool:
        """Every member present at the start restarted once and the group is back to its size: no need to wait."""
        return (self._rolling_restart_shape(ep, j) and ep.departures == ep.size_before and ep.size_before >= 2
                and ep.size_now >= ep.size_before)

    def _verdict(self, gid: str, j: _GroupJudgement, verdict: str, offset: int, at: int,
                 ep: _Episode | None = None, *, settled: bool = False, reason: str = "") -> ev.Event:
        """The verdict event, counted. ``settled``: taken on time, once the group stayed quiet (else at a
        rebalance). ``reason``: the template of the row that decided (default: the verdict's own row's)."""
        ep = ep if ep is not None else j.episode
        assert ep is not None
        j.episode = None
        span = (ep.last_ms - ep.start_ms) / 1000.0
        reason = (reason or REASONS[verdict]).format(c=_Case(self, j, ep, at, settled=settled))
        if verdict == "rolling_restart":
            event: ev.Event = ev.RollingRestart(gid, offset, at, ep.rebalances, span, ep.start_ms, (),
                                                reason=reason)
        else:
            cls = {"formation": ev.GroupFormed, "scale_out": ev.ScaleOut, "scale_in": ev.ScaleIn}[verdict]
            event = cls(gid, offset, at, ep.rebalances, span, ep.start_ms, ep.size_before, ep.size_now,
                        reason=reason)
        self._count(j, verdict, reason, at)
        return event

    @staticmethod
    def _count(j: _GroupJudgement, verdict: str, reason: str, at: int) -> None:
        c = j.counters
        field_of = {"storm": "storms", "rolling_restart": "rolling_restarts", "scale_out": "scale_outs",
                    "scale_in": "scale_ins", "formation": "formations"}
        name = field_of[verdict]
        j.counters = replace(c, **{name: getattr(c, name) + 1}, last_verdict=verdict, last_reason=reason,
                             last_verdict_ms=at, storm_active=c.storm_active or verdict == "storm")

    # ---- views and state -----------------------------------------------------------------------------------

    def counters(self, group_id: str) -> ev.GroupVerdicts:
        j = self.groups.get(group_id)
        return j.counters if j is not None else ev.GroupVerdicts()

    def active_storms(self) -> Iterable[str]:
        return (g for g, j in self.groups.items() if j.storm_since is not None)

    def to_state(self) -> dict:
        """Every group's judgement by name (:mod:`.state_format`); the config comes from the job's settings."""
        return {"groups": {g: j.saved_state() for g, j in self.groups.items()}}

    def load_state(self, state: Mapping) -> None:
        """Restores :meth:`to_state`; each group's judgement is built when first used (``streaming.model.lazy``)."""
        self.groups = {g: _RestoredJudgement.restore(j) for g, j in state["groups"].items()}


@dataclass(frozen=True, slots=True)
class _Change:
    """What the churn rebalance being judged changed, as the arrival rows read it: how many members joined and
    left, and whether every newcomer carries a name no present member has (a member added, not a new instance
    beside a killed one)."""

    joined: int = 0
    left: int = 0
    new_names: bool = False


_NO_CHANGE = _Change()


class _Case:
    """What the verdict rules read about one group when a verdict may be taken: its judgement, the episode being
    judged (None for a storm's own figures), when, what the arriving rebalance changed (arrival rows), and the
    figures the reason templates name (``{c.span_s}``)."""

    __slots__ = ("judge", "j", "ep", "at", "settled", "flaps", "change")

    def __init__(self, judge: "RebalanceJudge", j: _GroupJudgement, ep: _Episode | None, at: int, *,
                 settled: bool = False, flaps: int = 0, change: _Change | None = None) -> None:
        self.judge, self.j, self.ep, self.at, self.settled, self.flaps = judge, j, ep, at, settled, flaps
        self.change = change if change is not None else _NO_CHANGE

    # ---- the rebalance arriving (arrival rows)

    @property
    def forming(self) -> bool:
        """The open episode is a formation nobody has left yet, and no storm holds the group: the episode a
        departure or a newcomer may end before the rebalance is counted."""
        ep = self.ep
        return (ep is not None and ep.started_empty and ep.departures == 0 and not ep.flaps
                and self.j.storm_since is None)

    @property
    def formed_unchanged(self) -> bool:
        """The forming group has run ``formation_settle_ms`` since its last change."""
        return self.at - self.ep.last_ms >= self.judge.config.formation_settle_ms

    # ---- restarts called at a rebalance (rebalance rows)

    @property
    def restart_ghosts(self) -> set[str] | None:
        """The killed instances still in the group beside their new ones, when every member present at the
        episode's start has restarted so (None: the episode is not that)."""
        return None if self.ep is None else self.judge._restarted_beside_ghosts(self.ep, self.j)

    @property
    def restart_complete(self) -> bool:
        """Every member present at the episode's start restarted once, one at a time, and the group is back to
        its size."""
        return self.ep is not None and self.judge._rolling_restart_complete(self.ep, self.j)

    # ---- episodes

    @property
    def span_s(self) -> float:
        return (self.ep.last_ms - self.ep.start_ms) / 1000.0

    @property
    def members_before(self) -> str:
        return _members(self.ep.size_before)

    @property
    def members_now(self) -> str:
        return _members(self.ep.size_now)

    @property
    def quiet(self) -> str:
        """A verdict taken once the group stayed quiet is read later than its last rebalance: say so, so that a
        timeline line does not read as if the group changed then."""
        waited = (self.at - self.ep.last_ms) / 1000.0
        return f" (no membership change in the {waited:.0f} s since)" if self.settled and waited >= 1 else ""

    def _mixed(self, otherwise: str) -> str:
        ep = self.ep
        return f", {ep.departures} left and {ep.joins} joined" if ep.departures and ep.joins else otherwise

    @property
    def joined_too(self) -> str:
        return self._mixed(", nobody left")

    @property
    def left_too(self) -> str:
        return self._mixed(", nobody joined")

    @property
    def stepwise(self) -> str:
        ep = self.ep
        if not self.judge._stepwise_scale_in(ep):
            return ""
        return (f"; {ep.departures} left one after another over {(ep.last_leave_ms - ep.first_leave_ms) / 1000:.0f}"
                f" s (rule stepwise_scale_in: no return wait)")

    @property
    def grew(self) -> bool:
        return self.ep.size_now > self.ep.size_before

    @property
    def shrank(self) -> bool:
        return self.ep.size_now < self.ep.size_before

    # ---- storms

    @property
    def churn(self) -> int:
        return len(self.j.churn)

    @property
    def storm_span_s(self) -> float:
        """From the storm's first churn rebalance to now (the storm's, or the window's when it is not called yet)."""
        since = self.j.storm_since if self.j.storm_since is not None else self.j.churn[0]
        return (self.at - since) / 1000.0

    @property
    def storm_count(self) -> int:
        """Churn rebalances of the storm so far (at its start: those of the window that called it)."""
        return self.j.storm_rebalances if self.j.storm_since is not None else len(self.j.churn)

    @property
    def flap_lifetime_s(self) -> int:
        return self.judge.config.flap_lifetime_ms // 1000

    @property
    def or_silent(self) -> str:
        return " or going silent" if self.j.silenced else ""

    @property
    def back_again(self) -> str:
        """Who keeps coming back: a named member that left twice or more in the window was back in between, thrown
        out and rejoining (poll interval or session exceeded) or restarted: one member, not several replaced."""
        back = Counter(i for _, i, _ in self.j.departures if i not in self.j.shared)
        again = sorted(i for i, n in back.items() if n >= 2)
        if not again:
            return ""
        return (f"; {', '.join(f'{i} left {back[i]} times' for i in again)}, back under the same name in "
                f"between: thrown out and rejoining (max.poll.interval.ms or session timeout exceeded) or "
                f"restarting in a loop, not a deploy")

    @property
    def storm_quiet_s(self) -> int:
        return self.judge._storm_quiet_ms(self.j) // 1000

    @property
    def storm_quiet_end(self) -> int:
        """When the active storm's quiet period ends (no churn rebalance since its last one)."""
        return self.j.storm_last_churn + self.judge._storm_quiet_ms(self.j)

    @property
    def empty(self) -> bool:
        """Nobody is in the group (its last rebalance left it without members)."""
        return not self.j.members

    @property
    def emptied_end(self) -> int:
        """When a group its last rebalance emptied has stayed empty for ``settle_ms``."""
        return self.j.storm_last_churn + self.judge.config.settle_ms

    @property
    def settle_s(self) -> int:
        return self.judge.config.settle_ms // 1000

    @property
    def storm_length_s(self) -> float:
        return (self.j.storm_last_churn - self.j.storm_since) / 1000.0


@dataclass(frozen=True, slots=True)
class VerdictRule:
    """One row of the verdict table: the rule's name, the verdict it gives (None: none; the Rebalance events tell
    the churn), when it is tried (``arrival``: as a churn rebalance arrives, before it is counted, on the episode
    it may end; ``rebalance``: once it is counted; ``time``: when a quiet period has passed; ``settle``: when an
    episode settles), its predicate over a :class:`_Case`, and the reason template. ``chain``: a row of
    single-member restarts, each added to the chain that makes a slow rolling restart (how many the episode holds).
    ``ghosts``: a restart called while killed instances are still in the group, which ones (their departure
    later completes it, and is no new churn)."""

    name: str
    verdict: str | None
    taken: str
    when: Callable[[_Case], bool]
    reason: str = ""
    chain: Callable[[_Episode], int] | None = None
    due: Callable[[_Case], int] | None = None  # a time row: when its verdict is due (the time it carries)
    ghosts: Callable[[_Case], set[str] | None] | None = None


_ROLLING = ("{c.ep.departures} of {c.members_before} restarted one at a time in {c.span_s:.0f} s, size back to "
            "{c.ep.size_now}{c.quiet}")
_FORMED = "group formed with {c.members_now} in {c.span_s:.0f} s{c.quiet}"

# The verdicts, in the order they are tried (docs/verdicts.md lists them in this order: a test checks it). The rows
# of each phase (``taken``) run as a decision table, first match wins; a row may rely on the rows of its phase above
# it not having matched.
VERDICTS: tuple[VerdictRule, ...] = (
    # Several members can leave in one rebalance: the flaps are counted on their own, not as a share of the
    # rebalances.
    VerdictRule("storm", "storm", "rebalance",
                lambda c: c.churn >= c.judge.config.storm_rebalances and c.flaps >= c.judge.config.storm_flaps,
                "{c.storm_count} rebalances changing membership in {c.storm_span_s:.0f} s; {c.flaps} flaps (a member "
                "leaving{c.or_silent} within {c.flap_lifetime_s} s of joining, or the same member leaving or "
                "restarting again){c.back_again}"),
    # Nobody is left to rebalance: once the group has stayed empty for the settle time (a crash loop's members
    # come back within seconds), the storm is over, not a whole quiet period later. Not while Kafka is away or
    # its consumers are rejoining: then nobody could come back.
    VerdictRule("storm_emptied", "storm_ended", "time",
                lambda c: c.empty and c.judge.away is None and c.at >= c.emptied_end,
                "no members for {c.settle_s} s after {c.j.storm_rebalances} rebalances in {c.storm_length_s:.0f} s",
                due=lambda c: c.emptied_end),
    VerdictRule("storm_ended", "storm_ended", "time", lambda c: c.at >= c.storm_quiet_end,
                "no membership change for {c.storm_quiet_s} s after {c.j.storm_rebalances} rebalances in "
                "{c.storm_length_s:.0f} s", due=lambda c: c.storm_quiet_end),
    # Called at the rebalance that brings the last new instance in, not a session timeout later when the last
    # ghost expires (see ``_restarted_beside_ghosts``); the ghosts' departure then ends it.
    VerdictRule("restarted_beside_ghosts", "rolling_restart", "rebalance", lambda c: c.restart_ghosts is not None,
                _ROLLING, ghosts=lambda c: c.restart_ghosts),
    # Every member is back: no need to wait for the settle time.
    VerdictRule("every_member_restarted", "rolling_restart", "rebalance", lambda c: c.restart_complete, _ROLLING),
    # Churn that did not reach a storm: no verdict.
    VerdictRule("churn", None, "settle", lambda c: bool(c.ep.flaps) and not c.judge._only_young_restarts(c.ep, c.j)),
    VerdictRule("rolling_restart", "rolling_restart", "settle",
                lambda c: c.judge._rolling_restart_shape(c.ep, c.j) and not c.shrank and c.ep.departures >= 2,
                _ROLLING),
    # One member restarted. A second one within the chain gap makes it a (slow) rolling restart.
    VerdictRule("single_restart", "rolling_restart", "settle",
                lambda c: c.judge._rolling_restart_shape(c.ep, c.j) and not c.shrank, _ROLLING, chain=lambda ep: 1),
    # Restarts beside their own ghosts (new instances joining, then the killed ones expiring): no change of
    # capacity. Each completed one counts towards a slow rolling restart.
    VerdictRule("restarts_beside_ghosts", "rolling_restart", "settle",
                lambda c: not c.ep.started_empty and c.ep.joins == c.ep.restart_joins
                and c.ep.departures == c.ep.replaced_departures and c.ep.replaced_departures > 0,
                _ROLLING, chain=lambda ep: ep.replaced_departures),
    # The group formed and now a member leaves: the formation is over even if it has not been quiet for the
    # settle time, and what follows is judged against the members it formed with (a deploy that begins seconds
    # after the group formed is still a rolling restart of those members).
    VerdictRule("formation_left", "formation", "arrival", lambda c: c.forming and c.change.left > 0, _FORMED),
    # The group has run unchanged since it formed and now grows by members of new names (not new instances of
    # present ones: a restart beside its killed instance): it had formed, and they add capacity. Without this a
    # group that consumes with one member and then grows one member every few seconds stays one formation for as
    # long as it grows (a scale-out an on-call engineer wants named).
    VerdictRule("formation_outgrown", "formation", "arrival",
                lambda c: c.forming and c.change.joined > 0 and c.change.left == 0 and c.formed_unchanged
                and c.change.new_names, _FORMED),
    VerdictRule("formation", "formation", "settle", lambda c: c.ep.started_empty and c.ep.departures == 0, _FORMED),
    # Nobody left, not even after the wait (joins beside a present member of the same name were additions); or
    # members left and others joined and the group ended larger.
    VerdictRule("scale_out", "scale_out", "settle",
                lambda c: not c.ep.started_empty and c.grew and (c.ep.departures == 0 or not c.ep.went_empty),
                "{c.ep.size_before} -> {c.members_now}{c.joined_too}{c.quiet}"),
    # Members only left; or members left and others joined and the group ended smaller (a scale-in whose members
    # were partly replaced).
    VerdictRule("scale_in", "scale_in", "settle",
                lambda c: c.shrank and ((c.ep.joins == 0 and c.ep.departures > 0)
                                        or (not c.ep.started_empty and not c.ep.went_empty)),
                "{c.ep.size_before} -> {c.members_now}{c.left_too}{c.stepwise}{c.quiet}"),
    VerdictRule("unchanged", None, "settle", lambda c: True),
)

REASONS = {r.verdict: r.reason for r in VERDICTS if r.verdict is not None and r.name == r.verdict}
_STORM = VERDICTS[0]


def _mark_stopped_flaps(departures: deque, stopped: Iterable[tuple[int, str]]) -> int:
    """Marks the departures in ``stopped`` (``(time, identity)``) as flaps; returns how many were not before."""
    wanted = Counter(tuple(e) for e in stopped)
    marked = 0
    for k, (t, ident, flap) in enumerate(departures):
        if not flap and wanted[(t, ident)] > 0:
            wanted[(t, ident)] -= 1
            departures[k] = (t, ident, True)
            marked += 1
    return marked


def _mark_flaps(window: deque, identity: str) -> int:
    """Marks every entry of ``identity`` in a window of ``(time, identity, flap)`` as a flap; returns how many
    were not marked before."""
    marked = 0
    for k, (t, ident, flap) in enumerate(window):
        if ident == identity and not flap:
            window[k] = (t, ident, True)
            marked += 1
    return marked


def _members(n: int) -> str:
    return f"{n} member" if n == 1 else f"{n} members"
