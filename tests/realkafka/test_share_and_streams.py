"""Share groups and streams groups from a real broker: decoded as Kafka decodes them, described as Kafka's tools
describe them.

Kafka writes these group types by default from 4.2 on (share groups, KIP-932; streams groups, KIP-1071), so the test
runs against the newest tested version and fails with one line if that one is older. Real clients make the groups: two ``kafka-console-share-consumer`` processes (Kafka's own share
consumer) in one share group, and two instances of a small Kafka Streams application (``java/UppercaseStreams.java``,
``group.protocol=streams``) in one streams group; records flow to both topics while they run; then one member of
each stops cleanly, and the other stays. At rest:

* ``groupscope decode --format kafka`` over a copy of ``__consumer_offsets`` equals ``kafka-dump-log
  --offsets-decoder`` record for record: every share and streams record type Kafka wrote, the topology included;
* ``groupscope describe --segments`` over that copy says what ``kafka-share-groups.sh`` and
  ``kafka-streams-groups.sh`` say: type, state, group epoch, assignment epoch, members (id, client id, member
  epoch), each member's partitions (share) or active tasks and target tasks (streams), and the streams group's
  committed offsets. A share group's delivery progress (``START-OFFSET``) lives in ``__share_group_state``, not in
  ``__consumer_offsets``, so it is not compared.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.realkafka.broker import BrokerFailed, KafkaBroker
from tests.realkafka.clients import wait_until
from tests.realkafka.tools import decode_differences, parse_tables, share_groups, streams_groups

SHARE_GROUP = "sg-orders"
STREAMS_APP = "st-upper"
STREAMS_SOURCE = Path(__file__).with_name("java") / "UppercaseStreams.java"
#: Both group types are written by default from this version on.
FIRST_VERSION = (4, 2, 0)
#: A single broker cannot host the share coordinator's state topic at its default replication factor (3).
BROKER_SETTINGS = {"share.coordinator.state.topic.replication.factor": "1",
                   "share.coordinator.state.topic.min.isr": "1", "offsets.topic.num.partitions": "5"}


class Clients:
    """The Java client processes of the test, each logging to its own file; every one is stopped at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, command: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "w") as log:
            self.procs[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, name: str, timeout: float = 60) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def stop_all(self) -> None:
        for name in self.procs:
            self.stop(name)

    def log_tail(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")[-1500:]


def produce_until(bootstrap: str, topics: tuple[str, ...], stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    n = 0
    while not stop.wait(0.05):
        for topic in topics:
            producer.produce(topic, key=str(n % 7).encode(), value=f"record {n}".encode())
        n += 1
        producer.poll(0)
    producer.flush(30)


def members_of(rows: list[dict[str, str]], group: str) -> list[dict[str, str]]:
    return [r for r in rows if r["GROUP"] == group]


def kafka_tasks(text: str, kind: str) -> list[list]:
    """``ACTIVE: 0:[0,1]; TARGET-ACTIVE: 0:[0,1];`` -> the ``kind`` tasks as sorted ``[subtopology, partition]``."""
    match = re.search(rf"(?:^|;\s*){re.escape(kind)}:\s*([^;]*);", text)
    if match is None:
        return []
    return sorted([sub, int(p)] for sub, parts in re.findall(r"(\S+?):\[([\d,]*)\]", match.group(1))
                  for p in parts.split(",") if p)


def test_share_and_streams_groups_equal_kafka(newest_kafka_install, tmp_path):
    install = newest_kafka_install
    if install.version_tuple < FIRST_VERSION:
        pytest.fail(f"the newest tested Kafka ({install.version}) writes no share or streams groups by default: "
                    f"test with REALKAFKA_VERSIONS including 4.2.0 or newer", pytrace=False)
    broker = KafkaBroker(install, tmp_path / "kafka", settings=BROKER_SETTINGS)
    try:
        broker.start()
    except BrokerFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    clients = Clients(tmp_path)
    stop_producing = threading.Event()
    producer = threading.Thread(target=produce_until, args=(broker.bootstrap, ("orders", "words"), stop_producing))
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for f in admin.create_topics([NewTopic(t, 2, 1) for t in ("orders", "words", "words-upper")]).values():
            f.result(30)
        settings = tmp_path / "streams.properties"
        settings.write_text(f"application.id={STREAMS_APP}\nbootstrap.servers={broker.bootstrap}\n"
                            f"group.protocol=streams\nstate.dir={tmp_path / 'streams-state'}\n"
                            "commit.interval.ms=500\n")
        share = ["org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", broker.bootstrap,
                 "--topic", "orders", "--group", SHARE_GROUP]
        for n in (1, 2):
            clients.start(f"streams-{n}", install.client_command(STREAMS_SOURCE, str(settings), "words",
                                                                 "words-upper"))
            clients.start(f"share-{n}", install.java_command(*share))
        producer.start()

        def both_have(count: int) -> bool:
            share_rows = members_of(parse_tables(share_groups(broker, "--describe", "--group", SHARE_GROUP,
                                                              "--members")), SHARE_GROUP)
            streams_rows = members_of(parse_tables(streams_groups(broker, "--describe", "--group", STREAMS_APP,
                                                                  "--members", "--verbose"), rest="ASSIGNMENTS"),
                                      STREAMS_APP)
            return (len(share_rows) == count and all(r["#PARTITIONS"] != "0" for r in share_rows)
                    and len(streams_rows) == count and all("ACTIVE: " in r["ASSIGNMENTS"] for r in streams_rows))

        def logs() -> str:
            return "".join(f"\n{name} log ends:\n{clients.log_tail(name)}" for name in clients.procs)

        wait_until(lambda: both_have(2), 120, "two working members in each group", logs)
        time.sleep(3)  # records flow through both members of each group
        clients.stop("streams-2")
        clients.stop("share-2")
        wait_until(lambda: both_have(1), 120, "one member left in each group", logs)
        stop_producing.set()
        producer.join(60)
        time.sleep(3)  # the streams application commits what it processed (commit.interval.ms 500)

        def settled() -> tuple[list, list] | None:
            """Both groups' ``--state`` rows once each group's assignment has caught up with its epoch (None before):
            a member leaving bumps the group epoch at once, the new assignment follows at the next heartbeat."""
            share = members_of(parse_tables(share_groups(broker, "--describe", "--group", SHARE_GROUP, "--state",
                                                         "--verbose")), SHARE_GROUP)
            streams = members_of(parse_tables(streams_groups(broker, "--describe", "--group", STREAMS_APP,
                                                             "--state", "--verbose")), STREAMS_APP)
            if len(share) == 1 and len(streams) == 1 \
                    and share[0]["GROUP-EPOCH"] == share[0]["ASSIGNMENT-EPOCH"] \
                    and streams[0]["GROUP-EPOCH"] == streams[0]["TARGET-ASSIGNMENT-EPOCH"]:
                return share, streams
            return None

        # Kafka's account, then a copy of the log it describes, then Kafka's state again: the copy is kept only if
        # nothing changed around it (no records flow, but the groups may still be settling).
        segments = tmp_path / "segments"
        for _ in range(10):
            share_state, streams_state = wait_until(settled, 60, "each group's assignment at its group epoch", logs)
            share_members = members_of(parse_tables(share_groups(broker, "--describe", "--group", SHARE_GROUP,
                                                                 "--members", "--verbose")), SHARE_GROUP)
            streams_members = members_of(parse_tables(streams_groups(broker, "--describe", "--group", STREAMS_APP,
                                                                     "--members", "--verbose"), rest="ASSIGNMENTS"),
                                         STREAMS_APP)
            streams_offsets = members_of(parse_tables(streams_groups(broker, "--describe", "--group", STREAMS_APP,
                                                                     "--offsets", "--verbose")), STREAMS_APP)
            shutil.rmtree(segments, ignore_errors=True)
            for folder in sorted(broker.data_dir.glob("__consumer_offsets-*")):
                shutil.copytree(folder, segments / folder.name)
            if settled() == (share_state, streams_state):
                break
            time.sleep(1)
        else:
            pytest.fail("the groups kept changing while their log was copied", pytrace=False)
    finally:
        stop_producing.set()
        if producer.is_alive():
            producer.join(60)
        clients.stop_all()
        broker.stop()

    # The codec: every record, as Kafka's own decoder prints it.
    checked, problems = decode_differences(broker, segments)
    assert checked > 20 and not problems, f"{checked} records:\n" + "\n".join(problems)

    done = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "describe", "--segments", str(segments),
                           "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)["groups"]

    # The share group, as kafka-share-groups.sh describes it.
    g = ours[SHARE_GROUP]
    (state,) = share_state
    assert (g["type"], g["state"].lower(), g["group_epoch"], g["assignment_epoch"], len(g["members"])) == \
        ("SHARE", state["STATE"].lower(), int(state["GROUP-EPOCH"]), int(state["ASSIGNMENT-EPOCH"]),
         int(state["#MEMBERS"])), (g, state)
    kafka_members = {r["CONSUMER-ID"]: r for r in share_members}
    assert sorted(m["member_id"] for m in g["members"]) == sorted(kafka_members)
    for m in g["members"]:
        k = kafka_members[m["member_id"]]
        assigned = sorted([t, int(p)] for t, ps in (part.split(":") for part in k["ASSIGNMENT"].split(";") if part)
                          for p in ps.split(","))
        assert (m["client_id"], m["member_epoch"], len(m["assignment"]), m["assignment"]) == \
            (k["CLIENT-ID"], int(k["MEMBER-EPOCH"]), int(k["#PARTITIONS"]), assigned), (m, k)

    # The streams group, as kafka-streams-groups.sh describes it.
    g = ours[STREAMS_APP]
    (state,) = streams_state
    assert (g["type"], g["state"].lower(), g["group_epoch"], g["assignment_epoch"], len(g["members"])) == \
        ("STREAMS", state["STATE"].lower(), int(state["GROUP-EPOCH"]), int(state["TARGET-ASSIGNMENT-EPOCH"]),
         int(state["#MEMBERS"])), (g, state)
    kafka_members = {r["MEMBER"]: r for r in streams_members}
    assert sorted(m["member_id"] for m in g["members"]) == sorted(kafka_members)
    for m in g["members"]:
        k = kafka_members[m["member_id"]]
        assert (m["client_id"], m["member_epoch"], m["active_tasks"], m["target_tasks"]) == \
            (k["CLIENT-ID"], int(k["MEMBER-EPOCH"]), kafka_tasks(k["ASSIGNMENTS"], "ACTIVE"),
             kafka_tasks(k["ASSIGNMENTS"], "TARGET-ACTIVE")), (m, k)
        assert m["assignment"] == sorted([["words", p] for _, p in m["active_tasks"]]), m
    committed = {(o["topic"], o["partition"]): o["offset"] for o in g["offsets"]}
    kafka_committed = {(r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in streams_offsets
                       if r["CURRENT-OFFSET"] != "-"}
    assert kafka_committed and committed == kafka_committed, (committed, streams_offsets)
