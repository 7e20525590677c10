"""The JVM's stderr as groupscope log records (``streaming.spark.jvm_output``): start-up chatter dropped, one record
per event at ERROR or WARNING, stack traces folded into the line that starts them and counted unless debugging.

The pipe is written here by the test itself, as the JVM would write it; no JVM is started."""

from __future__ import annotations

import logging
import os
import time

import pytest

from streaming.spark.jvm_output import JVM_LOGGER, JvmOutput, is_noise


def _through_jvm_output(text: str, logger: logging.Logger) -> None:
    out = JvmOutput(logger).start()
    os.write(out.write_fd, text.encode())
    out.close_writer()
    out.join(10)


def test_the_jvm_output_becomes_records_without_its_start_up_chatter(keep):
    logger, lines = keep
    logger.setLevel(logging.INFO)
    _through_jvm_output(
        "WARNING: Using incubator modules: jdk.incubator.vector\n"
        'Setting default log level to "WARN".\n'
        "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).\n"
        "26/01/05 10:00:00 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7)\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "reader.py", line 80, in read_ranges\n'
        "streaming.kafka.reader.ReadTimeout: no progress for 300 s\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:600)\n"
        "\t... 12 more\n"
        "26/01/05 10:00:01 WARN TaskSetManager: Lost task 0.0 in stage 3.0\n"
        "a last line without a newline", logger)
    assert [(r.levelno, r.getMessage()) for r in lines.records] == [
        (logging.ERROR, "26/01/05 10:00:00 ERROR Executor: Exception in task 0.0 in stage 3.0 (TID 7) (5 more lines "
                        "of trace; --log-level debug shows them)"),
        (logging.WARNING, "26/01/05 10:00:01 WARN TaskSetManager: Lost task 0.0 in stage 3.0"),
        (logging.WARNING, "a last line without a newline"),
    ]


def test_the_jvm_trace_is_kept_at_debug(keep):
    logger, lines = keep
    _through_jvm_output("26/01/05 ERROR Executor: boom\njava.io.IOException: gone\n\tat a.b.C(C.java:1)\n", logger)
    assert lines.messages() == ["26/01/05 ERROR Executor: boom\njava.io.IOException: gone\n\tat a.b.C(C.java:1)"]


def test_a_bare_python_traceback_is_named_by_its_exception(keep):
    logger, lines = keep
    logger.setLevel(logging.INFO)
    _through_jvm_output("Traceback (most recent call last):\n  File \"runner.py\", line 265, in main\n"
                        "    serve()\nConnectionResetError: [Errno 104] Connection reset by peer\n", logger)
    assert lines.messages() == ["ConnectionResetError: [Errno 104] Connection reset by peer (3 more lines of trace; "
                                "--log-level debug shows them)"]


def test_fatal_is_an_error_and_any_other_line_a_warning(keep):
    logger, lines = keep
    _through_jvm_output("26/01/05 10:00:00 FATAL SparkContext: out of memory\n"
                        "26/01/05 10:00:01 INFO BlockManager: removed\n"
                        "ERRORS is not a log4j level\n", logger)
    assert [(r.levelno, r.getMessage()) for r in lines.records] == [
        (logging.ERROR, "26/01/05 10:00:00 FATAL SparkContext: out of memory"),
        (logging.WARNING, "26/01/05 10:00:01 INFO BlockManager: removed"),
        (logging.WARNING, "ERRORS is not a log4j level")]


def test_one_line_of_trace_is_counted_in_the_singular(keep):
    logger, lines = keep
    logger.setLevel(logging.INFO)
    _through_jvm_output("26/01/05 ERROR Executor: boom\n\tat a.b.C(C.java:1)\n", logger)
    assert lines.messages() == ["26/01/05 ERROR Executor: boom (1 more line of trace; --log-level debug shows them)"]


def test_windows_line_ends_blank_lines_and_bytes_that_are_not_utf8_are_tolerated(keep):
    logger, lines = keep
    out = JvmOutput(logger).start()
    os.write(out.write_fd, b"first\r\n\n   \nbad \xff byte\n")
    out.close_writer()
    out.join(10)
    assert lines.messages() == ["first", "bad \ufffd byte"]


def test_once_the_job_is_stopping_what_the_jvm_says_is_debug(keep):
    logger, lines = keep
    out = JvmOutput(logger)
    out.stopping.set()
    out.start()
    os.write(out.write_fd, b"26/01/05 ERROR TaskSetManager: Task 0 failed\n")
    out.close_writer()
    out.join(10)
    assert [(r.levelno, r.getMessage()) for r in lines.records] == [
        (logging.DEBUG, "26/01/05 ERROR TaskSetManager: Task 0 failed")]


def test_a_quiet_pipe_ends_an_event_before_the_writer_closes(keep):
    """A trace arrives in one burst; the record of a failure must not wait for the JVM's next line."""
    logger, lines = keep
    logger.setLevel(logging.INFO)
    out = JvmOutput(logger).start()
    try:
        os.write(out.write_fd, b"26/01/05 ERROR Executor: boom\njava.io.IOException: gone\n")
        deadline = time.monotonic() + 5
        while not lines.records and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lines.messages() == ["26/01/05 ERROR Executor: boom (1 more line of trace; --log-level debug shows "
                                    "them)"]
    finally:
        out.close_writer()
        out.join(10)


@pytest.mark.parametrize("line, noise", [
    ("WARNING: Using incubator modules: jdk.incubator.vector", True),
    ('Setting default log level to "WARN".', True),
    ("To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).", True),
    ("  WARNING: Using incubator modules: jdk.incubator.vector", False),  # only at the start of a line
    ("26/01/05 WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address", False),
])
def test_only_the_start_up_chatter_is_noise(line, noise):
    assert is_noise(line) is noise


def test_records_go_to_the_jvm_logger_unless_told_otherwise():
    out = JvmOutput()
    try:
        assert out.logger.name == JVM_LOGGER == "groupscope.jvm"
    finally:
        out.close_writer()
        os.close(out._read_fd)
