"""The rebalance judge on membership shapes: the storm shapes seen on real Kafka, and the shapes that must never be
called a storm (deploys, scale-outs, formation, static restarts). Driven through :class:`RebalanceJudge` directly
with the membership each rebalance leaves behind, so each case reads as a timeline."""

from __future__ import annotations

import pytest

from streaming.model import events as ev
from streaming.model.states import GroupType
from streaming.model.verdicts import RebalanceConfig, RebalanceJudge

T0 = 1_800_000_000_000
C = ev.RebalanceCause


class Group:
    """Feeds a judge the rebalances of one group, given as successive memberships ``{member id: identity}``."""

    def __init__(self, first: dict[str, str], t: float = 0, config: RebalanceConfig = RebalanceConfig()) -> None:
        self.judge = RebalanceJudge(config)
        self.members = dict(first)
        self.offset = 0
        self.events: list[ev.Event] = []
        self.judge.baseline("g", 0, T0 + int(t * 1000), first)

    def to(self, members: dict[str, str], t: float, silent: dict[str, float] | None = None) -> None:
        """The next rebalance at ``t`` s; ``silent`` maps members of the current membership that stopped following
        the group's epoch (consumer protocol) to the time of the first bump each missed."""
        self.offset += 1
        before, self.members = self.members, dict(members)
        joined = tuple(m for m in members if m not in before)
        left = tuple(m for m in before if m not in members)
        causes = tuple(c for c, on in ((C.MEMBER_JOINED, joined), (C.MEMBER_LEFT, left)) if on) or (C.UNKNOWN,)
        rb = ev.Rebalance("g", self.offset, T0 + int(t * 1000), GroupType.CLASSIC, self.offset + 1, self.offset,
                          causes, len(before), len(members), None, None, None, joined, left)
        silent_ms = {m: T0 + int(since * 1000) for m, since in (silent or {}).items()}
        self.events += self.judge.observe(rb, before, members, silent_ms)

    def wait(self, t: float) -> None:
        self.events += self.judge.tick(T0 + int(t * 1000))

    def restart_one_by_one(self, names: tuple[str, ...], instance: int, start: float, away: float,
                           every: float) -> float:
        """Each named member (``crew`` ids) leaves, and its ``instance``-th instance joins ``away`` s later; the
        next leaves ``every`` s after the previous one left. Returns the time after the last."""
        t = start
        for name in names:
            members = {m: i for m, i in self.members.items() if m != f"{name}-{instance - 1}"}
            self.to(members, t)
            self.to({**members, f"{name}-{instance}": f"{name}@h"}, t + away)
            t += every
            self.wait(t - 1)
        return t

    def expire(self, members: dict[str, str], expiries: list[tuple[float, str]], until: float) -> None:
        """Removes from ``members`` the killed instances (``(expiry s, member id)``) whose session expired by
        ``until``, one rebalance each."""
        for at, mid in sorted(e for e in expiries if e[0] <= until):
            members.pop(mid)
            self.to(dict(members), at)
            expiries.remove((at, mid))

    def verdicts(self) -> list[tuple[str, float]]:
        return [(e.verdict, (e.timestamp - T0) / 1000) for e in self.events]


def crew(*names: str, gen: int = 0) -> dict[str, str]:
    return {f"{n}-{gen}": f"{n}@h" for n in names}


def test_three_members_crash_looping_from_formation_is_a_storm():
    """Every ~14 s all three instances are replaced (crashes, ghosts expiring): a storm by the 3rd rebalance."""
    g = Group(crew("m1", "m2", "m3"), t=2)
    for k in range(1, 7):
        g.to(crew("m1", "m2", "m3", gen=k), 2 + 14 * k)
    g.wait(2 + 14 * 6 + 60)
    # formed when the first member left; a storm at the 3rd rebalance: members keep leaving 14 s after joining
    assert g.verdicts()[:2] == [("formation", 16), ("storm", 44)]
    assert [v for v, _ in g.verdicts()] == ["formation", "storm", "storm_ended"]


def test_one_member_restarting_every_3_s_is_a_storm():
    """A member of a stable group of 3 restarts every ~3 s for 45 s (each instance a new member id)."""
    g = Group(crew("a", "b", "f"), t=0)
    g.wait(60)  # formation settles
    t = 60.0
    for k in range(1, 16):
        g.to({**crew("a", "b"), f"f-{k}": "f@h"}, t)
        t += 3
    verdicts = g.verdicts()
    assert [v for v, _ in verdicts] == ["formation", "storm"]
    assert verdicts[1][1] <= 66  # the 2nd replacement that left after 3 s


