"""The SparkSession groupscope runs in (local mode by default; any master works)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from typing import Callable, Mapping

__all__ = ["build_session", "launched_by_spark_submit", "recording_class_archive", "stop_session", "DEFAULT_CONF"]

# Spark's own log4j2 configuration prints a banner ("Using Spark's default log4j profile", "Setting default log
# level...") and library warnings on every start; groupscope reports what matters itself, so the JVM logs errors
# only, to its stderr.
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""

DEFAULT_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # The driver collects each batch's output chunks (Arrow IPC) to write Delta and metrics.
    "spark.driver.maxResultSize": "0",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    # Stopping a streaming query in Spark 4 can overflow the default thread stack (-Xss16m). In local mode the
    # driver's JVM also runs the tasks, and its heap holds little for long (chunks of packed records in flight, a
    # few MB of state): the serial collector starting from a 64 MB heap grows it only as far as the batches need,
    # where G1 kept 0.4-0.8 GB more committed from one run to the next on the 5M-record catch-up
    # (benchmarks/README.md). Executors of a cluster keep the JVM's default collector.
    # The driver's JVM compiles with the quick compiler only (C1, no C2): its own work is moving opaque payloads
    # between Python and Spark, and on the 5M-record catch-up the JIT's optimizing compiler threads took 6.6 of the
    # JVM's 13 CPU seconds, most of them in the first seconds, on the two cores the start-up and the first batch
    # need. With C1 alone they took 1.5 s and the first batch was planned 0.6 s sooner.
    "spark.driver.extraJavaOptions": "-Xss16m -XX:+UseSerialGC -Xms64m -XX:TieredStopAtLevel=1",
    "spark.executor.extraJavaOptions": "-Xss16m",
    "spark.sql.streaming.stopTimeout": "60s",
    # A restart resumes from the last completed batch; Spark's default keeps 100 batches of offsets and state
    # files, which at 100,000 groups x 20 partitions (37 s batches, about 4 MB of state files each) grew the
    # checkpoint by 6.5 MB a minute for over an hour before the first pruning. Twenty batches still leave room to
    # look back at what a restart read.
    "spark.sql.streaming.minBatchesToRetain": "20",
    "spark.sql.adaptive.enabled": "false",
    # Task workers are forked from a daemon that has already imported pandas, pyarrow and the job's steps, so they
    # start at once and share those pages (see streaming.spark.worker_daemon).
    "spark.python.daemon.module": "streaming.spark.worker_daemon",
    # ...and each task gets a fresh one, which returns its memory when the task ends. Reused workers each kept the
    # peak of the largest batch they had served, and the three processes Spark starts to plan the Python data
    # source stayed resident after their one use: about 250 MB of a 5M-record catch-up's peak. A fork from the
    # preloaded daemon costs milliseconds; what a fresh worker gives up is the step kept from the last batch
    # (streaming.spark.stateful), and restoring a shard from its state bytes instead costs about 10 ms per 20,000
    # group-partitions (benchmarks/bench_scale.py).
    "spark.python.worker.reuse": "false",
}


def _log4j2_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"groupscope-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}"
                                               ".properties")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == _LOG4J2:
                return path
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(_LOG4J2)
    return path


def build_session(*, master: str = "local[2]", app_name: str = "groupscope", shuffle_partitions: int = 4,
                  driver_memory: str = "2g", conf: Mapping[str, str] | None = None, jvm_log: str | None = None,
                  class_archive: bool = True):
    """Builds (or reuses) the session.

    ``class_archive``: start the driver's JVM from a class-data-sharing archive of an earlier run, or record one
    when there is none yet (:mod:`streaming.spark.class_archive`); stop the session with :func:`stop_session` so
    that a recording is kept.

    ``jvm_log``: a file that takes the JVM's (and Spark's Python workers') own stderr instead of the terminal, so
    an interactive view is not interleaved with Java output; without one, that output becomes records of the
    ``groupscope.jvm`` logger (:mod:`streaming.spark.jvm_output`), start-up chatter dropped. Ctrl-C stays with the
    caller: PySpark's SIGINT handler (cancel every Spark job, then raise) would fail the batch in flight and print
    Java stack traces, so the handler in place before the session started is put back; the caller stops the query
    cleanly instead.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers must run the interpreter that has groupscope installed, not whatever "python3" is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    from pyspark.sql import SparkSession

    submitted = launched_by_spark_submit()
    # Under spark-submit the JVM and its master are the command line's: a master set here would replace it.
    builder = SparkSession.builder if submitted else SparkSession.builder.master(master)
    builder = builder.appName(app_name)
    settings = dict(DEFAULT_CONF)
    settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings["spark.driver.memory"] = driver_memory
    settings.update(conf or {})
    log4j = f"-Dlog4j2.configurationFile=file:{_log4j2_file()}"
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        if "log4j2.configurationFile" not in settings.get(key, ""):
            settings[key] = f"{settings.get(key, '')} {log4j}".strip()
    archive = None
    if class_archive and not _gateway_running() and not submitted:
        from streaming.spark.class_archive import ClassArchive

        archive = ClassArchive.for_driver(extra_class_path=settings.get("spark.driver.extraClassPath", ""))
        if archive is not None:
            key = "spark.driver.extraJavaOptions"
            settings[key] = f"{settings.get(key, '')} {archive.java_options()}".strip()
    for key, value in settings.items():
        builder = builder.config(key, value)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    # The JVM inherits fd 2 when it is launched: point fd 2 at the log file, or at the pipe that turns the JVM's
    # output into groupscope log records (see jvm_output), for the launch only.
    from streaming.spark.jvm_output import JvmOutput

    output = None
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    if jvm_log is not None:
        log_fd = os.open(jvm_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    else:
        output = JvmOutput().start()
        log_fd = output.write_fd
    os.dup2(log_fd, 2)
    if output is None:
        os.close(log_fd)
    # In local mode Spark's Python processes inherit the JVM's environment: their path starts with groupscope's
    # sitecustomize folder, which takes PySpark's archives off it (see streaming.spark.import_path). For the launch
    # only, like fd 2: the JVM keeps the environment it was started with.
    saved_pythonpath = os.environ.get("PYTHONPATH")
    if master.startswith("local"):
        from streaming.spark.import_path import site_dir

        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (site_dir(), saved_pythonpath) if p)
    restore_popen = _jvm_ignores_sigterm()
    try:
        spark = builder.getOrCreate()
    finally:
        restore_popen()
        if saved_pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_pythonpath
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        os.close(saved_stderr)
        if output is not None:
            output.close_writer()  # the reader ends when the JVM (or, if none was started, nobody) holds the pipe
        if main and previous is not None:
            signal.signal(signal.SIGINT, previous)
    spark.sparkContext.setLogLevel("ERROR")
    _archives[id(spark.sparkContext)] = archive
    if output is not None:
        _outputs[id(spark.sparkContext)] = output
    for earlier in _outputs.values():  # a session in a JVM that an earlier one started: its output is news again
        earlier.stopping.clear()  # type: ignore[attr-defined]
    return spark


