"""groupscope equals Kafka's own tools on a real broker, live and offline.

One scenario of real clients (``clients.py``) is brought to a quiet point on the broker of each tested version;
there Kafka's ``kafka-consumer-groups`` describes every group, the broker's ``__consumer_offsets`` folders are
copied, and a read_committed consumer reads the topic. Against that one reference:

* the streaming job, run against the live broker until its Delta tables say what the tool says;
* ``groupscope describe --segments --json --end-offsets`` over the copy;
* ``groupscope backfill`` over the copy (its commits equal what the read_committed consumer saw);
* ``groupscope decode --format kafka`` over the copy equals ``kafka-dump-log --offsets-decoder``, record for record.

Every group of the broker is compared, not only the scenario's: other tests' groups on the shared broker are at
rest by then and must be equal too. A mismatch fails with the list of every difference.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.realkafka.broker import KafkaBroker
from tests.realkafka.clients import ScenarioDriver, build_scenario, wait_until
from tests.realkafka.tools import consumer_groups, decode_differences, describe_all, parse_tables
from tests.realkafka.views import GroupView, backfill_views, delta_views, describe_views, diff, kafka_views
from tests.spark.harness import job_settings, read_committed

GROUPSCOPE = [sys.executable, "-m", "streaming.commands.cli"]
OFFSETS = "__consumer_offsets"


@dataclass
class QuietPoint:
    """The scenario at rest, and Kafka's account of it."""

    driver: ScenarioDriver
    kafka: dict[str, GroupView]
    segments: Path  # a copy of the broker's __consumer_offsets-N folders
    visible: list  # (partition, offset, timestamp, key, value) a read_committed consumer sees
    ends: dict[tuple[str, int], int]  # every topic partition's log end


def kafka_now(broker: KafkaBroker) -> dict[str, GroupView]:
    """Every group as the tool describes it; its four runs (a JVM start each) side by side."""
    with ThreadPoolExecutor(2) as pool:
        listed = pool.submit(consumer_groups, broker, "--list", "--type")
        tables = describe_all(broker)
        types = {r["GROUP"]: r["TYPE"] for r in parse_tables(listed.result())}
    return kafka_views(tables, types)


def settings_for(bootstrap: str, root: Path):
    return job_settings(bootstrap, root, metrics={"enabled": False})


def all_end_offsets(broker: KafkaBroker) -> dict[tuple[str, int], int]:
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "eq-ends", "log_level": 3})
    try:
        topics = reader.list_topics(timeout=10).topics
        return {(t, p): reader.get_watermark_offsets(TopicPartition(t, p), 10, cached=False)[1]
                for t, meta in topics.items() if not t.startswith("__") for p in meta.partitions}
    finally:
        reader.close()


@pytest.fixture(scope="module")
def quiet(kafka, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"equal-{kafka.version}")
    driver = build_scenario(kafka, f"eq{kafka.version.replace('.', '')}")
    try:
        segments = root / "segments"
        for folder in kafka.data_dir.glob(f"{OFFSETS}-*"):
            shutil.copytree(folder, segments / folder.name)
        visible = read_committed(kafka.bootstrap)
        yield QuietPoint(driver, kafka_now(kafka), segments, visible, all_end_offsets(kafka))
    finally:
        driver.close()


def report(lines: list[str], what: str) -> str:
    return f"{len(lines)} differences between Kafka's kafka-consumer-groups and {what}:\n" + "\n".join(lines)


# ---- the live job ---------------------------------------------------------------------------------------------------


@dataclass
class LiveOutcome:
    differences: list[str]
    seconds: float
    lag_rows: int


@pytest.fixture(scope="module")
def live(kafka, quiet, tmp_path_factory) -> LiveOutcome:
    """Runs the streaming job against the broker until its ``groups`` and ``lag`` tables say what Kafka's tool
    said at the quiet point (or 120 s pass), then stops it: the differences left are the test's verdict."""
    from streaming.driver.runner import GroupscopeJob
    from streaming.sinks.delta import DeltaSink

    root = tmp_path_factory.mktemp(f"job-{kafka.version}")
    settings = settings_for(kafka.bootstrap, root)
    delta = DeltaSink(settings.delta.path, app_id=f"groupscope-{settings.cluster}")
    job = GroupscopeJob(settings, install_signal_handlers=False)
    started = time.monotonic()
    job.start()
    differences: list[str] = ["the job wrote no groups table"]
    lag_rows = 0

    def equal() -> bool:
        # The tables themselves are the verdict: they are read after every batch until they equal the tool's
        # answer, and every shard says it is caught up (one whose log ends in a transaction marker from the
        # heartbeat's quiet tail: it has no record at its last stable offset to reach).
        nonlocal differences, lag_rows
        last = job.status.last_batch
        if last is None or not last.health:
            differences = [f"the job has applied no batch: {job.status.batches} batches, "
                           f"last error {job.status.last_error!r}"]
            return False
        behind = sorted(h.shard for h in last.health if not h.caught_up)
        try:
            groups, lag = delta.read("groups").to_pylist(), delta.read("lag").to_pylist()
        except Exception as exc:  # noqa: BLE001 - a table not written yet
            differences = [f"tables not readable yet: {exc}"]
            return False
        lag_rows = len(lag)
        differences = diff(quiet.kafka, delta_views(groups, lag), unknown=frozenset({"member.target_assignment"}))
        if behind:
            differences.append(f"shards not caught up at the last batch: {behind}")
        return not differences

    try:
        try:
            wait_until(equal, 120, "the job's tables to equal Kafka's tool")
        except AssertionError:
            pass  # the differences are the verdict, asserted by the test
    finally:
        job.request_stop()
        job.stop()
    return LiveOutcome(differences, time.monotonic() - started, lag_rows)