def test_flapping_with_a_default_client_id_is_caught_by_lifetimes():
    """All members share client.id "rdkafka" on one host, so identities say nothing; lifetimes still do."""
    g = Group({"a": "rdkafka@h", "b": "rdkafka@h"}, t=0)
    g.wait(30)
    for k in range(6):
        g.to({"a": "rdkafka@h", "b": "rdkafka@h", f"x{k}": "rdkafka@h"}, 40 + 10 * k)
        g.to({"a": "rdkafka@h", "b": "rdkafka@h"}, 44 + 10 * k)
    assert g.verdicts() == [("formation", 20), ("storm", 54)], g.verdicts()


def test_rolling_restart_one_at_a_time_is_reported_when_everyone_is_back():
    g = Group(crew("m1", "m2", "m3", "m4"), t=0)
    g.wait(40)
    members = crew("m1", "m2", "m3", "m4")
    t = 40.0
    for i, name in enumerate(("m1", "m2", "m3", "m4")):
        members.pop(f"{name}-0")
        g.to(dict(members), t)
        members[f"{name}-1"] = f"{name}@h"
        g.to(dict(members), t + 3)
        t += 10
    assert g.verdicts() == [("formation", 20), ("rolling_restart", 73)]


@pytest.mark.parametrize("start, away, every", [
    (100.0, 40, 70),  # away 40 s, the next 30 s after: episodes settle one by one, the 2nd makes the chain
    (60.0, 70, 80),  # away 70 s (a slow JVM start, a static member past its session), the next 10 s after it is back
])
def test_slow_rolling_restart_is_one_rolling_restart_never_a_scale_in_or_out(start, away, every):
    """Each of 3 pods restarts once, one at a time, slowly: one rolling restart, reported once."""
    g = Group(crew("p1", "p2", "p3"), t=0)
    g.wait(40)
    t = g.restart_one_by_one(("p1", "p2", "p3"), 1, start, away=away, every=every)
    g.wait(t + 300)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"]


def test_scale_out_and_scale_in():
    g = Group(crew("a", "b"), t=0)
    g.wait(30)
    g.to(crew("a", "b", "c"), 100)
    g.to(crew("a", "b", "c", "d"), 105)
    g.wait(126)
    g.to(crew("a", "b"), 300)
    g.wait(479)
    assert g.verdicts() == [("formation", 20), ("scale_out", 125)]  # still waiting for c and d to come back
    g.wait(480)
    assert g.verdicts() == [("formation", 20), ("scale_out", 125), ("scale_in", 480)]


def test_a_scale_in_followed_by_a_larger_scale_out_within_the_return_wait_is_one_scale_out():
    """4 -> 2, then three new members 100 s later: the group grew, whatever happened in between."""
    g = Group(crew("a", "b", "c", "d"), t=0)
    g.wait(30)
    g.to(crew("a", "b"), 100)
    g.to({**crew("a", "b"), **crew("x", "y", "z")}, 200)
    g.wait(400)
    verdicts = [e for e in g.events if e.verdict != "formation"]
    assert [(e.verdict, (e.timestamp - T0) / 1000) for e in verdicts] == [("scale_out", 220)]
    assert verdicts[0].reason == "4 -> 5 members, 2 left and 3 joined (no membership change in the 20 s since)"


def test_ghost_restarts_are_not_a_scale_out():
    """A killed member stays as a ghost until its session expires; its restart joins beside it (same identity).
    The group grew, but nobody was added: no scale-out."""
    g = Group(crew("a", "b"), t=0)
    g.wait(30)
    g.to({**crew("a", "b"), "b-1": "b@h"}, 100)
    g.wait(125)
    assert [v for v, _ in g.verdicts()] == ["formation"]


def test_group_stopped_and_started_again_is_not_a_rolling_restart():
    g = Group(crew("a"), t=0)
    g.wait(30)
    g.to({}, 60)
    g.to(crew("a", gen=1), 80)
    g.wait(200)
    assert g.verdicts() == [("formation", 20), ("scale_in", 80), ("formation", 100)], g.verdicts()


