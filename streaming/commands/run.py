"""``groupscope run``, ``groupscope heartbeat`` and ``groupscope status``: the job, its emitter alone, and a table
of groups read back from the Delta tables."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import click

from streaming.config import ConfigError, load_settings

__all__ = ["run", "heartbeat", "status"]


def _overrides(bootstrap, cluster, metrics_port, delta_path, checkpoint, master, api_port=None) -> dict:
    out: dict = {}
    if api_port is not None:
        out["api"] = {"enabled": True, "port": api_port}
    if bootstrap:
        out["kafka"] = {"bootstrap.servers": bootstrap}
    if cluster:
        out["cluster"] = cluster
    if metrics_port is not None:
        out["metrics"] = {"port": metrics_port}
    if delta_path:
        out["delta"] = {"path": delta_path}
    if checkpoint or master:
        out["spark"] = {k: v for k, v in (("checkpoint", checkpoint), ("master", master)) if v}
    return out


def _settings(config, **flags):
    try:
        overrides = _overrides(**flags)
        settings = load_settings(config, None)
        if settings.clusters and (flags.get("bootstrap") or flags.get("cluster")):
            click.echo(f"groupscope: --bootstrap and --cluster name one cluster, but the configuration watches "
                       f"several ({', '.join(settings.clusters)}): set them under clusters.NAME.kafka instead", err=True)
            sys.exit(2)
        if overrides:
            merged = settings.model_dump()
            for section, values in overrides.items():
                if isinstance(values, dict):
                    merged[section] = {**merged[section], **values}
                else:
                    merged[section] = values
            settings = type(settings).model_validate(merged)
        return settings
    except ConfigError as exc:
        for line in exc.lines:
            click.echo(f"groupscope: {line}", err=True)
        sys.exit(2)
    except Exception as exc:  # pydantic ValidationError from flag values
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):
            from streaming.config import format_errors

            for line in format_errors(exc, "flag"):
                click.echo(f"groupscope: {line}", err=True)
            sys.exit(2)
        raise


def exit_unless_java(command: str) -> None:
    """Ends ``command`` with one line and status 1 when Spark's launcher will find no Java 17 or newer: said before
    anything starts or is cleared, not as PySpark's gateway error once the session is built."""
    from streaming.spark.java import java_problem

    problem = java_problem()
    if problem is not None:
        click.echo(f"groupscope {command}: {problem}", err=True)
        sys.exit(1)


def defaults_line(settings) -> str | None:
    """With no Kafka named (no --config, --bootstrap or GROUPSCOPE_KAFKA_BOOTSTRAP), ``run`` goes to the default
    localhost:9092 and creates a topic there: the line that says so, and where the tables and the checkpoint go,
    before it starts. None when a Kafka was named."""
    default_kafka = type(settings).model_fields["kafka"].default_factory()["bootstrap.servers"]
    if settings.clusters or settings.kafka.get("bootstrap.servers") != default_kafka:
        return None
    hb = settings.heartbeat
    writes = (f"creates the topic {hb.topic} if missing and writes end offsets to it every {hb.interval_seconds:g} "
              "s" if hb.enabled else "writes nothing to it")

    def where(path: str) -> str:
        return path if "://" in path else str(Path(path).resolve())

    return (f"no Kafka configured (--bootstrap, --config or GROUPSCOPE_KAFKA_BOOTSTRAP): reading Kafka at the default "
            f"{default_kafka}, where groupscope {writes}; Delta tables in {where(settings.delta.path)}, checkpoint in "
            f"{where(settings.spark.checkpoint)}")


_common = [
    click.option("--config", "config", metavar="FILE", help="YAML configuration file."),
    click.option("--bootstrap", help="Kafka bootstrap servers (kafka.bootstrap.servers)."),
    click.option("--cluster", help="Cluster name used in metric labels and table rows."),
    click.option("--metrics-port", type=click.IntRange(0, 65535), help="Port of the /metrics endpoint."),
    click.option("--delta-path", help="Directory or URI of the Delta tables."),
    click.option("--checkpoint", help="Spark checkpoint directory."),
    click.option("--master", help="Spark master (default local[2])."),
]


def common_options(func):
    for option in reversed(_common):
        func = option(func)
    return func


LOG_HANDLER = "groupscope"


