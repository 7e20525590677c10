"""The shapes of the corpus: for each, what the clients do (``script``) and the verdicts that follows from what
they did (``labels``, from the client log only).

Why here and not in the driver: a shape is a claim ("this is what a crash loop looks like, and this is what an
SRE expects to be told"), so its script and its labels sit side by side where a reader can check one against the
other. Times in the labels come from the client log (when a signal was sent, when a member said it was assigned),
never from the script's intentions, and never from the recording.

Members use 6 s sessions (consumer protocol: the broker's 8 s), 1 s heartbeats and commit their positions every
second unless said otherwise; the producer writes 64-byte records round robin over the shape's topic.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Callable

from tests.realkafka.corpus_labels import ClientLog, at_least_once, expect, never, never_status, status

BAD = ("STOP", "STALL", "REWIND")  # what a healthy, committing, never-reset group must never show
KILLS = ("SIGKILL", "SIGUSR1")


@dataclass(frozen=True)
class Shape:
    prefix: str
    script: Callable
    labels: Callable[[ClientLog], tuple[list[dict], list[str]]]
    what: str


def _kills(log: ClientLog, group: str) -> list[int]:
    return sorted(e["t_ms"] for e in log.select("signal", group=group) if e["signal"] in KILLS)


def _healthy(group: str, from_ms: int, log: ClientLog, why: str, **kw) -> dict:
    return status(group, "*", "OK", from_ms, log.end, why, not_=BAD, **kw)


# ---- crash loops ------------------------------------------------------------------------------------------------

def crashloop_script(r, protocol: str = "classic", kills: int = 12, every: float = 4.0, settle: float = 55) -> None:
    topic = r.topic("t")
    r.produce(40)
    procs = [r.member(f"m{i}", "g", topic, protocol=protocol) for i in range(3)]
    r.sleep(8)
    for k in range(kills):
        i = k % 3
        r.signal(procs[i], signal.SIGKILL if k % 2 == 0 else signal.SIGUSR1)
        procs[i] = r.member(f"m{i}", "g", topic, protocol=protocol)
        r.sleep(every)
    r.sleep(settle)


def crashloop_labels(log: ClientLog, prefix: str, session_s: float) -> tuple[list[dict], list[str]]:
    g = f"{prefix}-g"
    kills = _kills(log, g)
    return [
        expect(g, "storm", kills[0], kills[-1] + 60_000, f"{len(kills)} kill -9 / crash exits of 3 members in "
               f"{(kills[-1] - kills[0]) / 1000:.0f} s, each restarted at once", event_ms=kills[0]),
        never(g, ["rolling_restart", "scale_out"], "every identity crash-loops at once; no capacity added"),
        never_status(g, ["REWIND"], "no offset was ever reset"),
        _healthy(g, kills[-1] + int((session_s + 30) * 1000), log, "3 members up after the last kill, consuming "
                 "and committing every second", event_ms=kills[-1], grace_s=session_s + 30),
    ], [f"sessions of {session_s:.0f} s: a killed member's ghost is gone after that"]


def storm_settles_script(r) -> None:
    crashloop_script(r, kills=9, every=4.0, settle=75)


def storm_settles_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    labels, notes = crashloop_labels(log, "ss", 6)
    kills = _kills(log, "ss-g")
    labels.append(expect("ss-g", "storm_ended", kills[-1], log.end, "nobody was killed after the last kill; the "
                         "3 members stayed up to the end", event_ms=kills[-1]))
    return labels, notes


def flapper_script(r) -> None:
    topic = r.topic("t", 20)
    r.produce(100)
    r.member("steady", "g", topic, count=20, assignor="cooperative-sticky")
    r.sleep(15)
    for _ in range(8):
        flap = r.member("flap", "g", topic, assignor="cooperative-sticky")
        r.sleep(4)
        r.signal(flap, signal.SIGUSR1)
        r.sleep(2)
    r.sleep(30)


def flapper_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "fl-g"
    kills = _kills(log, g)
    return [
        expect(g, "storm", kills[0], kills[-1] + 60_000, f"one member of 21 started and crashed {len(kills)} times, "
               "living about 4 s each time", event_ms=kills[0]),
        never(g, ["rolling_restart", "scale_out"], "one identity flapping; the 20 others never restarted"),
        never_status(g, ["REWIND"], "no offset was ever reset"),
    ], ["20 steady members run in one process (20 consumers, client ids steady-0..19)"]


# ---- max.poll.interval.ms ---------------------------------------------------------------------------------------

def maxpoll_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    r.member("steady", "g", topic)
    r.member("blocker", "g", topic, max_poll_ms=7000, block_after=6, block_for=11)
    r.sleep(95)


def maxpoll_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "mp-g"
    outs = [e["t_ms"] + e["max_poll_ms"] for e in log.select("blocked", group=g) if e["seconds"] * 1000 > e["max_poll_ms"]]
    # The member is back (unblocked) only a few seconds before it blocks again and is thrown out again: by its
    # second eviction it has been thrown out twice within seconds of coming back, which is what an on-call engineer
    # needs paged; waiting for a third eviction only pages later.
    return [
        expect(g, "storm", outs[1], log.end, f"the same member exceeded max.poll.interval.ms {len(outs)} times (blocked "
               "11 s with a 7 s poll interval), thrown out and back each time, no process restart", event_ms=outs[1]),
        never(g, ["rolling_restart", "scale_out"], "no process was restarted; no member added"),
        never_status(g, ["REWIND"], "no offset was ever reset"),
    ], ["from_ms is when the second eviction was due (block start + max.poll.interval.ms): the member is thrown "
        "out again within seconds of rejoining, a storm from then on"]


# ---- planned restarts -------------------------------------------------------------------------------------------

def rolling_script(r, members: int = 4, java: bool = False, **opts) -> None:
    topic = r.topic("t")
    r.produce(40)
    start = (lambda i: r.java(f"m{i}", "g", topic, **opts)) if java else (lambda i: r.member(f"m{i}", "g", topic, **opts))
    procs = [start(i) for i in range(members)]
    r.sleep(20)
    for i in range(members):
        r.signal(procs[i], signal.SIGTERM)
        procs[i] = start(i)
        r.wait_assigned(procs[i])
        r.sleep(8)
    r.sleep(35)


def rolling_labels(prefix: str, kind: str):
    def labels(log: ClientLog) -> tuple[list[dict], list[str]]:
        g = f"{prefix}-g"
        terms = log.times("signal", group=g)
        starts = [t for t in log.times("process_start", group=g) if t >= terms[0]]
        return [
            expect(g, "rolling_restart", terms[0], starts[-1] + 60_000, f"{len(terms)} {kind} members closed cleanly "
                   "and restarted one at a time, each new one assigned before the next went", event_ms=terms[0]),
            never(g, ["storm"], "a planned restart, one member at a time"),
            _healthy(g, log.t0 + 15_000, log, "members close cleanly and come back within seconds; the others keep "
                     "consuming and committing every second", transient=("WARN", 15)),
        ], []
    return labels


def static_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    within = [r.member(f"w{i}", "within", topic, instance_id=f"w{i}", session_ms=10000) for i in range(3)]
    after = [r.member(f"a{i}", "after", topic, instance_id=f"a{i}", session_ms=10000) for i in range(3)]
    r.sleep(20)
    r.signal(within[1], signal.SIGKILL)
    r.sleep(4)
    within[1] = r.member("w1", "within", topic, instance_id="w1", session_ms=10000)
    r.sleep(16)
    r.signal(after[1], signal.SIGKILL)
    r.sleep(20)
    after[1] = r.member("a1", "after", topic, instance_id="a1", session_ms=10000)
    r.sleep(35)


def static_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    out = []
    for g, back in (("st-within", "4 s, within its 10 s session"), ("st-after", "20 s, after its 10 s session")):
        out += [
            never(g, ["storm", "rolling_restart"], f"one static member killed once and back after {back}"),
            _healthy(g, log.t0 + 15_000, log, f"the killed member's partitions wait {back.split(',')[0]} at most "
                     "(less than a STOP time); everything else consumes and commits every second",
                     allowed=("WARN",)),
        ]
    return out, ["st-within: the same group.instance.id rejoins before its session expires (no rebalance at all)"]


def blue_green_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    blue = [r.member(f"blue{i}", "g", topic) for i in range(3)]
    r.sleep(25)
    green = [r.member(f"green{i}", "g", topic) for i in range(3)]
    for p in green:
        r.wait_assigned(p)
    r.sleep(8)
    for p in blue:
        r.signal(p, signal.SIGTERM, wait=False)
    for p in blue:
        r.reap(p)
    r.sleep(45)


def blue_green_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "bg-g"
    return [
        never(g, ["storm"], "a deploy: 3 new members joined, then the 3 old ones closed cleanly at once, once"),
        _healthy(g, log.t0 + 15_000, log, "the green members took over at once; consumption never stopped",
                 transient=("WARN", 15)),
    ], []


# ---- capacity ---------------------------------------------------------------------------------------------------

def scale_out_script(r) -> None:
    topic = r.topic("t", 8)
    r.produce(40)
    r.member("m0", "g", topic)
    r.sleep(20)
    for i in range(1, 5):
        r.member(f"m{i}", "g", topic)
        r.sleep(12)
    r.sleep(30)


def scale_out_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "so-g"
    adds = log.times("process_start", group=g)[1:]
    return [
        expect(g, "scale_out", adds[0], adds[-1] + 60_000, "one member consuming, then one more every 12 s up to 5",
               event_ms=adds[0]),
        never(g, ["storm", "rolling_restart"], "members were only added, none left"),
        _healthy(g, log.t0 + 15_000, log, "consumption goes on while members are added", transient=("WARN", 15)),
    ], []


def scale_in_script(r) -> None:
    topic = r.topic("t", 8)
    r.produce(40)
    procs = [r.member(f"m{i}", "g", topic) for i in range(5)]
    r.sleep(25)
    for p in procs[1:]:
        r.signal(p, signal.SIGTERM)
        r.sleep(12)
    r.sleep(30)


def scale_in_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "si-g"
    terms = log.times("signal", group=g)
    return [
        expect(g, "scale_in", terms[0], terms[-1] + 60_000, "5 members, then one closed cleanly every 12 s down to 1",
               event_ms=terms[0]),
        never(g, ["storm", "rolling_restart"], "members only left, cleanly, and none came back"),
        _healthy(g, log.t0 + 15_000, log, "the remaining members take the partitions over at once",
                 transient=("WARN", 15)),
    ], []


def autoscaler_script(r) -> None:
    topic = r.topic("t", 8)
    r.produce(40)
    procs = [r.member(f"m{i}", "g", topic) for i in range(2)]
    r.sleep(20)
    for i in range(2, 5):
        procs.append(r.member(f"m{i}", "g", topic))
        r.sleep(10)
    r.sleep(15)
    for p in procs[4:1:-1]:
        r.signal(p, signal.SIGTERM)
        r.sleep(10)
    r.sleep(30)


def autoscaler_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "as-g"
    adds = log.times("process_start", group=g)[2:]
    terms = log.times("signal", group=g)
    return [
        expect(g, "scale_out", adds[0], adds[-1] + 60_000, "2 members, one added every 10 s up to 5", event_ms=adds[0]),
        expect(g, "scale_in", terms[0], terms[-1] + 60_000, "then one closed cleanly every 10 s back to 2",
               event_ms=terms[0]),
        never(g, ["storm", "rolling_restart"], "members added, then removed cleanly; none restarted"),
        _healthy(g, log.t0 + 15_000, log, "consumption goes on throughout", transient=("WARN", 15)),
    ], []


# ---- statuses ---------------------------------------------------------------------------------------------------

def slow_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    r.member("slow", "g", topic, process_ms=100)
    r.sleep(100)


def slow_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "sl-g"
    first = log.first("assigned", group=g)
    return [
        status(g, "*", "WARN", first + 60_000, log.end, "the only member processes 10 records/s of the 40/s "
               "produced: lag grows, commits keep advancing", not_=BAD, event_ms=first, grace_s=60),
        never(g, ["storm"], "one member, never restarted"),
    ], []


def _held_partition(r, **behaviour) -> None:
    topic = r.topic("t")
    r.produce(40)
    r.member("m0", "g", topic, **behaviour)
    r.sleep(90)


def _held_labels(log: ClientLog, g: str, event: str, what: str) -> tuple[list[dict], list[str]]:
    e = log.select(event, group=g)[0]
    held = e.get("partition") or e["partitions"][0]
    topic = held.rpartition(":")[0]
    others = [f"{topic}:{p}" for p in range(4) if f"{topic}:{p}" != held]
    out = [status(g, held, "STALL", e["t_ms"] + 15_000, log.end, f"{what}; the member re-commits its offset every "
                  "second while records pile up behind it", not_=("OK", "REWIND"), event_ms=e["t_ms"], grace_s=15)]
    out += [status(g, p, "OK", log.t0 + 15_000, log.end, "consumed and committed every second by the same member",
                   not_=BAD) for p in others]
    out.append(never(g, ["storm"], "one member, never restarted"))
    return out, []


def poison_script(r) -> None:
    _held_partition(r, poison_after=25, poison_partition=0)


def paused_script(r) -> None:
    _held_partition(r, pause_after=25, pause_partition=1)


def stuck_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    r.member("ok", "g", topic)
    r.member("stuck", "g", topic, hang_after=25)
    r.sleep(95)


def stuck_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "sk-g"
    hang = log.first("hung", group=g)
    held = log.partitions_of("stuck", hang)
    topic = held[0].rpartition(":")[0]
    out = [status(g, p, "STOP", hang + 45_000, log.end, "its owner hangs in processing (no poll, no commit) while "
                  "its heartbeat thread keeps it in the group", not_=("OK", "REWIND"), event_ms=hang, grace_s=45)
           for p in held]
    out += [status(g, f"{topic}:{p}", "OK", log.t0 + 15_000, log.end, "the other member consumes and commits "
                   "every second", not_=BAD) for p in range(4) if f"{topic}:{p}" not in held]
    out.append(never(g, ["storm"], "no member left or joined after formation"))
    return out, ["max.poll.interval.ms is librdkafka's 300 s: longer than the recording, so the member stays"]


def stopped_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    p = r.member("m0", "g", topic)
    r.sleep(30)
    r.signal(p, signal.SIGTERM)
    r.sleep(70)


def stopped_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "sp-g"
    gone = log.first("signal", group=g)
    return [
        _healthy(g, log.t0 + 15_000, log, "consuming and committing every second") | {"to_ms": gone},
        status(g, "*", "STOP", gone + 40_000, log.end, "the only member closed for good while production goes on",
               not_=("OK", "REWIND"), event_ms=gone, grace_s=40),
        never(g, ["storm", "rolling_restart"], "one member, started once and stopped once"),
    ], []


def idle_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    r.member("m0", "g", topic)
    r.sleep(15)
    r.produce(0)
    r.sleep(85)


def idle_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "id-g"
    quiet = [e["t_ms"] for e in log.select("producer_rate") if e["rate_msgs_per_s"] == 0][0]
    return [
        status(g, "*", "OK", quiet + 10_000, log.end, "nothing produced; the member is alive, caught up and "
               "re-commits its position every second", not_=("WARN",) + BAD, event_ms=quiet, grace_s=10),
        never(g, ["storm"], "one member, never restarted"),
    ], []


def rewind_script(r) -> None:
    topic = r.topic("t")
    r.produce(40)
    p = r.member("m0", "g", topic)
    r.member("c0", "ctl", topic)
    r.sleep(35)
    r.signal(p, signal.SIGTERM)
    r.reset_offsets("g", topic)
    r.sleep(3)
    r.member("m0", "g", topic)
    r.sleep(45)


def rewind_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g, ctl = "rw-g", "rw-ctl"
    stop = log.first("signal", group=g)
    reset0, reset1 = log.first("reset_offsets_start"), log.first("reset_offsets_end")
    return [
        _healthy(g, log.t0 + 15_000, log, "consuming and committing every second") | {"to_ms": stop},
        at_least_once(g, "*", "REWIND", reset0, reset1 + 30_000, "kafka-consumer-groups --reset-offsets "
                      "--to-earliest --execute moved every committed offset back to the start", event_ms=reset0),
        _healthy(ctl, log.t0 + 15_000, log, "another group on the same topic, never reset"),
        never(g, ["storm"], "one member stopped once and restarted once"),
    ], []


def slow_commits_script(r) -> None:
    topic = r.topic("t")
    r.produce(20)
    r.member("m0", "g", topic, commit_every=25)
    r.sleep(115)


def slow_commits_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "sc-g"
    commits = log.times("commit", group=g)
    return [
        status(g, "*", "OK", commits[1], log.end, "keeps up with production and commits its position every 25 s "
               "(a job committing every few minutes, scaled down)", not_=BAD, event_ms=commits[1]),
        never(g, ["storm"], "one member, never restarted"),
    ], []


def burst_script(r) -> None:
    topic = r.topic("t")
    r.produce(20)
    r.member("m0", "g", topic, process_ms=10)
    r.sleep(30)
    r.burst(3000)
    r.sleep(80)


def burst_labels(log: ClientLog) -> tuple[list[dict], list[str]]:
    g = "bu-g"
    burst = log.first("producer_burst")
    return [
        _healthy(g, log.t0 + 15_000, log, "caught up before the burst") | {"to_ms": burst},
        status(g, "*", None, burst, log.end, "3000 records at once; the member (about 100 records/s) works "
               "through them, committing its advancing position every second", not_=BAD, event_ms=burst),
    ], []


SHAPES: dict[str, Shape] = {
    "crashloop_classic": Shape("cl", crashloop_script, lambda log: crashloop_labels(log, "cl", 6),
                               "3 classic members, one killed (-9 or crash exit) every 4 s and restarted, from "
                               "formation, 12 times; then 55 s quiet"),
    "crashloop_kip848": Shape("ck", lambda r: crashloop_script(r, protocol="consumer"),
                              lambda log: crashloop_labels(log, "ck", 8),
                              "the same with group.protocol=consumer members (8 s broker session)"),
    "storm_settles": Shape("ss", storm_settles_script, storm_settles_labels,
                           "9 kills in 36 s, then 75 s with the 3 members up"),
    "flapper_in_20": Shape("fl", flapper_script, flapper_labels,
                           "20 cooperative-sticky members; a 21st starts, lives 4 s, crashes, 8 times"),
    "maxpoll_evictions": Shape("mp", maxpoll_script, maxpoll_labels,
                               "one of 2 members blocks 11 s every 6 s with max.poll.interval.ms 7 s"),
    "rolling_eager": Shape("re", lambda r: rolling_script(r, assignor="range"), rolling_labels("re", "eager range"),
                           "4 members closed and restarted one at a time (next after the new one is assigned + 8 s)"),
    "rolling_cooperative": Shape("rc", lambda r: rolling_script(r, assignor="cooperative-sticky"),
                                 rolling_labels("rc", "cooperative-sticky"), "the same, cooperative-sticky"),
    "rolling_kip848": Shape("rk", lambda r: rolling_script(r, protocol="consumer"),
                            rolling_labels("rk", "consumer-protocol"), "the same, group.protocol=consumer"),
    "rolling_java": Shape("rj", lambda r: rolling_script(r, members=3, java=True),
                          rolling_labels("rj", "Java VerifiableConsumer"),
                          "3 Java consumers (range) restarted one at a time"),
    "static_members": Shape("st", static_script, static_labels,
                            "2 groups of 3 static members: one killed and back after 4 s (within the 10 s session); "
                            "one killed and back after 20 s (after it)"),
    "blue_green": Shape("bg", blue_green_script, blue_green_labels,
                        "3 members; 3 new ones join, then the 3 old ones close at once"),
    "scale_out": Shape("so", scale_out_script, scale_out_labels, "1 member consuming, one more every 12 s up to 5"),
    "scale_in": Shape("si", scale_in_script, scale_in_labels, "5 members, one closed every 12 s down to 1"),
    "autoscaler": Shape("as", autoscaler_script, autoscaler_labels, "2 -> 5 members (every 10 s), then back to 2"),
    "slow_consumer": Shape("sl", slow_script, slow_labels, "1 member processing 10 of the 40 records/s produced"),
    "poison_record": Shape("po", poison_script, lambda log: _held_labels(log, "po-g", "poison", "a poison record on "
                           "this partition is retried forever"), "1 member retries one record of partition 0"),
    "paused_partition": Shape("pa", paused_script, lambda log: _held_labels(log, "pa-g", "paused", "the member "
                              "paused this partition"), "1 member pauses partition 1 after 25 s"),
    "stuck_in_group": Shape("sk", stuck_script, stuck_labels, "one of 2 members hangs in processing, stays in the group"),
    "stopped_consumer": Shape("sp", stopped_script, stopped_labels, "the only member closes after 30 s for good"),
    "idle_topic": Shape("id", idle_script, idle_labels, "production stops after 15 s; the member stays"),
    "rewind": Shape("rw", rewind_script, rewind_labels,
                    "member stopped, offsets reset to earliest with kafka-consumer-groups, restarted; control group"),
    "slow_commits": Shape("sc", slow_commits_script, slow_commits_labels, "1 member committing every 25 s"),
    "burst_absorbed": Shape("bu", burst_script, burst_labels, "3000 records at once on a 20/s topic"),
}