def test_verdict_state_survives_a_round_trip():
    g = Group(crew("a", "b", "f"), t=0)
    g.wait(30)
    for k in range(1, 5):
        g.to({**crew("a", "b"), f"f-{k}": "f@h"}, 30 + 3 * k)
    assert g.judge.counters("g").storm_active
    restored = RebalanceJudge(g.judge.config)
    restored.load_state(g.judge.to_state())
    assert restored.to_state() == g.judge.to_state()
    assert restored.counters("g").storms == 1 and restored.counters("g").storm_active


def test_rolling_restart_where_old_instances_linger_until_their_session_expires():
    """Killed without leaving: each new instance joins beside its ghost, the ghost expires 45 s later. Neither
    the joins are a scale-out nor the expiries a scale-in; two completed restarts make a rolling restart."""
    g = Group(crew("a", "b", "c"), t=0)
    g.wait(30)
    members = crew("a", "b", "c")
    t = 100.0
    for name in ("a", "b", "c"):
        members[f"{name}-1"] = f"{name}@h"
        g.to(dict(members), t)
        members.pop(f"{name}-0")
        g.to(dict(members), t + 45)
        t += 120
        g.wait(t - 1)
    g.wait(t + 200)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"]


def test_scale_out_with_shared_client_ids_is_still_a_scale_out():
    g = Group({"a": "rdkafka@h", "b": "rdkafka@h"}, t=0)
    g.wait(30)
    g.to({"a": "rdkafka@h", "b": "rdkafka@h", "c": "rdkafka@h"}, 100)
    g.wait(130)
    assert g.verdicts()[-1] == ("scale_out", 120)


@pytest.mark.parametrize("shared", [False, True], ids=["own-names", "one-shared-name"])
def test_whole_group_killed_soon_after_each_assignment_is_a_storm_one_session_timeout_apart(shared):
    """Classic, 3 members at the default 45 s session, each process killed a few seconds after it gets partitions
    and restarted at once. The restarts wait in the pending rebalance until the ghosts expire, so the log shows
    only a generation every ~47 s, each replacing the whole group, its members never older than one such period,
    and no departure within the flap lifetime. Being replaced wholesale again within a minute of joining is the
    loop; with one shared client id (Java's default in separate JVMs) as much as with names of their own."""
    def gen(k: int) -> dict[str, str]:
        return {f"m{i}-{k}": "consumer-g-1@h" if shared else f"m{i}@h" for i in range(3)}

    g = Group(gen(0), t=3)
    g.to(gen(1), 53)  # the first instances, killed at 6-9 s, expired; their successors joined meanwhile
    g.to(gen(2), 100)  # the same again
    g.to({**gen(2), "x-0": "x@h" if not shared else "consumer-g-1@h"}, 105)  # another member added
    g.wait(400)
    assert g.verdicts() == [("formation", 23), ("storm", 105), ("storm_ended", 199)]


def test_whole_group_replaced_at_once_is_a_storm_only_when_it_happens_again_soon():
    """Killing every member at once and starting new ones (a deploy without a rolling strategy, or a node lost)
    replaces the whole group in one generation: once is no storm, even a minute after the group formed, nor is a
    second time minutes later. Replaced again within a minute of joining, the new members were a crash loop."""
    g = Group(crew("a", "b", "c"), t=0)
    g.to(crew("a", "b", "c", gen=1), 55)  # members 55 s old, replaced together: not young enough
    g.to(crew("a", "b", "c", gen=2), 300)  # again, minutes later
    g.to({**crew("a", "b", "c", gen=2), "d-0": "d@h"}, 320)
    g.wait(700)
    assert g.verdicts() == [("formation", 20), ("scale_out", 340)], g.verdicts()  # 3 -> 4 members, settled 20 s on
    g.to(crew("a", "b", "c", gen=3), 720)
    g.to(crew("a", "b", "c", gen=4), 767)  # gen 3 replaced 47 s after joining
    g.to({**crew("a", "b", "c", gen=4), "d-1": "d@h"}, 770)
    assert g.verdicts() == [("formation", 20), ("scale_out", 340), ("storm", 767)], g.verdicts()


def test_a_deploy_right_after_formation_one_at_a_time_is_a_rolling_restart():
    """Members 40 s old restarted one at a time, each leave and join in one generation (the new process joins
    while the rebalance its leave began is pending): young members replaced, but one at a time, as deploys do."""
    g = Group(crew("a", "b", "c"), t=0)
    g.wait(30)
    for k, name in enumerate(("a", "b", "c")):
        members = {m: i for m, i in g.members.items() if m != f"{name}-0"}
        g.to({**members, f"{name}-1": f"{name}@h"}, 40 + 10 * k)
    g.wait(200)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"], g.verdicts()