def configure_logging(log_level: str = "info", log_format: str = "text") -> None:
    """groupscope's lines at ``log_level`` on stderr, one record per line; Spark's Python bridge (py4j) at warnings:
    it logs one INFO line per micro-batch callback, tens of thousands a day, none of them for an operator.

    ``log_format``: ``text`` (time, level, logger, message) or ``json``: one JSON object per line with ``time``
    (ISO 8601, UTC, milliseconds), ``level``, ``logger`` and ``message`` (and ``exc_info`` where a record has
    one), made by python-json-logger. The handler writes to its own copy of stderr: while Spark's JVM starts, the
    process's stderr briefly points at the pipe that turns the JVM's output into records
    (``streaming.spark.jvm_output``), and groupscope's own lines must not take that detour."""
    level = getattr(logging, log_level.upper())
    try:
        stream = open(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="backslashreplace")
    except (AttributeError, OSError, ValueError):  # a stderr without a file descriptor (captured)
        stream = sys.stderr
    handler = logging.StreamHandler(stream)
    handler.set_name(LOG_HANDLER)
    from streaming.spark.jvm_exit import BridgeNoise

    handler.addFilter(BridgeNoise())  # py4j's broken-connection tracebacks only at debug
    if log_format == "json":
        from pythonjsonlogger.json import JsonFormatter

        formatter = JsonFormatter("{asctime}{levelname}{name}{message}", style="{",
                                  rename_fields={"asctime": "time", "levelname": "level", "name": "logger"})
        formatter.converter = time.gmtime  # 2026-01-05T04:12:33.123Z
        formatter.default_time_format, formatter.default_msec_format = "%Y-%m-%dT%H:%M:%S", "%s.%03dZ"
        handler.setFormatter(formatter)
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == LOG_HANDLER]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # Python warnings of libraries as records too, not raw text on stderr
    logging.getLogger("py4j").setLevel(max(level, logging.WARNING))


@click.command()
@common_options
@click.option("--duration", type=click.FloatRange(min=0), help="Stop after this many seconds (default: run until "
              "SIGTERM/Ctrl-C).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True, help="groupscope's own log level (Spark's Python bridge logs warnings only).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text lines, or one JSON object per line (time, level, logger, message).")
@click.option("--api-port", type=click.IntRange(0, 65535), help="Serve the HTTP API (Burrow's /v3 paths and "
              "groupscope's /v1) on this port (api.enabled and api.port).")
def run(config, bootstrap, cluster, metrics_port, delta_path, checkpoint, master, duration, log_level,
        log_format, api_port) -> None:
    """Run the streaming job against a Kafka cluster, or several (clusters: in the configuration)."""
    settings = _settings(config, bootstrap=bootstrap, cluster=cluster, metrics_port=metrics_port,
                         delta_path=delta_path, checkpoint=checkpoint, master=master, api_port=api_port)
    configure_logging(log_level, log_format)
    from streaming.driver.runner import GroupscopeJob

    def fail(message: str) -> None:
        """A start that failed: one line (a JSON record with --log-format json), then exit status 1."""
        if log_format == "json":
            logging.getLogger("groupscope.run").error("%s", message)
        else:
            click.echo(f"groupscope run: {message}", err=True)
        sys.exit(1)

    said = defaults_line(settings)
    if said is not None:  # before anything connects, so that nothing is written anywhere unannounced
        logging.getLogger("groupscope.run").warning("%s", said)
    from streaming.spark.java import java_problem

    problem = java_problem()
    if problem is not None:
        fail(problem)
    job = GroupscopeJob(settings)
    try:
        job.start()
    except KeyboardInterrupt:  # Ctrl-C while waiting for Kafka or Spark to start: stop, as later, in one line
        logging.getLogger("groupscope.run").info("interrupted while starting; stopping")
        job.stop()
        sys.exit(130)
    except OSError as exc:
        import errno

        if exc.errno != errno.EADDRINUSE:
            fail(str(exc))
        fail(f"metrics port {settings.metrics.host}:{settings.metrics.port} is already in use (set --metrics-port "
             "or metrics.port)")
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback
        fail(str(exc))
    from streaming.driver.runner import CheckpointUnusable
    from streaming.spark.jvm_exit import JvmExited

    failure = None
    try:
        job.run(duration_s=duration)
    except (JvmExited, CheckpointUnusable) as exc:
        failure = exc
    finally:
        job.stop()
    if failure is not None:  # one line, then a status a service manager restarts on
        logging.getLogger("groupscope.run").error("%s", failure)
        sys.exit(1)


