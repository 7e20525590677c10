"""When Spark's JVM dies under the job (the kernel's out-of-memory killer, ``kill -9``, a crash): one line that says
so, instead of the screens of tracebacks its Python bridge would print.

With the JVM gone every call into it fails: the supervisor's look at the query, the micro-batch callback in
flight, PySpark's accumulator server. Each of those would report the broken connection in its own traceback (py4j
through the logging module, the accumulator server straight to stderr), none of which says what happened or what
to do. The job instead asks whether the JVM process has exited (:func:`jvm_exit_status`), says so once
(:class:`JvmExited`), and stops; :class:`BridgeNoise` keeps py4j's own records out of the log unless the log level
is ``debug``, and :func:`quiet_accumulator_server` turns the accumulator server's stderr traceback into a debug
record. A service manager restarts the job, which resumes from its checkpoint.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess

__all__ = ["BridgeNoise", "JvmExited", "describe_exit", "jvm_exit_status", "jvm_exited_error",
           "quiet_accumulator_server"]

log = logging.getLogger("groupscope.run")


class JvmExited(RuntimeError):
    """Spark's JVM is gone: nothing of the job can go on in this process. ``status``: its exit status;
    ``what``: the sentence that says so, which the message goes on from with what to do."""

    def __init__(self, status: int, advice: str) -> None:
        self.status = status
        self.what = f"Spark's JVM exited: {describe_exit(status)}"
        super().__init__(f"{self.what}; {advice}")


def jvm_exit_status(spark, wait_s: float = 0.0) -> int | None:
    """The JVM process's exit status once it has exited (negative: the signal that ended it), else None (running,
    or not a JVM this process started, such as a Spark Connect server).

    ``wait_s``: how long to wait for the exit. A process being killed closes its sockets before its exit can be
    collected, so a caller whose call into the JVM just failed waits a moment before concluding it still runs."""
    try:
        proc = spark.sparkContext._gateway.proc
    except Exception:  # noqa: BLE001 - no local gateway: nothing to tell
        return None
    if proc is None:
        return None
    if wait_s > 0:
        try:
            return proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            return None
    return proc.poll()


def describe_exit(status: int) -> str:
    """``killed by SIGKILL (the out-of-memory killer or kill -9)``, ``exit status 1``..."""
    if status >= 0:
        return f"exit status {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"killed by {name}" + (" (the out-of-memory killer or kill -9)" if -status == signal.SIGKILL else "")


def jvm_exited_error(status: int) -> JvmExited:
    return JvmExited(status, "the job stops. Start it again: it resumes from its checkpoint, where the last "
                             "completed micro-batch ended. If the out-of-memory killer ended it, give the job more "
                             "memory (spark.driver_memory, the container's limit)")


class BridgeNoise(logging.Filter):
    """Drops the records py4j (Spark's Python bridge) writes, broken-connection tracebacks above all, unless the
    root logger is at DEBUG. Matched by the file that logged, not the logger's name: py4j logs some of them through
    the root logger."""

    _where = f"{os.sep}py4j{os.sep}"

    def filter(self, record: logging.LogRecord) -> bool:
        return self._where not in record.pathname or logging.getLogger().level <= logging.DEBUG


def quiet_accumulator_server(spark) -> None:
    """PySpark's accumulator server prints a traceback to stderr when the JVM's connection to it breaks (Python's
    ``socketserver`` default); make it a debug record."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: log.debug("accumulator server: connection from %s ended "
                                                                 "abruptly", address, exc_info=True)