def test_a_deploy_seconds_after_formation_is_a_rolling_restart():
    """The group forms and a deploy restarts its members one at a time 12 s later, 10 s apart: the first one leaves
    younger than the flap lifetime. The formation ends at that first departure, and one young departure of a
    member whose new instance stays does not veto the rolling restart (nor make a storm)."""
    g = Group(crew("a", "b", "c", "d"), t=0)
    g.restart_one_by_one(("a", "b", "c", "d"), 1, start=12, away=2, every=10)
    g.wait(200)
    assert g.verdicts() == [("formation", 12), ("rolling_restart", 44)], g.verdicts()


def test_classic_members_killed_one_by_one_are_a_rolling_restart_when_all_are_back():
    """Classic group, members SIGKILLed 10 s apart and started again 2 s later (45 s sessions). The first ghost
    holds the join phase; the others had rejoined it before they were killed, so the generation that completes
    when the first expires admits all four new instances beside three ghosts, which expire a session later.
    Every member has come back once: a rolling restart, called when they are all in, and their ghosts leaving
    is its end, not another verdict."""
    g = Group(crew("a", "b", "c", "d"), t=0)
    g.wait(60)
    ghosts = {m: i for m, i in crew("b", "c", "d").items()}
    g.to({**ghosts, **crew("a", "b", "c", "d", gen=1)}, 104)  # a-0 expired; b-0, c-0, d-0 carried
    assert g.verdicts() == [("formation", 20), ("rolling_restart", 104)], g.verdicts()
    g.to(crew("a", "b", "c", "d", gen=1), 149)  # the carried ghosts expire together
    g.wait(400)
    assert g.verdicts() == [("formation", 20), ("rolling_restart", 104)], g.verdicts()


def test_consumer_protocol_members_killed_one_by_one_are_a_rolling_restart_before_the_last_ghost_goes():
    """KIP-848: each killed member stays until its 45 s session expires, beside its new instance (one epoch each).
    Once every member has a new instance and a first ghost has gone, the restart is called: not 45 s after the
    last kill."""
    g = Group(crew("a", "b", "c", "d"), t=0)
    g.wait(60)
    members = crew("a", "b", "c", "d")
    events = []
    for k, name in enumerate("abcd"):
        events += [(62 + 10 * k, f"{name}-1", f"{name}@h"), (105 + 10 * k, f"{name}-0", None)]
    for t, mid, ident in sorted(events):
        if ident is None:
            members.pop(mid)
        else:
            members[mid] = ident
        g.to(dict(members), t)
    g.wait(400)
    assert g.verdicts() == [("formation", 20), ("rolling_restart", 105)], g.verdicts()


def test_crash_loop_with_long_session_timeouts_is_a_storm_by_identity():
    """Each killed instance lingers 45 s (default session timeout) beside its restart, so every departure comes
    ~50 s after its join: lifetimes alone see no flap, but the same identities leaving a 3rd time do."""
    g = Group(crew("m1", "m2"), t=0)
    g.wait(30)
    members = crew("m1", "m2")
    t = 60.0
    for k in range(1, 5):
        for name in ("m1", "m2"):
            members[f"{name}-{k}"] = f"{name}@h"
        g.to(dict(members), t)
        for name in ("m1", "m2"):
            members.pop(f"{name}-{k - 1}")
        g.to(dict(members), t + 50)
        t += 55
    assert g.verdicts() == [("formation", 20), ("storm", 170)], g.verdicts()


def _killed_crash_loop(g: "Group", start: float, names: int) -> float:
    """Consumer protocol: a new member (a new name each time) joins every 4 s and is killed 3 s later; every killed
    one stays a member until its 45 s session expires, having followed no epoch bump after its kill. Each
    rebalance passes the members silent for 20 s or more. Returns the time of the last rebalance."""
    members = dict(g.members)
    joined: dict[str, float] = {}
    t = start
    events = []  # (time, member, joins?)
    for k in range(names):
        events += [(start + 4 * k, f"x{k}", True), (start + 4 * k + 48, f"x{k}", False)]
    for t, mid, joins in sorted(events):
        if joins:
            members[mid] = f"{mid}@h"
            joined[mid] = t
        else:
            members.pop(mid)
        # a killed member missed the first bump after its kill (3 s after joining): the next join, 1 s later
        silent = {m: joined[m] + 4 for m in g.members if m in joined and t - (joined[m] + 4) >= 20}
        g.to(dict(members), t, silent)
    return t


