"""Where a starting job stands (``streaming/driver/progress.py``): the checkpoint position read from Spark's offset
and commit logs, the resume line's count of records ahead, and the once-only lines of the catch-up and stall
watches and of a failed query. The lines as ``groupscope run`` writes them, end to end, are checked in
``tests/streaming/test_job_log_lines.py``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from streaming.driver.progress import BatchStallWatch, CatchUpWatch, checkpoint_position, query_error_line, resume_line

TOPIC = "__consumer_offsets"
#: Spark's offset log: a version line, the batch's metadata line, then one JSON line per source (in the order the
#: query names its sources).
_METADATA = '{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,"conf":{}}'


def _offsets_file(root: Path, batch: int, *source_lines: str) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text("\n".join(["v1", _METADATA, *source_lines]))


def _commit(root: Path, batch: int) -> None:
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_no_commit_log_is_a_first_start(tmp_path):
    _offsets_file(tmp_path, 0, json.dumps({TOPIC: {"0": 5}}))  # planned, never completed: no commits/ yet
    assert checkpoint_position(str(tmp_path), TOPIC) is None
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / ".0.crc").write_bytes(b"crc")  # Spark's checksum files are not batches
    assert checkpoint_position(str(tmp_path), TOPIC) is None


def test_the_offsets_topic_line_is_found_among_the_sources(tmp_path):
    _offsets_file(tmp_path, 3, json.dumps({"groupscope-heartbeat": {"0": 41}}), "not json",
                  json.dumps({TOPIC: {"0": 120, "7": 9}}))
    _commit(tmp_path, 3)
    assert checkpoint_position(str(tmp_path), TOPIC) == (3, {0: 120, 7: 9})
    assert checkpoint_position(str(tmp_path), "renamed_offsets") == (3, {}), \
        "a completed batch that did not read the topic: the batch, with no offsets"


def test_a_completed_batch_without_its_offset_file_falls_back_to_the_one_before(tmp_path):
    _offsets_file(tmp_path, 4, json.dumps({TOPIC: {"0": 40}}))
    for batch in (4, 5):
        _commit(tmp_path, batch)  # batch 5's offset file is gone (cleaned up or never written)
    assert checkpoint_position(str(tmp_path), TOPIC) == (4, {0: 40})


def test_batches_are_ordered_as_numbers_not_as_names(tmp_path):
    for batch in (9, 10):
        _offsets_file(tmp_path, batch, json.dumps({TOPIC: {"0": batch * 100}}))
        _commit(tmp_path, batch)
    assert checkpoint_position(str(tmp_path), TOPIC) == (10, {0: 1000}), "'9' sorts after '10' as a string"


def test_the_resume_line_counts_what_remains_from_the_later_of_checkpoint_and_log_start():
    ends = {0: 500, 1: 300, 2: 50}
    # partition 0: 500 - 450; partition 1: the log now starts at 280, past the checkpoint's 200: 300 - 280;
    # partition 2: the checkpoint is past the end (a truncated log), which leaves nothing, not a negative count.
    line = resume_line((12, {0: 450, 1: 200, 2: 80}), ends, {1: 280}, starting_offsets="earliest",
                       offsets_topic=TOPIC)
    assert line == "resumed from checkpoint at batch 12, 70 records behind"
    # A partition the checkpoint did not know (the topic grew) is read from its log start.
    assert resume_line((3, {0: 9}), {0: 10, 1: 4}, {}, starting_offsets="earliest", offsets_topic=TOPIC) == \
        "resumed from checkpoint at batch 3, 5 records behind"


def test_one_record_is_said_in_the_singular():
    assert resume_line((1, {0: 9}), {0: 10}, {}, starting_offsets="earliest", offsets_topic=TOPIC) == \
        "resumed from checkpoint at batch 1, 1 record behind"
    assert resume_line(None, {0: 0}, {0: 0}, starting_offsets="earliest", offsets_topic=TOPIC) == \
        f"no checkpoint yet: reading {TOPIC} from its earliest offsets, 0 records behind"


@pytest.fixture
def lines():
    """A fresh logger and the messages it was given."""
    logger = logging.getLogger(f"tests.driver.progress.{id(object())}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    said: list[tuple[str, str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append((record.levelname, record.getMessage()))

    logger.addHandler(Keep())
    return logger, said


class _Health:
    def __init__(self, shard: int, caught_up: bool) -> None:
        self.shard, self.caught_up = shard, caught_up


def test_a_shard_that_falls_behind_before_the_last_catches_up_delays_the_line(lines):
    logger, said = lines
    watch = CatchUpWatch(2, logger, started=0.0)
    assert not watch.after_batch([_Health(0, True)])
    assert not watch.after_batch([_Health(0, False), _Health(1, True)]), "shard 0 is behind again"
    assert said == [] and not watch.done
    assert watch.after_batch([_Health(0, True)])
    assert watch.done and len(said) == 1 and said[0][0] == "INFO"
    assert "all 2 partitions of __consumer_offsets" in said[0][1]


def test_a_watch_with_regular_batches_says_nothing(lines):
    logger, said = lines
    watch = BatchStallWatch(60, logger, started=0.0)
    for now in range(10, 600, 30):
        assert not watch.look(float(now), lambda: pytest.fail("Spark is asked only when a warning is due"))
        watch.batch_completed(float(now))
    assert said == []


def test_a_stall_without_a_status_says_so(lines):
    logger, said = lines
    watch = BatchStallWatch(60, logger, started=100.0)
    assert watch.look(160.0, lambda: None), "the limit itself is a stall"
    assert said[0][0] == "WARNING" and said[0][1].startswith("no micro-batch completed for 60 s (Spark: no status)")


def test_a_failed_query_names_the_innermost_python_exception():
    error = ("An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
             '  File "a.py", line 3, in f\n    g()\nKeyError: \'commits\'\n\nDuring handling of the above '
             "exception, another exception occurred:\n\nTraceback (most recent call last):\n"
             '  File "b.py", line 9, in h\nRuntimeError: the batch could not be written\n')
    assert query_error_line(error) == "RuntimeError: the batch could not be written"


def test_a_failed_query_without_a_trace_is_its_first_line_and_nothing_is_unknown():
    assert query_error_line("\n\n  Query terminated by the user  \nmore\n=== Streaming Query ===\nplan") == \
        "Query terminated by the user"
    assert query_error_line("") == "unknown error"
    assert query_error_line("=== Streaming Query ===\nIdentifier: x") == "unknown error", "only the plan: no error"
    cut = query_error_line("java.lang.IllegalStateException: " + "y" * 50, limit=20)
    assert len(cut) == 20 and cut.endswith("…") and cut.startswith("java.lang.Illegal")


def test_a_failed_query_names_the_innermost_java_cause():
    error = ("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed\n"
             "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n"
             "Caused by: java.io.FileNotFoundException: /data/delta/commits/_delta_log/00012.json (No such file)\n"
             "\tat java.base/java.io.FileInputStream.open0(Native Method)\n")
    assert query_error_line(error) == ("java.io.FileNotFoundException: /data/delta/commits/_delta_log/00012.json "
                                       "(No such file)")
