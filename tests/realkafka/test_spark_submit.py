"""The job as Spark users deploy it: ``spark-submit`` to a standalone cluster, with Spark's own ``kafka`` source
and the delta-spark writer, on a real broker, killed with SIGKILL once and submitted again.

A standalone master and worker are started from the pyspark installation (``tests/spark/standalone.py``), Delta's
and the Kafka connector's jars are fetched with Maven (``tests/spark/spark_jars.py``) and passed with ``--jars``.
The same ``__consumer_offsets`` (transactional commits with aborted transactions, a standalone committer, a deleted
group, offsets reset backwards) is read twice:

* by ``groupscope run`` in local mode with groupscope's own source and the delta-rs writer (the reference);
* by ``spark-submit ... groupscope run`` on the cluster with ``source.builtin_kafka_source`` and
  ``delta.writer: delta-spark``, its driver killed with SIGKILL in the middle of its first micro-batch (its
  ``commits`` written, the checkpoint not yet) and submitted again on the same checkpoint.

The ``commits`` tables are equal row for row and hold every offset commit a read_committed consumer sees, once;
the ``groups`` tables agree on every column that does not move with the clock (lag and statuses do). Against the
newest tested Kafka version only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest
import yaml
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from tests.realkafka.clients import ScenarioDriver
from tests.realkafka.install import tested_versions as kafka_versions
from tests.realkafka.test_kill_job import finished_batches, free_port, is_offset_commit, kill_tree, start_job
from tests.spark.harness import read_committed
from tests.spark.spark_jars import JarsUnavailable, spark_jars
from tests.spark.standalone import standalone_cluster

REPO = Path(__file__).resolve().parents[2]
NEWEST = max(kafka_versions(), key=lambda v: tuple(int(p) for p in v.split(".")))
#: groups columns that follow from the records alone (the others move with the clock and the heartbeats: lag,
#: time lag and how it was found, statuses, verdicts that wait for quiet time)
RECORD_COLUMNS = ("group_id", "shard", "group_type", "state", "protocol_type", "assignor", "generation",
                  "assignment_epoch", "leader", "member_count", "members", "partition_count", "rebalances",
                  "partitions_moved", "last_partitions_moved", "rebalance_causes", "last_rebalance_time",
                  "last_commit_time", "state_time", "is_simple", "deleted")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory) -> str:
    """One standalone master and one two-core worker from the pyspark installation, for this module's tests and
    stopped after them (their JVMs hold about a gigabyte)."""
    with standalone_cluster(tmp_path_factory.mktemp("standalone"), workers=1, cores=2) as url:
        yield url


def _config(path: Path, bootstrap: str, root: Path, **over) -> Path:
    settings = {
        "cluster": "submit",
        "kafka": {"bootstrap.servers": bootstrap},
        "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
        "delta": {"path": str(root / "delta"), "maintenance": {"enabled": False}},
        "metrics": {"host": "127.0.0.1", "port": free_port()},
        "heartbeat": {"interval_seconds": 1.0},
        "model": {"snapshot_interval_seconds": 1.0},
    }
    for section, values in over.items():
        settings[section] = {**settings.get(section, {}), **values}
    path.write_text(yaml.safe_dump(settings))
    return path


def _commit_rows(delta: Path) -> list[tuple]:
    try:
        rows = DeltaTable(str(delta / "commits")).to_pyarrow_table().to_pylist()
    except TableNotFoundError:
        return []
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def _groups(delta: Path) -> dict[str, dict]:
    rows = DeltaTable(str(delta / "groups")).to_pyarrow_table().to_pylist()
    return {r["group_id"]: {k: r[k] for k in RECORD_COLUMNS} for r in rows}


def _caught_up(job: subprocess.Popen, root: Path, expected: int, log: Path, timeout: float = 300) -> None:
    """Waits until the commits table holds ``expected`` rows and the micro-batch that wrote the last of them
    (and the groups it changed) is complete."""
    deadline = time.monotonic() + timeout
    while len(_commit_rows(root / "delta")) < expected:
        assert job.poll() is None, f"the job exited ({job.returncode}): {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not caught up in {timeout:.0f} s: {log.read_text()[-3000:]}"
        time.sleep(1)
    done = finished_batches(root / "checkpoint")
    while finished_batches(root / "checkpoint") <= done and time.monotonic() < deadline:
        time.sleep(0.5)


def _stop(job: subprocess.Popen) -> None:
    os.killpg(job.pid, signal.SIGTERM)
    job.wait(90)


def _submit(master: str, jars: list[Path], config: Path, log: Path) -> subprocess.Popen:
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    command = [str(home / "bin" / "spark-submit"), "--master", master, "--jars", ",".join(map(str, jars)),
               "--conf", f"spark.pyspark.python={sys.executable}",
               "--conf", f"spark.pyspark.driver.python={sys.executable}",
               "--conf", "spark.executor.memory=768m", "--driver-memory", "1g",
               str(REPO / "streaming" / "commands" / "cli.py"), "run", "--config", str(config)]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


@pytest.mark.parametrize("kafka", [NEWEST], indirect=True)
def test_spark_submit_with_the_builtin_source_and_delta_spark(kafka, standalone_master, tmp_path):
    try:
        jars = spark_jars()
    except JarsUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    driver = ScenarioDriver(kafka, "submit")
    try:
        driver.transactional("txn")
        driver.simple_commits("simple")
        driver.deleted_group("gone")
        driver.reset_backwards("reset", to_offset=5)
    finally:
        driver.close()
    expected = sum(1 for _p, _o, _t, key, _v in read_committed(kafka.bootstrap) if is_offset_commit(key))

    reference = tmp_path / "reference"
    log = tmp_path / "reference.log"
    job = start_job(_config(tmp_path / "reference.yaml", kafka.bootstrap, reference), log)
    try:
        _caught_up(job, reference, expected, log)
    finally:
        _stop(job)

    submitted = tmp_path / "submitted"
    config = _config(tmp_path / "submitted.yaml", kafka.bootstrap, submitted,
                     source={"builtin_kafka_source": True},
                     delta={"writer": "delta-spark"}, spark={"master": standalone_master})
    log = tmp_path / "submitted.log"
    job = _submit(standalone_master, [*jars.delta, *jars.kafka], config, log)
    try:
        # SIGKILL in the middle of the first micro-batch: its commits are in Delta, the checkpoint has not
        # recorded the batch yet, and the writes of its other tables may be under way.
        deadline = time.monotonic() + 300
        while not _commit_rows(submitted / "delta") and finished_batches(submitted / "checkpoint") < 1:
            assert job.poll() is None, f"spark-submit exited ({job.returncode}): {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no micro-batch in 300 s: {log.read_text()[-3000:]}"
            time.sleep(0.1)
        kill_tree(job)
        job = _submit(standalone_master, [*jars.delta, *jars.kafka], config, log)
        _caught_up(job, submitted, expected, log)
    finally:
        if job.poll() is None:
            _stop(job)

    rows = _commit_rows(submitted / "delta")
    assert len(rows) == expected and len(set(rows)) == expected  # none lost, none twice
    assert rows == _commit_rows(reference / "delta")
    groups = _groups(submitted / "delta")
    assert {"submit-txn", "submit-simple", "submit-reset"} <= groups.keys() and "submit-gone" not in groups
    assert groups == _groups(reference / "delta")
    assert "spark-kafka-source" not in " ".join(groups)  # the source's offset lookups join no group