def test_the_job_equals_kafka_consumer_groups(quiet, live):
    kinds = {v.type for v in quiet.kafka.values()}
    assert {"CLASSIC", "CONSUMER"} <= kinds, kinds
    assert live.lag_rows, "the job wrote no lag rows"
    assert not live.differences, report(live.differences, "the job's groups and lag tables")


def test_the_scenario_has_every_kind_of_group(quiet):
    """The reference itself: the groups the driver made are there as Kafka describes them (so an empty or
    half-built scenario cannot make the comparisons pass)."""
    views, prefix = quiet.kafka, quiet.driver.prefix
    ours = {g: v for g, v in views.items() if g.startswith(prefix)}
    assert set(ours) == {g.group for g in quiet.driver.live} | set(quiet.driver.inactive)
    for spec in quiet.driver.live:
        view = views[spec.group]
        assert (view.state, view.member_count) == ("STABLE", spec.members), view
    assert views[f"{prefix}-kip848"].type == "CONSUMER" and views[f"{prefix}-kip848"].group_epoch
    assert views[f"{prefix}-static"].members[0].instance_id == f"{prefix}-static-0"
    assert {o.committed for o in views[f"{prefix}-reset"].offsets} == {5}
    assert {o.topic for o in views[f"{prefix}-trim"].offsets} == {f"{prefix}-trim-kept"}
    assert all(o.lag for o in views[f"{prefix}-range"].offsets)


# ---- offline: describe, backfill, decode --------------------------------------------------------------------------


def test_describe_segments_equals_kafka_consumer_groups(quiet, tmp_path):
    ends = tmp_path / "ends.json"
    ends.write_text(json.dumps({f"{t}:{p}": end for (t, p), end in quiet.ends.items()}))
    done = subprocess.run([*GROUPSCOPE, "describe", "--segments", str(quiet.segments), "--json",
                           "--end-offsets", str(ends)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    differences = diff(quiet.kafka, describe_views(json.loads(done.stdout)["groups"]))
    assert not differences, report(differences, "groupscope describe --segments")


@pytest.mark.parametrize("what,strategy", [("range", "range"), ("coop", "cooperative-sticky"),
                                           ("java", "roundrobin")])
def test_describe_what_if_keeps_what_the_clients_assignor_gave(quiet, tmp_path, what, strategy):
    """The what-if of a group's own assignor is the assignment its clients made (librdkafka's range and
    cooperative-sticky, the Java client's RoundRobinAssignor): nothing moves."""
    group = f"{quiet.driver.prefix}-{what}"
    ends = tmp_path / "ends.json"
    ends.write_text(json.dumps({f"{t}:{p}": end for (t, p), end in quiet.ends.items()}))
    done = subprocess.run([*GROUPSCOPE, "describe", "--segments", str(quiet.segments), "--end-offsets", str(ends),
                           "--what-if", group, "--json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    kafka = {m.member_id: sorted(m.assignment)
             for m in quiet.kafka[group].members}
    assert kafka and all(kafka.values()), quiet.kafka[group]
    result = next(r for r in doc["strategies"] if r["strategy"] == strategy)
    assert {m: sorted(map(tuple, tps)) for m, tps in result["assignment"].items()} == kafka, (result, kafka)
    assert result["moved"] == 0 and result["stayed"] == sum(map(len, kafka.values())), result


@pytest.fixture(scope="module")
def backfilled(kafka, quiet, live, tmp_path_factory):
    """``groupscope backfill`` over the copy, in this process once the live job has stopped (``live`` first)."""
    from streaming.driver.backfill import run_backfill
    from streaming.sinks.delta import DeltaSink

    root = tmp_path_factory.mktemp(f"backfill-{kafka.version}")
    settings = settings_for(kafka.bootstrap, root)
    run_backfill(settings, str(quiet.segments))
    return DeltaSink(settings.delta.path, app_id=f"groupscope-{settings.cluster}")


def test_backfill_commits_are_what_a_read_committed_consumer_sees(quiet, backfilled):
    from protocol.codec import decode_record

    expected = {}
    for partition, offset, _ts, key, value in quiet.visible:
        if key[:2] in (b"\x00\x00", b"\x00\x01"):
            record = decode_record(key, value)
            expected[(partition, offset)] = (record.key.group, record.key.topic, record.key.partition,
                                             None if record.value is None else record.value.offset)
    got = {(r["shard"], r["offset"]): (r["group_id"], r["topic"], r["partition"], r["committed_offset"])
           for r in backfilled.read("commits").to_pylist()}
    assert backfilled.read("commits").num_rows == len(got), "a commit row was written twice"
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(got) & set(expected) if got[k] != expected[k])
    assert expected and not (missing or extra or wrong), (
        f"missing {[(k, expected[k]) for k in missing]}, not visible to read_committed {[(k, got[k]) for k in extra]}"
        f", different {[(k, expected[k], got[k]) for k in wrong]}")


def test_backfill_groups_equal_kafka_consumer_groups(quiet, backfilled):
    views = backfill_views(backfilled.read("groups").to_pylist(), backfilled.read("commits").to_pylist())
    unknown = frozenset({"member.target_assignment", "member.assignment", "offset.log_end", "offset.lag",
                         "offset.owner"})
    differences = diff(quiet.kafka, views, unknown=unknown)
    assert not differences, report(differences, "the tables groupscope backfill wrote")


def test_decode_format_kafka_equals_kafka_dump_log(kafka, quiet):
    checked, problems = decode_differences(kafka, quiet.segments)
    assert checked > 50 and not problems, f"{checked} records:\n" + "\n".join(problems)