@click.command()
@click.option("--config", "config", metavar="FILE", help="YAML configuration file (kafka and heartbeat sections).")
@click.option("--bootstrap", help="Kafka bootstrap servers (kafka.bootstrap.servers).")
@click.option("--once", is_flag=True, help="Emit one heartbeat and exit.")
def heartbeat(config, bootstrap, once) -> None:
    """Run the heartbeat emitter alone (end offsets to the heartbeat topic every few seconds)."""
    settings = _settings(config, bootstrap=bootstrap, cluster=None, metrics_port=None,
                         delta_path=None, checkpoint=None, master=None)
    from streaming.kafka.client import KafkaAccess, KafkaUnavailable
    from streaming.kafka.heartbeat import HeartbeatEmitter

    # One tick says its outcome in one line, the reason included, so only errors are logged beside it; the
    # long-running emitter logs its warnings (a missing topic, Kafka lost and back) with their times.
    configure_logging("error" if once else "info")
    try:
        KafkaAccess(settings.kafka).wait_reachable(8.0)
    except KafkaUnavailable as exc:
        click.echo(f"groupscope heartbeat: {exc}", err=True)
        sys.exit(1)

    emitter = HeartbeatEmitter.from_settings(settings.kafka, settings.heartbeat, settings.source.offsets_topic)
    if once:
        ok = emitter.tick()
        s = emitter.status
        emitter.stop()
        if ok:
            click.echo(f"groupscope heartbeat: sent the end offsets of {s.partitions} partitions to "
                       f"{settings.heartbeat.topic}", err=True)
        else:
            click.echo(f"groupscope heartbeat: nothing sent: {s.last_error or 'no reason given'}", err=True)
        sys.exit(0 if ok else 1)
    emitter.start()
    hb = settings.heartbeat
    logging.getLogger("groupscope.heartbeat").info(
        "sending the end offsets of the watched partitions to %s every %g s; Ctrl-C stops", hb.topic,
        hb.interval_seconds)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        emitter.stop()


def tables_read_lines(found, storage_options) -> list[str]:
    """What ``status`` says before its table: which tables it reads and when each set was last written, with a
    warning where that is long ago (a stopped job leaves tables that look current)."""
    import datetime as dt

    from streaming.commands.status_view import STALE_AFTER, format_age
    from streaming.commands.table_sets import last_write

    now = dt.datetime.now(dt.timezone.utc)
    whose = "the demo's tables" if found.demo is not None else "the Delta tables"
    lines = []
    for cluster, path in found.sets:
        written = last_write(path, storage_options=storage_options)
        where = f"cluster {cluster}: {whose} in {path}" if found.several else f"{whose} in {path}"
        if written is None:
            lines.append(f"{where}, not written yet")
            continue
        age = (now - written).total_seconds()
        line = f"{where}, last written {written:%Y-%m-%d %H:%M:%S} UTC ({format_age(age)} ago)"
        if now - written > STALE_AFTER:
            line += (f": their figures are older than {STALE_AFTER.total_seconds() / 60:.0f} min (marked "
                     "\"as of\"); is the job running?")
        lines.append(line)
    return lines


@click.command()
@click.option("--config", "config", metavar="FILE",
              help="YAML configuration file (status reads its delta section: path, storage_options).")
@click.option("--delta-path", metavar="PATH",
              help="Directory or URI of the Delta tables (default: delta.path of --config or $GROUPSCOPE_DELTA_PATH, "
                   "else groupscope-data/delta, else the last groupscope demo's).")
@click.option("--json", "as_json", is_flag=True, help="JSON lines instead of a table.")
def status(config, delta_path, as_json) -> None:
    """Show every group from the Delta tables, worst first: state, members, lag, lag seconds (>N: at least N s),
    status, rebalances in the last hour, rebalance verdict and the reason to look. Groups gone in the last hour are
    listed last, as deleted."""
    settings = _settings(config, bootstrap=None, cluster=None, metrics_port=None, delta_path=delta_path,
                         checkpoint=None, master=None)
    from streaming.commands.status_view import load_clusters_status, load_status, render_status
    from streaming.commands.table_sets import find_table_sets

    found = find_table_sets(settings, delta_path)
    options = settings.delta.storage_options
    try:
        rows = load_clusters_status(found.sets, storage_options=options) if found.several else \
            load_status(found.root, storage_options=options)
    except FileNotFoundError as exc:
        hint = "" if found.demo_looked is None else (f"; nor a demo's under {found.demo_looked}. Name the tables' "
                                                     "folder with --delta-path (a demo's is delta/ in its --dir)")
        click.echo(f"groupscope status: {exc}{hint}", err=True)
        sys.exit(1)
    for line in tables_read_lines(found, options):
        click.echo(f"groupscope status: {line}", err=True)
    if as_json:
        import json

        for row in rows:
            click.echo(json.dumps(row, default=str))
    else:
        render_status(rows)
    # deltalake 1.6 with pyarrow 26 often aborts at interpreter exit ("terminate called without an active
    # exception", status 134) once a table was read; everything is printed by now, so leave without the teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
