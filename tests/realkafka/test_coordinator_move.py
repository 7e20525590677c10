"""A group coordinator moving between brokers, live: ``groupscope run`` watching a three-broker Kafka cluster while
the broker that coordinates the watched groups is stopped, and later while the broker they moved to is killed.

The cluster (``KafkaCluster``): three brokers and a controller of their own, each a process. ``__consumer_offsets``
has three partitions, each on all three brokers, and a write needs two of them; the input topics and the heartbeat
topic are replicated the same way. So one broker away leaves every partition and every commit working: the cluster
stays available, only leaders move. The controller is never touched, so a move is the controller fencing a broker
and electing new leaders, not a controller election as well.

The groups: three groups, one per consumer kind (classic eager, classic cooperative-sticky, KIP-848), two members
each, committing every second. Their names hash to the same ``__consumer_offsets`` partition (Kafka's
``abs(hashCode) % partitions``, checked at import), so one broker is the coordinator of all three: the leader of
that partition, as ``DescribeConsumerGroups`` also says.

What happens:

1. the coordinator is stopped cleanly (SIGTERM: a controlled shutdown hands its leaderships over first); the
   partition's leadership, and with it the coordinator of the three groups, moves to another broker; the consumers
   find it and go on committing; the broker is started again and waits to be back in every partition's ISR;
2. the new coordinator is killed (``kill -9``): the controller fences it once its session lapses (4 s) and the
   leadership moves again; the consumers again find it; the broker is started again.

What the clients did is labelled first, from their own log: no consumer process stopped or restarted while the
job watched, and after each move every group committed again under the new coordinator. Whether a move made
members rejoin is in the log too: a classic member that hears nothing from a coordinator for its session timeout
(10 s) gives up its member id on its own side and joins the new coordinator as a new member. A quick move keeps
every member; a slow one (a busy machine delays the fencing) does not, and then those groups have rebalanced, for
real, once. Either way no consumer crashed, so the job must show:

* no ``RebalanceStorm`` event, no storm verdict, ``kafka_consumergroup_rebalance_storm_active`` never 1, and a
  ``storms`` count of 0 in the ``groups`` table, for any of the groups;
* no rebalance, member joining or member leaving in the moves' time for a group whose members kept their
  assignment;
* no partition of theirs STOP or STALL once the job is ready: not in ``group_events``, the ``lag`` table or
  ``/metrics``;
* the ``commits`` table holds every offset commit a ``read_committed`` consumer of ``__consumer_offsets`` saw at
  the end, each once, and nothing else below those ends: the job's reader followed the moved partition to its new
  leader twice;
* the job never exits, and ``/ready`` is 200 at the end.

The consumers keep running until the job is stopped: a group stopped right after a rejoin (members leaving seconds
after joining, the group empty) has a rule of its own, tested in ``tests/model/test_verdicts.py``.

Why: the single-broker outage tests (``test_outages``) take the whole cluster away. A coordinator move is the
everyday broker incident of a real cluster (a rolling upgrade moves every coordinator once); the consumers barely
notice, and neither should a monitor of them.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from typing import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol import partition_for
from tests.realkafka.broker import CLUSTER_SETTINGS, BrokerFailed, KafkaCluster
from tests.realkafka.clients import wait_until
from tests.realkafka.outage_recorder import ClientLog, Consumer, Member, topic_of
from tests.realkafka.test_kill_job import alive, free_port, is_offset_commit, kill_tree, start_job, write_job_config
from tests.realkafka.test_outages import Probe, stops_and_stalls, table
from tests.spark.harness import HEARTBEAT, read_committed

OFFSETS = "__consumer_offsets"
OFFSETS_PARTITIONS = int(CLUSTER_SETTINGS["offsets.topic.num.partitions"])
MEMBERS = (
    Member("move-eager", "eager-1"), Member("move-eager", "eager-2"),
    Member("moving-coop", "coop-1", assignor="cooperative-sticky"),
    Member("moving-coop", "coop-2", assignor="cooperative-sticky"),
    Member("move-848", "kip848-1", protocol="consumer"), Member("move-848", "kip848-2", protocol="consumer"),
)
GROUPS = sorted({m.group for m in MEMBERS})
#: The one offsets partition all the groups hash to: its leader is their coordinator.
SHARD = partition_for(GROUPS[0], OFFSETS_PARTITIONS)
assert all(partition_for(g, OFFSETS_PARTITIONS) == SHARD for g in GROUPS), "the groups must share a coordinator"
INPUT_PARTITIONS = 2
PRODUCE_EVERY_S = 0.2
HEARTBEAT_S = 1.0  # the job's heartbeat interval
MOVE_TIMEOUT_S = 60.0  # a move takes seconds; generous for a busy host
STEADY_S = 3.0  # commits under the new coordinator before the next step


@pytest.fixture
def cluster(newest_kafka_install, tmp_path) -> Iterator[KafkaCluster]:
    """Three brokers and a controller of the newest tested Kafka, for this test alone; stopped when it ends."""
    c = KafkaCluster(newest_kafka_install, tmp_path / "kafka")
    try:
        c.start()
    except BrokerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    yield c
    c.stop()


class Topics:
    """Leaders and in-sync replicas, from a metadata answer of whichever node answers."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, "socket.timeout.ms": 3000})

    def leader(self, topic: str = OFFSETS, partition: int = SHARD) -> int:
        try:
            return self.admin.list_topics(topic, timeout=3).topics[topic].partitions[partition].leader
        except Exception:  # noqa: BLE001 - no answer now: no leader known
            return -1

    def all_in_sync(self, topics: list[str], nodes: int) -> bool:
        """Every partition of ``topics`` has a leader and all ``nodes`` replicas in sync."""
        try:
            md = self.admin.list_topics(timeout=3)
            return all(p.leader >= 0 and len(p.isrs) == nodes for t in topics for p in md.topics[t].partitions.values())
        except Exception:  # noqa: BLE001
            return False

    def coordinators(self, groups: list[str]) -> dict[str, int] | None:
        """Each group's coordinator as ``DescribeConsumerGroups`` names it (None: not every group answered).

        A new client for each question: librdkafka's admin client (2.16) that described the groups before their
        coordinator moved times out on every later description, while a new one is answered at once."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0, "socket.timeout.ms": 3000})
        try:
            return {g: f.result(10).coordinator.id
                    for g, f in admin.describe_consumer_groups(groups, request_timeout=5).items()}
        except Exception:  # noqa: BLE001 - a node away: asked again
            return None


def produce(bootstrap: str, stop: threading.Event) -> None:
    """A record to every input partition every ``PRODUCE_EVERY_S``, so each commit has a new position to store."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 0, "message.timeout.ms": 120000})
    while not stop.wait(PRODUCE_EVERY_S):
        for g in GROUPS:
            for part in range(INPUT_PARTITIONS):
                try:
                    p.produce(topic_of(g), b"x", partition=part)
                except BufferError:
                    pass
        p.poll(0)
    p.flush(10)


