"""The job's driver (``streaming.driver.runner``): the checkpoint it resumes from and the tables it writes to.

A checkpoint whose state this version cannot read stops the job with one line; it is not restarted for ever.

Every other query failure (Kafka gone past the read timeout, a task lost) is restarted from the checkpoint after a
back-off. A state written by a newer groupscope fails every restart the same way, so the supervisor stops.

A new checkpoint beside Delta tables written under another one is refused: its batch ids restart at 0 and the
tables would skip them as already written.
"""

from __future__ import annotations

import datetime as dt
import logging

import pyarrow as pa
import pytest

from streaming.driver.runner import (CheckpointUnusable, ClusterRun, checkpoint_error,
                                     refuse_tables_of_another_checkpoint)
from streaming.model.state_format import MAGIC, VERSION, StateFormatError, decode
from streaming.schema.tables import TABLES
from streaming.sinks.delta import DeltaSink
from tests.spark.harness import job_settings

# How Spark reports an exception raised in a Python worker (the query's plan follows it).
_SPARK_TEXT = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function.
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "streaming/spark/stateful.py", line 44, in run_shard
    step = ShardStep(shard, config, stored)
  File "streaming/model/state_format.py", line 88, in decode
    raise _newer(int(head[3:4]))
streaming.model.state_format.StateFormatError: {message}