def test_consumer_protocol_members_killed_young_under_new_names_are_a_storm_while_it_runs():
    """Every departure is a session expiry 48 s after the join and no name comes back: neither lifetimes nor
    identities show a flap. The members' silence does: the storm is called once two went silent young, 20 s after
    the second one's missed bump, not 45 s later when sessions expire, and their departures count no more."""
    g = Group(crew("a", "b"), t=0)
    g.wait(30)
    _killed_crash_loop(g, 40.0, 15)
    assert g.verdicts()[:2] == [("formation", 20.0), ("storm", 68.0)], g.verdicts()
    storm = next(e for e in g.events if e.verdict == "storm")
    assert "going silent" in storm.reason and "; 2 flaps (" in storm.reason, storm.reason
    j = g.judge.groups["g"]
    assert not j.silenced  # every silent member has left since: each flap moved to the departures
    assert [f for _, _, f in j.departures] == [True] * 15  # one flap per killed member, not two


def test_without_their_silence_the_same_loop_is_no_storm():
    """The judge given no silence (a classic group, or the build before silence was read) sees members that each
    lived 48 s under a name never seen again: no storm; this is what the silence adds."""
    g = Group(crew("a", "b"), t=0)
    g.wait(30)
    original = g.to
    g.to = lambda members, t, silent=None: original(members, t)  # type: ignore[method-assign]
    _killed_crash_loop(g, 40.0, 15)
    assert g.verdicts() == [("formation", 20)], g.verdicts()


def test_a_member_going_silent_long_after_it_joined_is_no_flap():
    """A deploy that kills members one at a time (kill -9, consumer protocol): each old member goes silent, its
    replacement joins at once, and the ghost leaves when its session expires. The members had been there for
    minutes: a rolling restart, never a storm."""
    g = Group(crew("a", "b", "c", "d"), t=0)
    g.wait(30)
    members = crew("a", "b", "c", "d")
    for k, name in enumerate("abcd"):
        t = 300.0 + 10 * k
        members[f"{name}-1"] = f"{name}@h"
        g.to(dict(members), t + 1, {m: 300.0 + 10 * j + 1 for j, m in enumerate(("a-0", "b-0", "c-0", "d-0"))
                                    if m in members and t + 1 - (300.0 + 10 * j + 1) >= 20})
    for k, name in enumerate("abcd"):
        t = 346.0 + 10 * k
        members.pop(f"{name}-0")
        g.to(dict(members), t, {f"{name}-0": 300.0 + 10 * k + 1})
    g.wait(600)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"], g.verdicts()


def test_a_deploy_after_a_storm_ended_is_a_rolling_restart_not_a_new_storm():
    g = Group(crew("a", "b", "f"), t=0)
    g.wait(30)
    for k in range(1, 6):
        g.to({**crew("a", "b"), f"f-{k}": "f@h"}, 30 + 3 * k)
    g.wait(200)  # quiet for a minute: the storm ended
    members = {**crew("a", "b"), "f-5": "f@h"}
    t = 300.0
    for name, old in (("a", "a-0"), ("b", "b-0"), ("f", "f-5")):
        members.pop(old)
        g.to(dict(members), t)
        members[f"{name}-new"] = f"{name}@h"
        g.to(dict(members), t + 3)
        t += 10
    assert [v for v, _ in g.verdicts()] == ["formation", "storm", "storm_ended", "rolling_restart"]


def test_scale_out_from_one_member_with_a_shared_client_id():
    """Consumers on one host with the client's default id (``rdkafka``, or Java's ``consumer-<group>-1`` in every
    JVM): the second member joins beside the first under the same name. That could be a restart beside its ghost,
    so the judge waits for the first one to expire; it stays, so the join was an addition."""
    g = Group({"a": "rdkafka@h"}, t=0)
    g.wait(30)
    g.to({"a": "rdkafka@h", "b": "rdkafka@h"}, 100)
    g.wait(219)
    assert [v for v, _ in g.verdicts()] == ["formation"]  # still waiting: a ghost would expire within this
    g.wait(300)
    assert g.verdicts()[-1] == ("scale_out", 220)


