"""The streaming job end to end on local Spark, against the librdkafka mock cluster over TCP, fed with the real
Kafka 4.0 ``__consumer_offsets`` captures (classic groups, KIP-848 groups, transactions with COMMIT and ABORT).

The oracle is independent of the job: the same topic read back with a read_committed consumer and replayed through
the group model."""

from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import ExitStack

import pytest

from protocol.codec import decode_record
from streaming.kafka.mock_cluster import MockCluster
from streaming.model.describe import describe
from streaming.driver.runner import GroupscopeJob
from streaming.sinks.delta import DeltaSink

from .standalone import executor_count, standalone_cluster
from .harness import (HEARTBEAT, OFFSETS, capture_rows, fill_topic, job_settings, oracle_model, produce_capture,
                      read_committed, worker_daemon_modules)

pytestmark = pytest.mark.spark

TOPICS = {"sa-orders": 6, "sa-payments": 3, "sc-alpha": 6, "sc-beta": 3, "sd-in": 3, "sd-out": 3}


@pytest.fixture(scope="module")
def cluster(captures):
    with MockCluster(1) as mc:
        mc.create_topic(OFFSETS, 50)
        mc.create_topic(HEARTBEAT, 1)
        for topic, n in TOPICS.items():
            mc.create_topic(topic, n)
            for p in range(n):
                fill_topic(mc.bootstrap_servers, topic, p, 50 + 7 * p)
        produced = 0
        for scenario in ("a_classic", "c_consumer_protocol", "d_transactions"):
            produced += produce_capture(mc.bootstrap_servers, capture_rows(captures, scenario), txn_prefix=scenario)
        mc.produced = produced
        yield mc


