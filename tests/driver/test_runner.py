"""The job's driver (``streaming.driver.runner``): the checkpoint it resumes from and the tables it writes to.

A checkpoint whose state this version cannot read stops the job with one line; it is not restarted for ever.

Every other query failure (Kafka gone past the read timeout, a task lost) is restarted from the checkpoint after a
back-off. A state written by a newer groupscope fails every restart the same way, so the supervisor stops.

A new checkpoint beside Delta tables written under another one is refused: its batch ids restart at 0 and the
tables would skip them as already written.
"""

from __future__ import annotations

import datetime as dt

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