def test_two_members_sharing_a_client_id_deployed_again_and_again_is_never_a_storm():
    """Both members run as ``rdkafka@h`` for minutes; three deploys in eight minutes each restart them one at a
    time (clean leave, new process 5 s later). The shared name's departures are not one member leaving again."""
    g = Group({"a0": "rdkafka@h", "b0": "rdkafka@h"}, t=0)
    g.wait(30)
    members = {"a0": "rdkafka@h", "b0": "rdkafka@h"}
    for k, t in enumerate((120.0, 300.0, 480.0), start=1):
        for name in ("a", "b"):
            members.pop(f"{name}{k - 1}")
            g.to(dict(members), t)
            members[f"{name}{k}"] = "rdkafka@h"
            g.to(dict(members), t + 5)
            t += 15
        g.wait(t + 60)
    assert g.verdicts() == [("formation", 20), ("rolling_restart", 140), ("rolling_restart", 320),
                              ("rolling_restart", 500)], g.verdicts()


def test_crash_loop_of_killed_instances_that_linger_as_ghosts_is_a_storm_while_it_runs():
    """KIP-848: a member is killed 7 s after every start and never leaves; each instance stays until its session
    expires 45 s later, so no departure comes within the flap lifetime and ghosts of one name pile up. The same
    identity coming back beside its own ghost again and again is the storm, called within a few restarts."""
    g = Group(crew("a", "b", "f"), t=0)
    g.wait(30)
    members = crew("a", "b", "f")
    expiries: list[tuple[float, str]] = [(60 + 45, "f-0")]
    t = 60.0
    for k in range(1, 12):
        t += 7
        g.expire(members, expiries, t)
        members[f"f-{k}"] = "f@h"
        g.to(dict(members), t)
        expiries.append((t + 7 + 45, f"f-{k}"))
    storms = [at for v, at in g.verdicts() if v == "storm"]
    assert storms and storms[0] <= 60 + 7 * 3, g.verdicts()  # at the third restart


def test_members_named_alike_killed_one_by_one_beside_their_ghosts_are_a_rolling_restart():
    """KIP-848, four processes all named ``consumer-g-1@h`` (Java's default client id, separate JVMs) formed a
    minute ago; a deploy kills them one at a time, 15 s apart, each new process joining at once beside the killed
    one, which expires 45 s later. New instances beside several established holders of a name are not one member
    restarting again and again: a rolling restart, never a storm."""
    g = Group({f"m{k}-0": "consumer-g-1@h" for k in range(4)}, t=0)
    g.wait(30)
    members = {f"m{k}-0": "consumer-g-1@h" for k in range(4)}
    expiries: list[tuple[float, str]] = []
    for k, t in enumerate((55.0, 70.0, 85.0, 100.0)):
        g.expire(members, expiries, t)
        members[f"m{k}-1"] = "consumer-g-1@h"
        g.to(dict(members), t)
        expiries.append((t + 45, f"m{k}-0"))
    g.expire(members, expiries, 400)
    g.wait(400)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"], g.verdicts()


def test_a_second_deploy_minutes_after_a_slow_one_is_reported_too():
    """Two slow deploys (each member restarted alone, 30 s apart), the second three minutes after the first (a
    rollback): once every member has restarted in a reported chain, the next restart begins the next deploy."""
    g = Group(crew("a", "b"), t=0)
    g.wait(30)
    g.restart_one_by_one(("a", "b"), 1, 120.0, away=5, every=30)
    g.restart_one_by_one(("a", "b"), 2, 300.0, away=5, every=30)
    g.wait(500)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart", "rolling_restart"], g.verdicts()


def test_one_member_restarting_again_and_again_is_never_a_rolling_restart():
    """One member of three is thrown out for exceeding max.poll.interval.ms every ~6 minutes and rejoins at once
    (a dynamic member: a new member id each time). Each restart alone looks like one step of a slow deploy; the
    same member again is a loop, not the next member."""
    g = Group({**crew("a", "b"), "c-0": "c@h"}, t=0)
    g.wait(30)
    for k in range(1, 5):
        t = 60.0 + 200 * k
        g.to(crew("a", "b"), t)
        g.to({**crew("a", "b"), f"c-{k}": "c@h"}, t + 1)
        g.wait(t + 150)
    assert g.verdicts() == [("formation", 20), ("storm", 660)], g.verdicts()  # its third departure in 10 min