_archives: dict[int, object] = {}  # SparkContext id -> the ClassArchive its JVM was started with (or None)
_outputs: dict[int, object] = {}  # SparkContext id -> the JvmOutput its JVM's stderr goes through


def mark_stopping(spark) -> None:
    """The job is stopping: what this session's JVM says of its own end is kept at debug from now on
    (:class:`streaming.spark.jvm_output.JvmOutput`). Cheap enough for a signal handler."""
    output = _outputs.get(id(spark.sparkContext)) if spark is not None else None
    if output is not None:
        output.stopping.set()  # type: ignore[attr-defined]


def _jvm_ignores_sigterm() -> Callable[[], None]:
    """Starts Spark's JVM with SIGTERM ignored, as PySpark starts it with SIGINT ignored; returns the undo.

    A service manager stops a service with SIGTERM to every process of it (systemd's default, ``kill -- -PGID``,
    ``timeout``). The JVM then shut itself down under the driver, and stopping the query and the session logged
    Java stack traces ("Cannot call methods on a stopped SparkContext"). Ignoring SIGTERM from its start, the JVM
    leaves that signal to the driver, which stops the query and then the session, in order. The JVM still exits
    when the driver goes (it watches the pipe on its stdin), and SIGKILL still kills it with the rest of the
    group. Only the launch's child changes: a SIGTERM to the driver meanwhile is handled as always. The Python
    processes the JVM starts in local mode put SIGTERM back to its default (``worker_site``): Spark stops them
    with it, and a signal to the whole group still ends them (what the JVM reports of that while the job stops is
    kept at debug: :func:`mark_stopping`)."""
    import subprocess

    from pyspark import java_gateway

    launch = java_gateway.Popen
    if launch is not subprocess.Popen:  # already wrapped (a nested start): leave it
        return lambda: None

    def popen(*args, **kwargs):
        inner = kwargs.get("preexec_fn")

        def preexec() -> None:  # in the child, between fork and exec
            if inner is not None:
                inner()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        kwargs["preexec_fn"] = preexec
        return launch(*args, **kwargs)

    java_gateway.Popen = popen  # type: ignore[assignment, misc]

    def restore() -> None:
        java_gateway.Popen = launch  # type: ignore[misc]

    return restore


def launched_by_spark_submit() -> bool:
    """True when ``spark-submit`` started this Python process: its JVM is running already, started with the
    command line's master, jars and driver options, and hands its address down in the environment."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def _gateway_running() -> bool:
    """True when this process already has Spark's JVM: a new session reuses it, with the options it started with."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def recording_class_archive(spark) -> bool:
    """True when this session's JVM records a class archive: its :func:`stop_session` takes a few seconds more."""
    archive = _archives.get(id(spark.sparkContext))
    return archive is not None and archive.recording is not None


def stop_session(spark) -> None:
    """Stops the session. Where its JVM records a class archive, the JVM is also let exit (it writes the archive
    as it exits) and the archive kept; a later session in this process then starts a JVM of its own."""
    archive = _archives.pop(id(spark.sparkContext), None)
    spark.stop()
    if archive is None or archive.recording is None:
        return
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the bridge may already be gone; the JVM still exits on its stdin closing
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None
    archive.finish(proc)