def wait_for(predicate, timeout_s: float, what: str, where=lambda: ""):
    """``where``: what to add to the failure, the job's own account of where it stood."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}{where()}")


def job_position(job) -> str:
    """Batches, restarts, the last error, how many shards the last batch saw caught up, and Spark's status of the
    query: enough to tell a stalled query from a slow or failing one."""
    status, query = job.status, job.query
    health = status.last_batch.health if status.last_batch is not None else []
    try:
        spark_says = query.status if query is not None else "no query"
    except Exception as exc:  # noqa: BLE001 - a failure message must not fail
        spark_says = f"status unavailable: {exc}"
    return (f": {status.batches} batches, {status.restarts} restarts, last error {status.last_error!r}, "
            f"{sum(h.caught_up for h in health)}/{len(health)} shards caught up in the last batch, "
            f"last batch {status.batch_duration_s:.1f} s, Spark: {spark_says}")


@pytest.fixture(scope="module", params=["local", "standalone", "local-source-reads"])
def job_run(request, cluster, tmp_path_factory):
    """The whole job in local mode, on a Spark standalone cluster (a master and two one-core workers on loopback),
    and in local mode with the source's read tasks reading the records (``source.read_in_steps: false``) instead
    of the shard steps: the same assertions hold for all."""
    root = tmp_path_factory.mktemp(f"job-{request.param}")
    with ExitStack() as stack:
        spark = {}
        if request.param == "standalone":
            master = stack.enter_context(standalone_cluster(root / "spark-cluster", workers=2))
            spark = {"master": master, "shuffle_partitions": 2, "conf": {"spark.executor.memory": "768m",
                                                                         "spark.cores.max": "2"}}
        source = {"read_in_steps": request.param != "local-source-reads"}
        settings = job_settings(cluster.bootstrap_servers, root, metrics={"enabled": False}, spark=spark,
                                source=source)
        return _run_job(settings, standalone=request.param == "standalone")


def _run_job(settings, *, standalone: bool):
    executor_files: list[int] = []

    class CountingJob(GroupscopeJob):
        def _after_batch(self, result, *cluster):
            executor_files.append(len(result.files.get("commits", [])))
            super()._after_batch(result, *cluster)

    job = CountingJob(settings, install_signal_handlers=False)
    job.start()
    try:
        if standalone:
            wait_for(lambda: executor_count(job.spark) == 2, 180, "two executors on the standalone cluster")

        def caught_up():
            last = job.status.last_batch
            return last is not None and last.health and all(h.caught_up for h in last.health) and job.status.batches > 3
        wait_for(caught_up, 240, "the job to catch up", lambda: job_position(job))
        state_bytes = sum(h.state_bytes for h in job.status.last_batch.health)
        forked_from = worker_daemon_modules(os.getpid())
        time.sleep(3)  # a few more batches: periodic group and lag snapshots
    finally:
        job.request_stop()
        job.stop()
    # The commits table's data files were written by the executors, not the driver.
    assert sum(executor_files) > 0, "no batch carried executor-written commit files"
    assert state_bytes > 0, "the shards report the size of the state they wrote"
    if not standalone:  # a standalone cluster's executors are the workers' children, not this process's
        assert "streaming.spark.worker_daemon" in forked_from, f"task workers came from {forked_from}"
    return settings, DeltaSink(settings.delta.path, app_id=f"groupscope-{settings.cluster}")


def test_commits_table_holds_every_visible_commit_exactly_once(cluster, job_run):
    _, delta = job_run
    visible = read_committed(cluster.bootstrap_servers)
    expected = {(p, o) for p, o, _ts, key, _v in visible if key[:2] in (b"\x00\x00", b"\x00\x01")}
    commits = delta.read("commits")
    got = Counter(zip(commits.column("shard").to_pylist(), commits.column("offset").to_pylist()))
    assert set(got) == expected
    assert max(got.values()) == 1, "a commit row was written twice"
    # Values are exactly the decoded records.
    by_key = {(p, o): (k, v) for p, o, _ts, k, v in visible}
    for row in commits.slice(0, 500).to_pylist():
        rec = decode_record(*by_key[(row["shard"], row["offset"])])
        assert (row["group_id"], row["topic"], row["partition"]) == (rec.key.group, rec.key.topic, rec.key.partition)
        assert row["committed_offset"] == (None if rec.value is None else rec.value.offset)


def test_aborted_transactional_commits_never_reach_the_tables(captures, job_run):
    _, delta = job_run
    rows = capture_rows(captures, "d_transactions")
    aborted = set()
    committed = set()
    for r in rows:
        if r["batch"]["is_control"] or not r["batch"]["is_transactional"]:
            continue
        rec = decode_record(bytes.fromhex(r["key_hex"]), bytes.fromhex(r["value_hex"]))
        key = (rec.key.group, rec.key.topic, rec.key.partition, rec.value.offset)
        (aborted if r["txn_outcome"] == "aborted" else committed).add(key)
    assert aborted and committed
    commits = delta.read("commits").to_pylist()
    seen = {(c["group_id"], c["topic"], c["partition"], c["committed_offset"]) for c in commits}
    assert committed - {k for k in committed if k in aborted} <= seen
    assert not (aborted - committed) & seen, "an aborted transactional commit reached the commits table"


def test_groups_table_matches_the_replayed_model(cluster, job_run):
    _, delta = job_run
    expected = describe(oracle_model(read_committed(cluster.bootstrap_servers)))["groups"]
    rows = {r["group_id"]: r for r in delta.read("groups").to_pylist()}
    assert set(rows) == set(expected)
    for gid, want in expected.items():
        row = rows[gid]
        assert (row["group_type"], row["state"]) == (want["type"], want["state"]), gid
        assert row["member_count"] == len(want["members"]), gid
        assert sorted(m["member_id"] for m in row["members"]) == sorted(m["member_id"] for m in want["members"])
        assert row["partition_count"] == len(want["offsets"]), gid
        # the table's one column holds a classic group's generation or a consumer group's epoch
        assert row["generation"] == (want["generation"] if want["generation"] is not None else want["group_epoch"]), gid


def test_group_events_and_lag_tables(cluster, job_run):
    _, delta = job_run
    events = delta.read("group_events")
    kinds = Counter(events.column("kind").to_pylist())
    assert kinds["Rebalance"] > 0 and kinds["MemberJoined"] > 0 and kinds["GroupCreated"] > 0
    keys = Counter(zip(events.column("shard").to_pylist(), events.column("offset").to_pylist(),
                       events.column("kind").to_pylist(), events.column("detail").to_pylist()))
    assert max(keys.values()) == 1, "an event row was written twice"
    lag = delta.read("lag").to_pylist()
    assert lag, "lag snapshots were written"
    assert all(r["lag"] is None or r["lag"] >= 0 for r in lag)
    # End offsets came from real heartbeats: the topics were filled with known message counts.
    ends = {(r["topic"], r["partition"]): r["log_end_offset"] for r in lag if r["log_end_offset"] is not None}
    assert ends, "no lag row carries an end offset from a heartbeat"
    for (topic, partition), end in ends.items():
        assert end == 50 + 7 * partition, (topic, partition)
    assert delta.read("quarantine").num_rows == 0