def test_static_member_crash_looping_without_rebalances_is_not_a_rolling_restart():
    """A static member restarting every 5 s within its session timeout: the same instance each time, so no deploy;
    two different static members restarting one after the other still are."""
    judge = RebalanceJudge()
    judge.baseline("g", 0, T0, {"s1-0": "inst-1", "s2-0": "inst-2", "s3-0": "inst-3"})
    events = judge.tick(T0 + 30_000)
    for k in range(1, 8):
        events += judge.static_restart("g", k, T0 + 60_000 + 5_000 * k, f"s1-{k - 1}", f"s1-{k}")
    assert not [e for e in events if isinstance(e, ev.RollingRestart)]
    events = judge.static_restart("g", 20, T0 + 200_000, "s2-0", "s2-1")
    assert [type(e).__name__ for e in events] == ["RollingRestart"]


def test_a_storm_with_a_slow_rhythm_lasts_while_it_goes_on():
    """A member thrown out every 70 s (processing longer than a 60 s max.poll.interval.ms) and rejoining at once:
    a storm from its third departure on (the two before were the same loop), and it does not end between two of
    its cycles although each is longer than a quiet minute."""
    g = Group(crew("a", "b", "c"), t=0)
    g.wait(30)
    members = crew("a", "b", "c")
    for k in range(1, 12):
        t = 40.0 + 70 * k
        members.pop(f"c-{k - 1}")
        g.to(dict(members), t)
        members[f"c-{k}"] = "c@h"
        g.to(dict(members), t + 1)
        g.wait(t + 69)
    kinds = [v for v, _ in g.verdicts()]
    assert kinds.count("storm") == 1 and "storm_ended" not in kinds, g.verdicts()
    assert dict(g.verdicts())["storm"] == 40.0 + 70 * 3, "called at the third departure"
    g.wait(40 + 70 * 11 + 200)
    assert [v for v, _ in g.verdicts()][-1] == "storm_ended"


def test_consumer_protocol_group_forming_one_member_at_a_time_under_one_name_then_deployed():
    """KIP-848 forms a group one epoch per join; three processes with one client id on one host join one after
    another, and a deploy 40 s later restarts them one at a time (each new process beside the old one until it
    leaves). The formation's joins are not restarts: a rolling restart, never a storm."""
    g = Group({"m0": "app@h"}, t=0)
    g.to({"m0": "app@h", "m1": "app@h"}, 0.5)
    g.to({"m0": "app@h", "m1": "app@h", "m2": "app@h"}, 1.0)
    members = {"m0": "app@h", "m1": "app@h", "m2": "app@h"}
    for k in range(3):
        t = 40.0 + 15 * k
        members[f"m{k}-new"] = "app@h"
        g.to(dict(members), t)
        members.pop(f"m{k}")
        g.to(dict(members), t + 5)
    g.wait(300)
    assert [v for v, _ in g.verdicts()] == ["formation", "rolling_restart"], g.verdicts()


def test_an_active_storms_reason_follows_its_count():
    """A member flapping every 10 s: the storm is called at its 3rd rebalance, and what the group's latest verdict
    says (the reason `status` shows) goes on counting while the storm lasts, not frozen at its start."""
    g = Group(crew("a"), t=0)
    for k in range(1, 19):
        g.to({**crew("a"), f"f-{k}": "f@h"} if k % 2 else crew("a"), 10 * k)
    storm = next(e for e in g.events if e.verdict == "storm")
    assert storm.reason.startswith("4 rebalances changing membership in 30 s")
    counters = g.judge.counters("g")
    assert counters.storm_active and counters.last_verdict == "storm"
    assert counters.last_reason.startswith("18 rebalances changing membership in 170 s"), counters.last_reason