def commits_since(log: ClientLog, t_ms: int) -> Counter:
    return Counter(e["group"] for e in list(log.events) if e["kind"] == "commit" and e["t_ms"] > t_ms)


def test_a_coordinator_moving_between_brokers_is_no_group_incident(cluster, tmp_path):
    began = time.monotonic()
    bootstrap = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [HEARTBEAT] + [topic_of(g) for g in GROUPS]
    for f in admin.create_topics([NewTopic(HEARTBEAT, 1, 3)]
                                 + [NewTopic(topic_of(g), INPUT_PARTITIONS, 3) for g in GROUPS]).values():
        f.result(30)
    meta = Topics(bootstrap)
    log = ClientLog(tmp_path / "client_events.jsonl")
    stop_load = threading.Event()
    producer = threading.Thread(target=produce, args=(bootstrap, stop_load), daemon=True)
    producer.start()
    consumers = [Consumer(m, bootstrap, log).start() for m in MEMBERS]

    port = free_port()
    delta = tmp_path / "delta"
    config = write_job_config(tmp_path, "coordinator-move", bootstrap, port, heartbeat_s=HEARTBEAT_S)
    job_log = tmp_path / "job.log"
    job = start_job(config, job_log)
    probe = Probe(port, GROUPS)
    tree: set[int] = set()
    incidents: list[dict] = []
    phases: dict[str, float] = {"job started": time.monotonic() - began}

    def job_tail() -> str:
        return f"; job log ends:\n{job_log.read_text(errors='replace')[-3000:]}"

    def moved(incident: dict) -> None:
        """Waits for the offsets partition's new leader and a commit of every group after the node went away."""
        gone = incident["node"]
        incident["leader"] = wait_until(lambda: (lambda n: n if n not in (-1, gone) else None)(meta.leader()),
                                        MOVE_TIMEOUT_S, f"a new leader of {OFFSETS}-{SHARD} after node {gone}")
        wait_until(lambda: set(commits_since(log, incident["down_ms"])) >= set(GROUPS), MOVE_TIMEOUT_S,
                   "a commit of every group under the new coordinator",
                   lambda: f"; commits since: {dict(commits_since(log, incident['down_ms']))}")
        incident["moved_ms"] = int(time.time() * 1000)
        incident["coordinators"] = wait_until(lambda: meta.coordinators(GROUPS), MOVE_TIMEOUT_S,
                                              "the groups' coordinators")
        time.sleep(STEADY_S)

    try:
        wait_until(lambda: set(commits_since(log, 0)) >= set(GROUPS), 90, "a commit of every group")
        first_ready = wait_until(lambda: probe.first(0, lambda s: s.ready == 200), 180, "the job's first /ready 200",
                                 job_tail)
        phases["job ready"] = time.monotonic() - began
        # Settled: a few heartbeats applied since ready, and every group on /metrics.
        wait_until(lambda: probe.first(first_ready.t + 3 * HEARTBEAT_S, lambda s: s.ready == 200
                                       and set(GROUPS) <= s.groups), 60, "the groups on /metrics", job_tail)

        # The coordinator of all three groups: the leader of their offsets partition, as Kafka says it is.
        first = meta.leader()
        named = wait_until(lambda: meta.coordinators(GROUPS), MOVE_TIMEOUT_S, "the groups' coordinators")
        assert first >= 1 and named == {g: first for g in GROUPS}, (first, named)

        # 1. A clean stop of the coordinator.
        node = cluster.node(first)
        incident = {"how": "stop", "node": first, "from_ms": int(time.time() * 1000)}
        log.write("broker_stop_begin", node=first)
        node.stop()
        log.write("broker_stop_done", node=first)
        incident["down_ms"] = int(time.time() * 1000)
        incidents.append(incident)
        moved(incident)
        node.start()
        log.write("broker_start_done", node=first)
        incident["back_ms"] = int(time.time() * 1000)
        wait_until(lambda: meta.all_in_sync(topics + [OFFSETS], 3), MOVE_TIMEOUT_S, "every replica back in sync")
        phases["stop and start"] = time.monotonic() - began

        # 2. The new coordinator killed.
        second = meta.leader()
        assert second not in (-1, first), second
        node = cluster.node(second)
        incident = {"how": "kill", "node": second, "from_ms": int(time.time() * 1000)}
        log.write("broker_kill_begin", node=second)
        node.kill()
        incident["down_ms"] = incident["from_ms"]
        incidents.append(incident)
        moved(incident)
        phases["killed and moved"] = time.monotonic() - began
        # Started again while the job catches up: its log recovery takes a while, and only the end waits on it.
        restart = threading.Thread(target=node.start, daemon=True)
        restart.start()

        # The end. The consumers go on: a group emptied now would be members leaving seconds after a rejoin, which
        # is what a crash loop looks like. What Kafka holds so far, as a read_committed consumer sees it, must be
        # in the commits table once the job has read that far.
        end_ms = int(time.time() * 1000)
        committed = read_committed(bootstrap, partitions=OFFSETS_PARTITIONS)
        ends = {p: max(o for q, o, *_ in committed if q == p) + 1 for p in {q for q, *_ in committed}}
        want = Counter((p, o) for p, o, _, key, _ in committed if is_offset_commit(key))

        def written() -> Counter:
            rows = table(delta, "commits")
            return Counter((r["shard"], r["offset"]) for r in rows if r["offset"] < ends.get(r["shard"], 0))

        got = wait_until(lambda: (lambda c: c if set(c) >= set(want) else None)(written()), 60,
                         "every committed offset commit in the commits table",
                         lambda: f"; missing {len(set(want) - set(written()))} of {len(want)}{job_tail()}")
        restart.join(120)
        assert node.running, f"node {second} did not start again: {node.log_tail()}"
        log.write("broker_start_done", node=second)
        incident["back_ms"] = int(time.time() * 1000)
        end_ready = wait_until(lambda: probe.first(time.time() - 1, lambda s: s.ready == 200), 30,
                               "/ready 200 at the end", job_tail)
        phases["caught up"] = time.monotonic() - began
        job_alive = job.poll() is None
        events = table(delta, "group_events")
        groups = {r["group_id"]: r for r in table(delta, "groups")}
        lag = table(delta, "lag")
    finally:
        probe.stop()
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
            try:
                job.wait(90)
            except Exception:  # noqa: BLE001 - it did not stop in time: its whole process group goes
                tree = kill_tree(job)
        for c in consumers:  # after the job: it never sees the groups empty
            c.stop("end")
        stop_load.set()
        producer.join(15)
        log.close()
    assert not [p for p in tree if alive(p)], "processes of the job outlived it"
    samples = probe.samples
    print(f"phases (s from start): { {k: round(v) for k, v in phases.items()} }; incidents: {incidents}")

    # ---- What the clients did (their own log), before anything the job says ----
    clients = list(log.events)
    starts = Counter(e["member"] for e in clients if e["kind"] == "process_start")
    early = [(e["member"], e["how"]) for e in clients if e["kind"] == "process_exit" and e["t_ms"] < end_ms]
    assert starts == Counter(m.name for m in MEMBERS), f"a consumer process restarted: {starts}"
    assert not early, f"a consumer process stopped while the job watched: {early}"
    for i in incidents:
        # The coordinator moved: the partition's leader is another node, and Kafka names it the groups' coordinator.
        assert i["leader"] != i["node"] and i["coordinators"] == {g: i["leader"] for g in GROUPS}, i
    # Groups whose members saw their assignment change from the first incident until the load ended: only these
    # may show a rebalance in that time (a member that rejoined under a new id is assigned again too).
    changes = [(round((e["t_ms"] - incidents[0]["from_ms"]) / 1000, 1), e["kind"], e["member"], e.get("member_id"))
               for e in clients if e["kind"] in ("assigned", "revoked")
               and incidents[0]["from_ms"] <= e["t_ms"] < end_ms]
    reassigned = {e["group"] for e in clients if e["kind"] in ("assigned", "revoked")
                  and incidents[0]["from_ms"] <= e["t_ms"] < end_ms}
    ids = {m.name: {e["member_id"] for e in clients if e["kind"] == "assigned" and e["member"] == m.name}
           for m in MEMBERS}
    print(f"member ids per member over the run: { {k: len(v) for k, v in ids.items()} }; "
          f"assignments changed during the incidents: {changes}")

    # ---- What the job says ----
    assert job_alive, f"the job exited{job_tail()}"
    assert end_ready.ready == 200
    not_ready = [(round(s.t - incidents[0]["from_ms"] / 1000, 1), s.ready, s.reason[:80]) for s in samples
                 if s.t >= first_ready.t and s.ready != 200]
    print(f"/ready not 200 after the first 200: {not_ready[:20]}")

    # No storm, anywhere.
    storms = [(r["group_id"], r["event_time"], r["detail"]) for r in events
              if r["kind"] == "RebalanceStorm" and r["group_id"] in GROUPS]
    assert not storms, storms
    assert set(GROUPS) <= set(groups), sorted(groups)
    for g in GROUPS:
        assert groups[g]["storms"] == 0, groups[g]
        assert not any(g in s.storm_active or g in s.storm_verdict for s in samples), f"{g} shown as a storm"
    print(f"rebalances counted: { {g: groups[g]['rebalances'] for g in GROUPS} }")

    # No rebalance, member joining or member leaving written after the first incident, in a group whose members
    # kept their assignment: the coordinator moving is not a membership change.
    membership = [(r["group_id"], r["kind"], r["event_time"], r["detail"]) for r in events
                  if r["kind"] in ("Rebalance", "MemberJoined", "MemberLeft") and r["group_id"] in GROUPS
                  and r["group_id"] not in reassigned
                  and incidents[0]["from_ms"] <= r["event_time"].timestamp() * 1000 < end_ms]
    assert not membership, membership
    # ...which the test could see: the groups did rebalance while they formed, before the incidents.
    assert all(any(r["kind"] == "Rebalance" and r["group_id"] == g for r in events) for g in GROUPS), \
        sorted({(r["group_id"], r["kind"]) for r in events})

    # Not asserted: whether a heartbeat gap was reported. A write to a partition whose in-sync replicas still name
    # the killed broker waits until the controller fences it, which a busy machine can delay past the gap limit.
    unavailable = [(r["event_time"], r["detail"]) for r in events if r["kind"] == "KafkaUnavailable"]
    print(f"KafkaUnavailable events: {unavailable}")

    # No partition of theirs STOP or STALL once the job was ready.
    bad_events, bad_lag = stops_and_stalls(events, lag, GROUPS, since=first_ready.t)
    assert not bad_events, bad_events
    assert not bad_lag, bad_lag[:10]
    bad_seen = [(round(s.t - incidents[0]["from_ms"] / 1000, 1), s.bad_partitions) for s in samples
                if s.bad_partitions and s.t >= first_ready.t]
    assert not bad_seen, bad_seen[:10]

    # The commits table: every committed offset commit once, nothing else; the moved partition's included.
    assert sum(n for (p, _), n in want.items() if p == SHARD) >= 3 * len(GROUPS), "too few commits to prove much"
    extra = set(got) - set(want)
    assert not extra, f"{len(extra)} rows of the commits table are not committed offset commits: {sorted(extra)[:5]}"
    assert max(got.values()) == 1, f"rows written twice: {[k for k, n in got.items() if n > 1][:5]}"
    print(f"whole test {time.monotonic() - began:.0f} s; {len(want)} offset commits")