=== Streaming Query ===
Identifier: groupscope [id = 1, runId = 2]
Current Committed Offsets: {{}}
"""


def _newer_state_message() -> str:
    blob = MAGIC[:3] + str(VERSION + 1).encode() + bytes(16)  # the head a later version writes
    with pytest.raises(StateFormatError) as raised:
        decode(blob)
    return str(raised.value)


def test_the_newer_state_line_is_what_the_operator_reads():
    message = _newer_state_message()
    assert "newer than this groupscope reads" in message
    assert checkpoint_error(_SPARK_TEXT.format(message=message)) == message
    assert checkpoint_error("org.apache.kafka.common.errors.TimeoutException: Timed out waiting") is None


class _FailedQuery:
    isActive = False

    def __init__(self, text: str) -> None:
        self.text = text

    def exception(self):
        return RuntimeError(self.text)


def test_an_unreadable_checkpoint_stops_the_job_and_other_failures_restart(tmp_path):
    run = ClusterRun(job_settings("127.0.0.1:9", tmp_path), several=False, heartbeat_clock=None)
    run.prepared = True
    run.query = _FailedQuery("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node")
    run.supervise(100.0, lambda r: None)
    assert run.query is None and run.status.restarts == 1 and run.next_attempt > 100.0

    run.query = _FailedQuery(_SPARK_TEXT.format(message=_newer_state_message()))
    with pytest.raises(CheckpointUnusable) as stopped:
        run.supervise(run.next_attempt, lambda r: None)
    line = str(stopped.value)
    assert "\n" not in line and line.startswith(f"cannot resume from the checkpoint {tmp_path / 'checkpoint'}: ")
    assert "start from a fresh checkpoint" in line and run.status.restarts == 1


# ---- a new checkpoint beside the tables of another one ----------------------------------------------------------


def _quarantine_row() -> pa.Table:
    schema = TABLES["quarantine"]
    row = {f.name: None for f in schema}
    row["quarantined_date"] = dt.date(2026, 11, 24)
    return pa.Table.from_pylist([row], schema=schema)


def test_new_checkpoint_with_tables_of_another_is_refused(tmp_path):
    delta = DeltaSink(tmp_path / "delta", app_id="groupscope-x")
    refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))  # no tables yet: fine
    delta.write_batch(5, {"quarantine": _quarantine_row()})
    with pytest.raises(RuntimeError, match=r"another checkpoint \(up to batch 5\).*delta.path"):
        refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))
    with pytest.raises(RuntimeError):
        refuse_tables_of_another_checkpoint(delta, "file:" + str(tmp_path / "cp"))


def test_resuming_the_same_checkpoint_is_fine(tmp_path):
    delta = DeltaSink(tmp_path / "delta", app_id="groupscope-x")
    delta.write_batch(5, {"quarantine": _quarantine_row()})
    (tmp_path / "cp" / "offsets").mkdir(parents=True)
    (tmp_path / "cp" / "offsets" / "5").write_text("v1\n")
    refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))
    refuse_tables_of_another_checkpoint(delta, "s3a://bucket/cp")  # not local: cannot tell, not refused


# ---- one cluster's supervision -----------------------------------------------------------------------------------

class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def said():
    handler = _Lines()
    logger = logging.getLogger("groupscope.run")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(tmp_path, *, several: bool = False, cluster: str = "test") -> ClusterRun:
    return ClusterRun(job_settings("127.0.0.1:9", tmp_path, cluster=cluster), several=several, heartbeat_clock=None)


def test_a_several_cluster_jobs_queries_and_lines_are_named_after_their_cluster(tmp_path, said):
    run = _run(tmp_path, several=True, cluster="eu")
    assert run.query_name == "groupscope-eu" and _run(tmp_path).query_name == "groupscope"
    run.retry_later("cannot reach Kafka", 10.0)
    assert said == ["cluster eu: cannot reach Kafka; trying again in 2 s"]


def test_a_start_that_fails_is_retried_with_a_back_off_doubling_up_to_a_minute(tmp_path, said):
    run = _run(tmp_path)
    attempts: list[float] = []

    def failing(r: ClusterRun) -> None:
        attempts.append(now)
        raise RuntimeError("no __consumer_offsets yet")

    now = 0.0
    for _ in range(8):
        run.supervise(now, failing)
        now = run.next_attempt
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert gaps == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    run.supervise(now - 1, failing)
    assert len(attempts) == 8, "nothing is tried before the back-off has passed"
    assert said[0] == "no __consumer_offsets yet; trying again in 2 s" and run.status.last_error == said[0].split(";")[0]


class _Query:
    """What supervise reads of a running streaming query."""

    isActive = True

    def __init__(self, progress: dict | None) -> None:
        self.lastProgress = progress
        self.status = {"message": "Waiting for data to arrive"}


def test_a_running_query_resets_the_back_off_and_reports_its_batch_duration(tmp_path):
    run = _run(tmp_path)
    run.prepared, run.backoff = True, 32.0
    run.query = _Query(None)
    run.supervise(1.0, lambda r: pytest.fail("a running query is not started again"))
    assert run.backoff == 32.0, "no batch yet: nothing says it works"
    run.query = _Query({"batchId": 3, "durationMs": {"triggerExecution": 1250}})
    run.supervise(2.0, lambda r: None)
    assert (run.backoff, run.status.batch_duration_s) == (2.0, 1.25)


class _Emitter:
    def __init__(self) -> None:
        self.wanted: dict[int, list] = {}

    def want_oldest(self, shard: int, lagging: list) -> None:
        self.wanted[shard] = lagging


def _health(shard: int, *, full: bool, caught_up: bool):
    from streaming.job.step import StepHealth

    return StepHealth(shard, 0, 0, 0, 0, 0, 0, 0, 0, caught_up, 0, 0.0, full_snapshot=full)


def test_after_a_batch_the_emitter_learns_what_the_caught_up_full_refreshes_found_lagging(tmp_path):
    from streaming.job.batch_sink import BatchResult
    from streaming.job.lagging import LAGGING, LAGGING_SCHEMA
    from streaming.kafka.oldest_probe import Lagging

    run = _run(tmp_path)
    run.emitter = _Emitter()
    lagging = pa.Table.from_pylist([{"shard": 0, "topic": "t", "partition": 1, "committed_offset": 5, "lag": 9,
                                     "lag_seconds": 2.0}], schema=LAGGING_SCHEMA)
    result = BatchResult(7, tables={LAGGING: lagging}, health=[_health(0, full=True, caught_up=True),
                                                                _health(1, full=True, caught_up=True),
                                                                _health(2, full=False, caught_up=True),
                                                                _health(3, full=True, caught_up=False)])
    run.after_batch(result)
    assert run.emitter.wanted == {0: [Lagging("t", 1, 5, 9, 2.0)], 1: []}, \
        "shard 1 refreshed without rows: nothing of it is behind; 2 and 3 said nothing new"
    assert run.status.batches == 1 and run.status.last_batch is result


def test_stopping_the_services_goes_on_past_one_that_fails_in_reverse_order(tmp_path, said):
    run = _run(tmp_path)
    stopped: list[str] = []

    def fails() -> None:
        raise OSError("disk gone")

    run._started = [("delta", lambda: stopped.append("delta")), ("maintenance", fails),
                    ("heartbeat", lambda: stopped.append("heartbeat"))]
    run.prepared = True
    run.stop_services()
    assert stopped == ["heartbeat", "delta"] and not run.prepared
    assert said == ["stopping maintenance: disk gone"]


def test_a_state_error_given_bare_is_the_operators_line_as_it_is():
    assert checkpoint_error("StateFormatError: state written by groupscope state v9") == \
        "state written by groupscope state v9"


def test_a_second_job_on_a_checkpoint_in_use_stops_at_start_and_the_first_keeps_it_until_it_stops(tmp_path):
    import threading

    from streaming.driver.checkpoint_lock import CheckpointInUse
    from streaming.kafka.mock_cluster import MockCluster

    with MockCluster(1) as mc:
        mc.create_topic("__consumer_offsets", 2)
        settings = job_settings(mc.bootstrap_servers, tmp_path, heartbeat={"enabled": False})
        stop = threading.Event()

        def prepare(run: ClusterRun) -> None:
            run.prepare(on_batch=lambda result: None, metrics=None, started_at=0.0, stop_requested=stop)

        first = ClusterRun(settings, several=False, heartbeat_clock=None)
        prepare(first)
        second = ClusterRun(settings, several=False, heartbeat_clock=None)
        with pytest.raises(CheckpointInUse, match="in use by another groupscope job"):
            prepare(second)
        assert not second.prepared and second.sink is None, "refused before it touched the tables"
        first.stop_services()
        prepare(second)
        second.stop_services()