def test_a_storm_ends_when_every_member_has_left():
    """Nobody is left to rebalance: once the group has stayed empty for the settle time (20 s), the storm is over,
    not a whole quiet period (60 s here) after its last rebalance; a crash loop's members back sooner keep it."""
    g = Group(crew("a", "b"), t=0)
    for k in range(1, 6):
        g.to({**crew("a", "b"), f"f-{k}": "f@h"} if k % 2 else crew("a", "b"), 10 * k)
    assert g.judge.counters("g").storm_active
    g.to({}, 55)
    g.wait(70)
    g.to(crew("a", "b", gen=1), 71)  # back within 20 s: the same storm
    g.to({}, 80)
    g.wait(99)
    assert g.judge.counters("g").storm_active
    g.wait(100)
    assert [v for v, _ in g.verdicts()][-2:] == ["storm", "storm_ended"]
    ended = g.events[-1]
    assert ended.timestamp - T0 == 100_000 and ended.reason.startswith("no members for 20 s after ")
    assert not g.judge.counters("g").storm_active


def test_a_member_of_a_new_name_joining_a_group_unchanged_for_10_s_ends_its_formation():
    """The corpus's ``scale_out`` shape: one member, then one more every 12 s. The first newcomer arrives 12 s after
    the group formed (``formation_settle_ms``: 10 s), so the group formed with one member and the four after it
    are one scale-out, settled 20 s after the last of them joined (48 s + 20 s)."""
    g = Group(crew("a"), t=0)
    for k in range(1, 5):
        g.to(crew("a", *"bcde"[:k]), 12 * k)
    g.wait(67)
    assert g.verdicts() == [("formation", 12)], g.verdicts()
    g.wait(68)
    assert g.verdicts() == [("formation", 12), ("scale_out", 68)], g.verdicts()
    formed, grown = g.events
    assert (formed.members_after, grown.members_before, grown.members_after) == (1, 1, 5)


def test_a_member_joining_a_forming_group_within_10_s_is_part_of_its_formation():
    g = Group(crew("a"), t=0)
    g.to(crew("a", "b"), 8)
    g.wait(27)
    assert g.verdicts() == []
    g.wait(28)  # 20 s after the last join
    assert g.verdicts() == [("formation", 28)]
    assert g.events[0].members_after == 2


def test_a_new_instance_of_a_present_name_does_not_end_a_formation_however_late():
    """A second instance under the first member's name, 12 s in, is a restart beside its killed instance (or a
    second member named alike), not capacity added to a formed group: the formation goes on and settles 20 s
    later with both."""
    g = Group(crew("a"), t=0)
    g.to({**crew("a"), "a-1": "a@h"}, 12)
    g.wait(31)
    assert g.verdicts() == []
    g.wait(32)
    assert g.verdicts() == [("formation", 32)]
    assert g.events[0].members_after == 2


def test_a_group_rejoined_once_by_a_moved_coordinator_then_stopped_is_not_a_storm():
    """Seen live on a three-broker cluster (``test_coordinator_move``): a classic group forms from empty, then its
    coordinator is killed and the move takes longer than the members' session timeout, so every member gives up
    its member id on its own side and joins the new coordinator as a new member: one generation replaces the
    whole group, the old ids expiring. Two seconds later the group is stopped cleanly. No process ever crashed:
    one forced rejoin and a stop are no crash loop."""
    g = Group({}, t=0)
    g.to(crew("a", "b"), 1.4)  # the group forms: a rebalance from empty, as the job sees a group it watches form
    g.to(crew("a", "b", gen=1), 67.3)  # the coordinator moved: both rejoined under new ids, the old ones expired
    g.to({}, 69.5)  # the group is stopped
    g.wait(300)
    # The same history with the group stopped later is judged calm: the storm comes from the stop's timing alone.
    later = Group({}, t=0)
    later.to(crew("a", "b"), 1.4)
    later.to(crew("a", "b", gen=1), 67.3)
    later.to({}, 90)
    later.wait(300)
    assert "storm" not in [v for v, _ in later.verdicts()], later.verdicts()
    assert "storm" not in [v for v, _ in g.verdicts()], g.verdicts()


def test_a_group_stopped_young_that_comes_back_and_stops_again_is_a_storm():
    """The stop's young departures are held, not dropped: a whole group that keeps starting and stopping within
    the flap lifetime (a crash loop whose exception handler closes the consumers) is a storm when it comes back."""
    g = Group({}, t=0)
    g.to(crew("a", "b"), 1)
    g.to({}, 6)  # both leave 5 s after joining: the group stopped, nothing said of a storm
    g.wait(30)
    assert "storm" not in [v for v, _ in g.verdicts()], g.verdicts()
    g.to(crew("a", "b", gen=1), 40)  # it comes back: the stop was the first turn of a loop
    assert g.verdicts()[-1] == ("storm", 40), g.verdicts()
