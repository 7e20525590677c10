"""Named, combinable workload scenarios. Each declares its topics and schedules its groups' lives.

Names (``--scenario``): see :data:`SCENARIOS`. ``all`` means every scenario except ``scale`` (the benchmark mode).
Every scenario uses its own topics and groups (prefixed with its name), so any combination runs side by side.
Times are simulated seconds from the start; the interesting events of every scenario happen within 120 s.

Scenarios with a real counterpart in ``shared/conformance/verdicts`` (Kafka 4.0, librdkafka 2.16 clients) are
calibrated against it: their clients commit, crash, restart and flap the way the recorded clients did, and
``tests/simulator/test_calibration.py`` holds their recordings to labels of the real recordings' shape. The
comment on each scenario says which recording and which observation each setting reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .clients import ConsumerConfig, SimConsumer, SimpleConsumer, TransactionalApp
from .topics import TopicSpec

__all__ = ["Scenario", "SCENARIOS", "resolve", "scenario_names"]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    topics: Callable  # (sim) -> list[(TopicSpec, backlog)]
    setup: Callable  # (sim) -> None: schedules the clients and actions


def _members(sim, n: int, group: str, topics, *, at_s: float = 0.0, stagger_s: float = 0.0, **kw) -> list:
    out = []
    for i in range(n):
        client_id = f"{group}-m{i + 1}"
        opts = dict(kw)
        if "{client_id}" in opts.get("metadata", ""):
            opts["metadata"] = opts["metadata"].format(client_id=client_id)
        cfg = ConsumerConfig(group=group, client_id=client_id, topics=tuple(topics), **opts)
        jitter = sim.rng.uniform(0, 0.5)
        out.append(sim.start_client(SimConsumer(sim, cfg), at_s + i * stagger_s + jitter))
    return out


# ---- steady ----------------------------------------------------------------------------------------------------

def _steady_topics(sim):
    return [(TopicSpec("steady-orders", 6, 20.0), 0), (TopicSpec("steady-payments", 3, 10.0), 0)]


def _steady(sim):
    t = ("steady-orders", "steady-payments")
    _members(sim, 3, "steady-range", t, assignor="range", commit="auto")
    _members(sim, 2, "steady-roundrobin", t, assignor="roundrobin", commit="sync", metadata="rr")
    _members(sim, 2, "steady-sticky", t, assignor="sticky", commit="async")


# ---- shared client behaviours of the verdict recordings ---------------------------------------------------------

def _restart_one_at_a_time(sim, members, first_s: float, every_s: float, down_s: float) -> None:
    """A rolling restart as an operator does it (rolling_restart_classic, kip848 k8-roll): SIGTERM (the member
    commits and closes), the new process for the same identity ``down_s`` later, the next member ``every_s`` after
    the previous one."""
    for i, m in enumerate(members):
        def restart(m=m):
            m.close()
            sim.sched.after(int(down_s * 1000), m.start)
        sim.at(first_s + every_s * i, restart)


def _flapper(sim, cfg: ConsumerConfig, *, first_s: float, until_s: float, live_s=(2.5, 4.0), down_s=(0.5, 1.0),
             kill_share: float = 1 / 3, after_assignment: bool = False, no_assignment_s: float = 15.0) -> None:
    """One member identity crash-looping: each process lives ``live_s`` (from its start, or from its first
    assignment when ``after_assignment``), then dies, and the next one starts ``down_s`` later, until ``until_s``.

    A death is a SIGKILL (``crash``: no commit, no LeaveGroup, a ghost member until the session times out) with
    probability ``kill_share``, else a clean close. Calibration: kip848_storm_and_rolling's flapper lived 2.5-4 s,
    was down 0.5-1 s and was SIGKILLed in 8 of 21 cycles; storm_crashloop's instances lived 2-6 s after their first
    assignment and gave up (clean close) when no assignment came within 15 s (a classic join phase waiting for a
    ghost's session timeout).
    """
    def cycle(t: float) -> None:
        c = SimConsumer(sim, cfg)
        sim.clients.append(c)
        kill = sim.rng.random() < kill_share
        live_ms = int(sim.rng.uniform(*live_s) * 1000)
        down = sim.rng.uniform(*down_s)

        def die() -> None:
            if not c.alive:
                return
            c.crash() if kill else c.close()
            nxt = sim.elapsed_ms / 1000 + down
            if nxt < until_s:
                sim.at(nxt, lambda: cycle(nxt))

        def give_up() -> None:
            if c.alive and not c.assigned:
                c.close()
                nxt = sim.elapsed_ms / 1000 + down
                if nxt < until_s:
                    sim.at(nxt, lambda: cycle(nxt))

        c.start()
        if after_assignment:
            c.on_first_assignment = lambda _c: sim.sched.after(live_ms, die)
            sim.sched.after(int(no_assignment_s * 1000), give_up)
        else:
            sim.sched.after(live_ms, die)

    sim.at(first_s, lambda: cycle(first_s))


# ---- lagging: consumers slower than the producers ---------------------------------------------------------------

def _lagging(sim):
    # slow_consumer: the slow member commits its processed position with librdkafka commit() every 2 s (changed
    # partitions, every partition advancing: the member interleaves its partitions, as _progress spreads capacity).
    _members(sim, 2, "lagging", ("lagging-clicks",), assignor="range", commit="changed", commit_interval_ms=2000,
             capacity=150.0)
    # The same consumers with librdkafka's default enable.auto.commit (every 5 s, changed partitions).
    _members(sim, 2, "lagging-autocommit", ("lagging-clicks",), assignor="range", commit="auto", capacity=150.0)


# ---- stalled: one member stops polling, leaves after max.poll.interval.ms, comes back later ----------------------

def _stalled(sim):
    ms = _members(sim, 3, "stalled", ("stalled-events",), assignor="range", commit="sync",
                  max_poll_interval_ms=30000)
    sim.at(20, ms[1].stall)
    sim.at(90, ms[1].resume)


# ---- poll-interval storm: one member's processing outlasts max.poll.interval.ms, again and again -----------------

# The corpus's maxpoll_evictions (Kafka 4.4, librdkafka): the member works 6 s, then one record takes 11 s to
# process with a 7 s max.poll.interval.ms, so it is thrown out, rejoins as a new member when the call returns and
# is thrown out again 6 s later. No process restarts; the other member keeps consuming.
POLL_STORM_S = (6.0, 11.0, 95.0)  # works, blocks, until
POLL_STORM_MAX_POLL_MS = 7000


def _poll_storm(sim):
    kw = dict(assignor="range", commit="changed", commit_interval_ms=1000)
    _members(sim, 1, "pollstorm", ("pollstorm-events",), **kw)
    blocker = sim.start_client(SimConsumer(sim, ConsumerConfig(
        group="pollstorm", client_id="pollstorm-blocker", topics=("pollstorm-events",),
        max_poll_interval_ms=POLL_STORM_MAX_POLL_MS, **kw)), 0.3)
    works, blocks, until = POLL_STORM_S
    t = works
    while t + blocks < until:
        sim.at(t, blocker.stall)
        sim.at(t + blocks, blocker.resume)
        t += blocks + works


# ---- scale-out: a consuming group grows one member at a time ------------------------------------------------------

# The corpus's scale_out: one member consumes for 20 s, then one more joins every 12 s up to five; nobody leaves.
SCALE_OUT_S = (20.0, 12.0, 4)  # first addition, interval, members added


def _scale_out(sim):
    kw = dict(assignor="range", commit="changed", commit_interval_ms=1000)
    _members(sim, 1, "scaleout", ("scaleout-events",), **kw)
    first, every, added = SCALE_OUT_S
    for i in range(added):
        sim.start_client(SimConsumer(sim, ConsumerConfig(group="scaleout", client_id=f"scaleout-m{i + 2}",
                                                         topics=("scaleout-events",), **kw)), first + i * every)


# ---- paused: a member pauses its partitions and re-commits the same offsets while lag grows ----------------------

PAUSED_S = (20.0, 100.0)  # the member pauses its partitions, resumes them


def _paused(sim):
    # stalled_consumer's stl-stall: commit() of every assigned partition every 5 s, two of them paused, so the same
    # offsets are committed again and again while their lag grows.
    ms = _members(sim, 2, "paused", ("paused-events",), assignor="range", commit="sync", commit_interval_ms=5000)
    sim.at(PAUSED_S[0], ms[0].hold_partitions)
    sim.at(PAUSED_S[1], ms[0].release_partitions)


# ---- stopped: every member closes; the group is Empty and its lag grows -----------------------------------------

def _stopped(sim):
    ms = _members(sim, 2, "stopped", ("stopped-logs",), assignor="roundrobin", commit="auto")
    for m in ms:
        sim.at(30, m.close)


# ---- idle, then stopped: an idle topic with live consumers, then consumers gone while production resumes ----------

IDLE_S = (30.0, 150.0, 170.0)  # the producer pauses, resumes; both members exit for good


def _idle_then_stop(sim):
    # idle_then_stop: 100 msg/s over 4 partitions, paused from 30 s to 150 s. idle-quiet commits with librdkafka
    # commit() every 1 s, so nothing at all while the topic is idle (real: 0 commit records in the idle window,
    # longest gap 119.6 s); idle-chatty commits every assigned partition explicitly every 5 s, so the same offsets
    # again and again while idle (real: 22 same-offset commits per partition). Both exit for good at 170 s (SIGTERM:
    # final commit, clean close) while production goes on.
    t = ("idle-orders",)
    quiet = _members(sim, 1, "idle-quiet", t, assignor="range", commit="changed")
    chatty = _members(sim, 1, "idle-chatty", t, assignor="range", commit="sync", commit_interval_ms=5000)
    pause, resume, gone = IDLE_S
    sim.at(pause, lambda: sim.set_rate("idle-orders", 0.0))
    sim.at(resume, lambda: sim.set_rate("idle-orders", 25.0))
    for m in quiet + chatty:
        sim.at(gone, m.close)


# ---- storm: a crash-looping member keeps a cooperative-sticky group rebalancing --------------------------------

STORM_FLAPPING_S = (5.0, 60.0)  # the flapper's first start and the time after which it is not restarted


def _storm(sim):
    # session.timeout.ms 10 s / heartbeat 1 s as storm_crashloop's members (a SIGKILLed ghost goes after 10 s).
    kw = dict(assignor="cooperative-sticky", commit="sync", heartbeat_interval_ms=1000, session_timeout_ms=10000)
    stable = _members(sim, 3, "storm", ("storm-orders",), **kw)
    for i, m in enumerate(stable):  # the storm ends with everyone leaving: the group's last, empty generation
        sim.at(114 + i, m.close)
    # The flapper behaves like storm_crashloop's instances: it lives 2-6 s after its first assignment, and 16 of 21
    # of those deaths were SIGKILLs or crashes without close (no LeaveGroup), so a ghost usually holds the next
    # join phase for up to its 10 s session (rebalances every ~10-14 s, as recorded).
    cfg = ConsumerConfig(group="storm", client_id="storm-flaky", topics=("storm-orders",), **kw)
    _flapper(sim, cfg, first_s=STORM_FLAPPING_S[0], until_s=STORM_FLAPPING_S[1], live_s=(2.0, 6.0),
             kill_share=16 / 21, after_assignment=True)


# ---- rolling restart: members restarted one after another (new member ids) ------------------------------------

ROLLING_RESTARTS_S = (40.0, 10.0, 2.0)  # first restart, between restarts, down time of each member


def _rolling(sim):
    # rolling_restart_classic: librdkafka commit() every 1 s (changed partitions) + on revoke + before close; from
    # 40 s each member gets SIGTERM (commit, close), its new process starts 2 s later, the next member 10 s later.
    ms = _members(sim, 3, "rolling", ("rolling-payments",), assignor="range", commit="changed")
    _restart_one_at_a_time(sim, ms, *ROLLING_RESTARTS_S)


# ---- static restart: KIP-345 member replaced within the session timeout; another one expires --------------------

def _static(sim):
    kw = dict(assignor="range", commit="sync", session_timeout_ms=10000, heartbeat_interval_ms=1000)
    a = sim.start_client(SimConsumer(sim, ConsumerConfig(group="static", client_id="static-s1",
                                                         topics=("static-orders",), instance_id="static-instance-1",
                                                         **kw)), 0.1)
    b = sim.start_client(SimConsumer(sim, ConsumerConfig(group="static", client_id="static-s2",
                                                         topics=("static-orders",), instance_id="static-instance-2",
                                                         **kw)), 0.2)
    sim.at(20, a.crash)
    a2 = SimConsumer(sim, ConsumerConfig(group="static", client_id="static-s1-restarted", topics=("static-orders",),
                                         instance_id="static-instance-1", **kw))
    sim.start_client(a2, 24)
    sim.at(60, b.close)  # a static member does not leave: it is expired after session.timeout.ms


# ---- partitions added ------------------------------------------------------------------------------------------

def _added(sim):
    _members(sim, 2, "added-classic", ("added-events",), assignor="range", commit="auto")
    _members(sim, 2, "added-kip848", ("added-events",), protocol="consumer", assignor=None, commit="auto")
    sim.at(40, lambda: sim.add_partitions("added-events", 8))


# ---- KIP-848 consumer groups -------------------------------------------------------------------------------------

def _kip848(sim):
    t = ("kip848-alpha", "kip848-beta")
    ms = _members(sim, 3, "kip848-uniform", t, protocol="consumer", assignor=None, commit="sync", stagger_s=10,
                  metadata="{client_id}:n=1")
    sim.at(50, ms[1].close)
    sim.at(70, ms[2].crash)  # fenced after group.consumer.session.timeout.ms (45 s), at 115 s: the group empties
    sim.at(110, ms[0].close)
    rs = _members(sim, 2, "kip848-range", t, protocol="consumer", assignor="range", commit="sync", stagger_s=5)
    sim.at(100, rs[0].close)
    sim.at(105, rs[1].close)


# ---- KIP-848 churn: a flapping member beside stable ones, and a rolling restart ----------------------------------

KIP848_FLAPPING_S = (10.0, 100.0)
KIP848_RESTARTS_S = (40.0, 10.0, 2.0)


def _kip848_churn(sim):
    # kip848_storm_and_rolling: group.protocol=consumer, server-side uniform assignor, librdkafka commit() every
    # 1 s + on revoke. k8-storm: 2 stable members and one identity flapping from 10 s to 100 s (lives 2.5-4 s, a
    # third SIGKILLed: a member until the 45 s session timeout; down 0.5-1 s). k8-roll: 3 members restarted one at a
    # time at 40 / 50 / 60 s, each new process 2 s after the clean close.
    t = ("kip848-churn-orders",)
    kw = dict(protocol="consumer", assignor=None, commit="changed")
    _members(sim, 2, "kip848-storm", t, at_s=2.0, **kw)
    cfg = ConsumerConfig(group="kip848-storm", client_id="kip848-storm-flapper", topics=t, **kw)
    _flapper(sim, cfg, first_s=KIP848_FLAPPING_S[0], until_s=KIP848_FLAPPING_S[1])
    ms = _members(sim, 3, "kip848-roll", t, at_s=2.0, **kw)
    _restart_one_at_a_time(sim, ms, *KIP848_RESTARTS_S)


# ---- transactional offset commits --------------------------------------------------------------------------------

def _transactional(sim):
    for group, protocol, assignor in (("txn-classic", "classic", "range"), ("txn-consumer", "consumer", None)):
        cfg = ConsumerConfig(group=group, client_id=f"{group}-consumer", topics=("txn-in",), protocol=protocol,
                             assignor=assignor, commit="none")
        app = TransactionalApp(sim, cfg, interval_ms=2000, end_delay_ms=sim.rng.randint(20, 150), abort_every=3)
        sim.clients.append(app)
        sim.at(sim.rng.uniform(0, 1), app.start)


# ---- deletion: offsets deleted for one topic, then whole groups deleted ------------------------------------------

def _deletion(sim):
    co = lambda: sim.coordinator
    ms = _members(sim, 2, "deletion-classic", ("deletion-a", "deletion-b"), assignor="range", commit="auto")
    k = _members(sim, 1, "deletion-kip848", ("deletion-a",), protocol="consumer", assignor=None, commit="auto")
    simple = SimpleConsumer(sim, "deletion-simple", (("deletion-a", 0), ("deletion-b", 1)), metadata="simple")
    sim.clients.append(simple)
    sim.at(0.3, simple.start)
    for m in ms + k:
        sim.at(30, m.close)
    sim.at(30, simple.close)
    sim.at(40, lambda: co().delete_offsets("deletion-classic", "deletion-b"))
    for gid in ("deletion-classic", "deletion-kip848", "deletion-simple"):
        sim.at(60, lambda gid=gid: co().delete_group(gid))


# ---- replay from earliest: a backlog consumed from the start ------------------------------------------------------

def _replay(sim):
    _members(sim, 1, "replay-earliest", ("replay-history",), assignor="range", commit="auto",
             auto_offset_reset="earliest", capacity=2000.0)


# ---- scale: thousands of groups for benchmarks -------------------------------------------------------------------

SCALE_TOPICS = 10
SCALE_PARTITIONS = 32


def _scale_topics(sim):
    return [(TopicSpec(f"scale-t{i}", SCALE_PARTITIONS, 10.0), 0) for i in range(SCALE_TOPICS)]


def _scale(sim):
    for g in range(sim.scale_groups):
        cfg = ConsumerConfig(group=f"scale-{g:05d}", client_id=f"scale-{g:05d}-m1", topics=(f"scale-t{g % SCALE_TOPICS}",),
                             assignor="range", commit="auto")
        sim.start_client(SimConsumer(sim, cfg), sim.rng.uniform(0, 5))


def _t(*specs):
    return lambda sim: list(specs)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("steady", "classic groups (range, roundrobin, sticky) keeping up; auto, sync and async commits",
             _steady_topics, _steady),
    Scenario("lagging", "groups consuming slower than their topic is produced (commit() every 2 s; auto-commit): "
             "lag grows steadily",
             _t((TopicSpec("lagging-clicks", 4, 100.0), 0)), _lagging),
    Scenario("stalled", "a member stops polling at 20 s, leaves on max.poll.interval.ms (30 s), resumes at 90 s",
             _t((TopicSpec("stalled-events", 6, 20.0), 0)), _stalled),
    Scenario("poll-interval-storm", "a member whose processing outlasts max.poll.interval.ms (7 s) every 17 s: "
             "thrown out and back again and again, no process restarts",
             _t((TopicSpec("pollstorm-events", 4, 40.0), 0)), _poll_storm),
    Scenario("scale-out", "one member consuming, then one more every 12 s from 20 s up to five",
             _t((TopicSpec("scaleout-events", 8, 40.0), 0)), _scale_out),
    Scenario("paused", "a member pauses its partitions at 20 s and re-commits the same offsets every 5 s while "
             "their lag grows; resumes them at 100 s",
             _t((TopicSpec("paused-events", 4, 20.0), 0)), _paused),
    Scenario("stopped", "every member closes at 30 s: the group is Empty and its lag grows",
             _t((TopicSpec("stopped-logs", 4, 20.0), 0)), _stopped),
    Scenario("idle-then-stop", "a topic idle from 30 s to 150 s under live consumers (one commits nothing while "
             "idle, one re-commits every 5 s); both exit for good at 170 s while production goes on",
             _t((TopicSpec("idle-orders", 4, 25.0), 0)), _idle_then_stop),
    Scenario("storm", "a flapping member (5-60 s, some deaths SIGKILLs) keeps a cooperative-sticky group "
             "rebalancing (with follow-up generations); everyone leaves at 114-116 s",
             _t((TopicSpec("storm-orders", 8, 20.0), 0)), _storm),
    Scenario("rolling-restart", "members restarted one by one at 40, 50, 60 s, each back 2 s later (new member "
             "ids)",
             _t((TopicSpec("rolling-payments", 6, 20.0), 0)), _rolling),
    Scenario("static-restart", "a static member crashes and is replaced in the same generation; another expires",
             _t((TopicSpec("static-orders", 6, 20.0), 0)), _static),
    Scenario("partitions-added", "a topic grows from 4 to 8 partitions at 40 s: classic and KIP-848 groups follow",
             _t((TopicSpec("added-events", 4, 20.0), 0)), _added),
    Scenario("kip848", "KIP-848 consumer groups (uniform, range): joins, revocation, leaves, a session expiry "
             "(70 s crash, fenced at 115 s); both groups end empty",
             _t((TopicSpec("kip848-alpha", 6, 20.0), 0), (TopicSpec("kip848-beta", 4, 10.0), 0)), _kip848),
    Scenario("kip848-churn", "KIP-848: a member flapping 10-100 s beside two stable ones (SIGKILLed ones stay 45 s); "
             "another group restarted one member at a time at 40, 50, 60 s",
             _t((TopicSpec("kip848-churn-orders", 6, 100.0 / 6), 0)), _kip848_churn),
    Scenario("transactional", "EOS apps (classic and KIP-848 groups): TxnOffsetCommit, COMMIT and ABORT markers",
             _t((TopicSpec("txn-in", 3, 20.0), 0)), _transactional),
    Scenario("deletion", "groups stop; OffsetDelete of one topic at 40 s; DeleteGroups (classic, KIP-848, simple) at 60 s",
             _t((TopicSpec("deletion-a", 4, 20.0), 0), (TopicSpec("deletion-b", 2, 20.0), 0)), _deletion),
    Scenario("replay-from-earliest", "a new group with auto.offset.reset=earliest drains a 20k-message backlog",
             _t((TopicSpec("replay-history", 4, 10.0), 20000)), _replay),
    Scenario("scale", "N one-member classic groups (--groups) auto-committing 32 partitions each: benchmarks",
             _scale_topics, _scale),
)}


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def resolve(names: Iterable[str] | str) -> list[Scenario]:
    """Scenario names (or comma lists; ``all`` = every scenario but scale) to scenarios, in the given order.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if isinstance(names, str):
        names = [names]
    out: list[Scenario] = []
    for item in names:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            picked = [s for s in SCENARIOS.values() if s.name != "scale"] if name == "all" else None
            if picked is None:
                if name not in SCENARIOS:
                    raise ValueError(f"unknown scenario {name!r}; known: all, {', '.join(SCENARIOS)}")
                picked = [SCENARIOS[name]]
            out.extend(s for s in picked if s not in out)
    if not out:
        raise ValueError("no scenario given")
    return out
