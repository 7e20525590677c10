"""``groupscope demo``: the whole product on one machine, with nothing installed but the package.

Services start in order and stop in reverse: librdkafka's mock cluster (a real Kafka-protocol broker on
127.0.0.1), the real streaming job (heartbeat emitter, Spark, Delta tables, metrics endpoint), then the workload
simulator writing what Kafka's group coordinator would write for misbehaving groups (and real messages, so end
offsets move): the scenarios begin when the job watches, so none of their moments passes while Spark starts. The
terminal shows a live view of every group (compact, fixed-width columns, worst first); a progress line says how far
the job is. Ctrl-C (or ``--duration``) stops everything within seconds and prints where the results are. Every log
record of the run goes to ``groupscope.log`` in the demo folder (the JVM's output to ``spark.log``), never to the
terminal.

One clock: the simulation starts at the wall clock's "now" and the job's heartbeats are stamped with the
simulation's clock, so commits, heartbeats, lag snapshots and status changes all share it (at ``--speed 1``, the
default, it is the wall clock). Each run starts from clean state: the embedded broker is new on every run, so a
checkpoint or tables left by an earlier run describe a broker that no longer exists and are removed, once everything
that could stop this run has been checked (``streaming.commands.demo_dir``).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from streaming.config import load_settings

from streaming.commands.demo_dir import (DemoDirError, PortInUse, claim_demo_dir, clear_demo_dir, default_demo_dir,
                                         ensure_ports_free, state_demo_dir)

__all__ = ["DemoOptions", "run_demo", "default_demo_dir", "DemoDirError", "PortInUse"]

DEMO_SCENARIOS = "all"
PLAIN_EVERY_S = 10.0
STOP_WAIT_S = 1.0  # how long Ctrl-C waits for the micro-batch in flight
LOG_FILE = "groupscope.log"  # every Python log record of the run (the job's, librdkafka's), beside spark.log


@dataclass(frozen=True)
class DemoOptions:
    scenarios: tuple[str, ...] = (DEMO_SCENARIOS,)
    seed: int = 7
    speed: float = 1.0
    duration_s: float | None = None
    directory: str | None = None  # None: default_demo_dir()
    metrics_port: int = 9308
    live: bool = True
    offsets_partitions: int = 50
    clusters: int = 1  # embedded clusters, each with a broker of its own, watched by the one job
    api_port: int | None = None  # serve the HTTP API on this port (None: off)


def cluster_names(count: int) -> list[str]:
    """The embedded clusters' names: ``demo`` alone, else ``demo-1``, ``demo-2``..."""
    return ["demo"] if count == 1 else [f"demo-{i}" for i in range(1, count + 1)]


def deal_scenarios(scenarios: list[str], count: int) -> list[list[str]]:
    """The scenarios each cluster runs: dealt out in turn (so the machine runs each scenario once), or all of
    them on every cluster when there are fewer scenarios than clusters."""
    if len(scenarios) < count:
        return [list(scenarios) for _ in range(count)]
    return [scenarios[i::count] for i in range(count)]


def _log_to_file(path: Path) -> Callable[[], None]:
    """Sends every log record of this process (the job's, librdkafka's through ``groupscope.librdkafka``, Python
    warnings) to ``path`` instead of the terminal, where a line would tear the live view apart. Returns what puts
    the logging back as it was."""
    from streaming.spark.jvm_exit import BridgeNoise

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(BridgeNoise())
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    for old in handlers:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one INFO line per micro-batch callback
    logging.captureWarnings(True)

    def restore() -> None:
        root.removeHandler(handler)
        handler.close()
        for old in handlers:
            root.addHandler(old)
        root.setLevel(level)
        logging.captureWarnings(False)

    return restore


def _group_rows(view, gone: dict[str, dict[str, Any]] | None = None,
                now_ms: int | None = None) -> list[dict[str, Any]]:
    """The live view's rows, worst first: the rows ``status`` shows (``status_view.shown_row``), their rebalances
    and verdicts counted over the hour before ``now_ms`` (the simulation's clock; default the wall clock), as
    ``status`` counts them. ``gone``: rows of groups seen earlier that the job no longer reports (deleted by
    DeleteGroups or by their last offsets expiring); they stay listed, last, marked deleted, so a group that vanishes
    says why."""
    from streaming.commands.status_view import deleted_row, shown_row, sort_by_severity
    from streaming.schema.read_model import RECENT_WINDOW_MS

    since_ms = (int(time.time() * 1000) if now_ms is None else now_ms) - RECENT_WINDOW_MS
    rows = [shown_row(g, view.activity.get(gid), since_ms) for gid, g in view.groups.items()]
    if gone is not None:
        live = {r["group"] for r in rows}
        for r in rows:
            gone[r["group"]] = r
        deleted = [deleted_row(gid, "group deleted (no longer in __consumer_offsets)", type=last.get("type"),
                               rebalances_1h=last.get("rebalances_1h"))
                   for gid, last in sorted(gone.items()) if gid not in live]
        return sort_by_severity(rows) + deleted
    return sort_by_severity(rows)


def _progress_line(job, started: float, sim) -> str:
    feeds = list(job.metrics.clusters.values()) if job.metrics else []
    healths = [f.state.view().health for f in feeds]
    parts = [f"simulated {sim.elapsed_ms / 1000:,.0f} s", f"batches {sum(c.status.batches for c in job.clusters)}"]
    if healths:
        parts.append(f"records decoded {sum(h.records_decoded for h in healths):,}")
        known = [h for h in healths if h.offsets_partitions]
        behind = sum(p.behind or 0 for h in known for p in h.offsets_partitions)
        if all(h.caught_up for h in healths):
            parts.append("caught up")
        elif known:
            parts.append(f"catching up: {behind:,} records of __consumer_offsets to go")
        else:
            parts.append("starting: waiting for the first heartbeat")
    parts.append(f"up {time.monotonic() - started:,.0f} s")
    return " | ".join(parts)


def _job_settings(root: Path, options: DemoOptions, bootstraps: list[str]) -> dict[str, Any]:
    """The job's settings for the demo's embedded clusters (``bootstraps``, one per cluster), before the
    ``GROUPSCOPE_*`` variables are applied."""
    names = cluster_names(options.clusters)
    job_settings = {
        "kafka": {"bootstrap.servers": bootstraps[0]},
        "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 1.0, "shuffle_partitions": 2},
        "delta": {"path": str(root / "delta")},
        # The demo's batches take a second or two: half a minute without one is a stall worth a log line.
        "metrics": {"host": "127.0.0.1", "port": options.metrics_port, "ready_max_batch_age_seconds": 30.0},
        # The embedded broker cannot describe topic configurations; the heartbeat topic is the demo's own (each
        # broker is made with it).
        "heartbeat": {"interval_seconds": 2.0, "check_topic_config": False},
        # Short thresholds so a few minutes of demo show STOP and STALL, not only OK: the stalled scenario's
        # member stops polling at 20 s and is evicted at 50 s, so STOP must come sooner than 30 s after it.
        "model": {"snapshot_interval_seconds": 2.0, "lag_interval_seconds": 10.0, "stop_after_seconds": 20.0},
    }
    if len(names) == 1:
        job_settings["cluster"] = names[0]
    else:  # one table set and checkpoint per cluster, under delta/<name> and checkpoint/<name>
        job_settings["clusters"] = {n: {"kafka": {"bootstrap.servers": b}} for n, b in zip(names, bootstraps)}
    if options.api_port is not None:
        job_settings["api"] = {"enabled": True, "host": "127.0.0.1", "port": options.api_port}
    return job_settings


def run_demo(options: DemoOptions, echo: Callable[[str], None] = print, out=None) -> int:
    """Runs the demo until Ctrl-C or ``options.duration_s`` (counted from this call). ``echo``: status lines;
    ``out``: the stream of the view (default stdout; a live view when it is a terminal, else a plain summary)."""
    from streaming.kafka.mock_cluster import MockCluster
    from streaming.driver.runner import GroupscopeJob
    from streaming.simulator import Simulation, SimulationRunner, resolve
    from streaming.simulator.kafka_sink import KafkaSink

    started = time.monotonic()
    deadline = None if options.duration_s is None else started + options.duration_s
    root = (Path(options.directory) if options.directory else default_demo_dir()).expanduser().resolve()
    names = cluster_names(options.clusters)
    # Everything that can fail is checked before the last demo's data is cleared: the settings (GROUPSCOPE_*
    # variables; the brokers' addresses are not known yet and change nothing), the folder, the ports.
    load_settings(None, _job_settings(root, options, ["127.0.0.1:9092"] * len(names)))
    lock = claim_demo_dir(root)
    try:
        ensure_ports_free({"metrics": options.metrics_port, "api": options.api_port})
    except BaseException:
        os.close(lock)
        raise
    clear_demo_dir(root)
    restore_logging = _log_to_file(root / LOG_FILE)
    scenarios = resolve(list(options.scenarios))
    where = "an embedded Kafka-protocol broker" if len(names) == 1 else \
        f"{len(names)} embedded Kafka-protocol clusters ({', '.join(names)})"
    echo(f"groupscope demo: starting {where}, {len(scenarios)} simulated scenario(s) and the streaming job (data in "
         f"{root})")
    brokers: list = []
    runners: list = []
    sinks: list = []
    job = None
    job_thread = None
    interrupted = False
    try:
        for _ in names:
            broker = MockCluster(1)
            brokers.append(broker)
            broker.create_topic("__consumer_offsets", options.offsets_partitions)
            broker.create_topic("groupscope-heartbeat", 1)
        settings = load_settings(None, _job_settings(root, options, [b.bootstrap_servers for b in brokers]))
        # Heartbeats on the simulation's clock once it runs (the wall clock until then, which it starts from): the
        # records' timestamps and the end offsets' stamps agree. Every cluster's simulation starts at the same
        # moment and runs at the same speed, so the first one's clock serves all of them.
        running: list = []
        job = GroupscopeJob(settings, install_signal_handlers=False, jvm_log=str(root / "spark.log"),
                            heartbeat_clock=lambda: running[0].now_ms / 1000.0 if running else time.time())
        job.start()
        metrics_url = f"http://127.0.0.1:{job.metrics.port}/metrics"
        api = f"; API at http://127.0.0.1:{job.metrics.api.port}/v3/kafka" if job.metrics.api is not None else ""
        echo(f"groupscope demo: metrics at {metrics_url}{api}; Ctrl-C to stop")

        def supervise() -> None:
            try:
                job.run()
            except Exception:  # noqa: BLE001 - kept in job.failure; the view says it and stops
                pass

        job_thread = threading.Thread(target=supervise, name="groupscope-supervisor", daemon=True)
        job_thread.start()
        # The scenarios start once the job is up, so it sees each of them from its first second: started earlier,
        # their first minute would be replayed as history while Spark starts, with statuses held at OK.
        start_ms = int(time.time() * 1000)
        sims = []
        dealt_out = deal_scenarios([sc.name for sc in scenarios], len(names))
        for i, (broker, dealt) in enumerate(zip(brokers, dealt_out)):
            sim = Simulation(dealt, seed=options.seed + i, offsets_partitions=options.offsets_partitions,
                             start_ms=start_ms)
            sink = KafkaSink(broker.bootstrap_servers, create_topic=broker.create_topic)
            sinks.append(sink)
            runners.append(SimulationRunner(sim, sink, speed=options.speed).start())
            sims.append(sim)
        running.append(sims[0])
        _show(job, runners, sims[0], options, deadline, started, out if out is not None else sys.stdout)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        # A second Ctrl-C while stopping leaves at once, still without a traceback.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        if interrupted:
            from streaming.spark.session import recording_class_archive

            keeping = job is not None and job.spark is not None and recording_class_archive(job.spark)
            echo("groupscope demo: stopping" + (" (this first time also keeping the JVM's class archive, so that the "
                                                "next starts are faster: a few seconds, more on a busy machine; "
                                                "Ctrl-C again leaves without it)" if keeping else ""))
        for runner in runners:
            try:
                runner.stop()
            except Exception as exc:  # noqa: BLE001 - reported; stopping goes on
                echo(f"groupscope demo: simulator: {type(exc).__name__}: {exc}")
        if job is not None:
            job.request_stop()
            if job_thread is not None:
                job_thread.join(5)
            # The batch in flight gets a second to finish; after that the query is stopped under it (the demo's
            # tables are exactly-once per batch either way, and a person waiting for the prompt matters more).
            job.stop(timeout_s=STOP_WAIT_S)
        for sink in sinks:
            sink.close()
        for broker in brokers:
            broker.close()
        restore_logging()
        os.close(lock)  # another demo may have the folder now
    took = f"stopped after {time.monotonic() - started:,.0f} s"
    tables = written_tables(root / "delta")
    if not tables:  # stopped before the first batch: nothing to look at but the logs
        echo(f"groupscope demo: {took}, before the first batch was written. Logs: {root} ({LOG_FILE}, spark.log)")
        return 0
    echo(f"groupscope demo: {took}. Data: {root} (Delta tables {', '.join(tables)}; logs {LOG_FILE}, spark.log)")
    # Another shell may not have --dir's or $GROUPSCOPE_DEMO_DIR's folder in mind: name it unless it is the one
    # `groupscope status` finds by itself.
    elsewhere = root.resolve() != state_demo_dir().resolve()
    echo("groupscope demo: see the groups again with: groupscope status"
         + (f" --delta-path {root / 'delta'}" if elsewhere else ""))
    return 0


def written_tables(delta_root: Path) -> list[str]:
    """Names of the Delta tables under ``delta_root`` (one level of cluster folders included), in the order the
    job writes them; empty before the first batch."""
    from streaming.schema.tables import TABLES

    found = {log.parent.name for pattern in ("*/_delta_log", "*/*/_delta_log") for log in delta_root.glob(pattern)}
    return [name for name in TABLES if name in found]


def plain_summary(rows: list[dict[str, Any]], progress: str) -> str:
    """The view without a terminal (a pipe, a log file): the progress line and one fixed-width line per group."""
    from streaming.commands.status_view import format_lag_seconds, shown_verdict

    lines = [progress, f"{'GROUP':<24} {'STATE':<11} {'MEMBERS':>7} {'LAG':>9} {'LAG SECS':>9} {'STATUS':<6} "
                       f"{'VERDICT':<16} WHY"]
    several = len({r.get("cluster") for r in rows}) > 1
    cluster = None
    for r in rows:
        if several and r.get("cluster") != cluster:  # several clusters: each one's groups under its name
            cluster = r.get("cluster")
            lines.append(f"cluster {cluster}")
        members = "-" if r.get("members") is None else str(r["members"])
        lag = "-" if r.get("lag") is None else f"{r['lag']:,}"
        lines.append(f"{r['group'][:24]:<24} {(r.get('state') or '-')[:11]:<11} {members:>7} {lag:>9} "
                     f"{format_lag_seconds(r):>9} {(r.get('status') or '-'):<6} {shown_verdict(r)[:16]:<16} "
                     f"{r.get('why') or ''}")
    return "\n".join(lines)


def live_frame(rows: list[dict[str, Any]], progress: str, width: int, height: int):
    """One frame of the live view, ``height`` lines at most: the progress line (folded over as many lines as it
    needs), the title, and the groups in the rest, saying how many more there are when they do not all fit (a
    terminal cuts what does not fit to a bare "...")."""
    from rich.console import Group
    from rich.text import Text

    from streaming.commands.status_view import compact_lines

    above = -(-len(progress) // max(1, width)) + 1
    return Group(Text(progress, style="bold cyan", overflow="fold"), Text(f"consumer groups ({len(rows)})", style="bold"),
                 *compact_lines(rows, width, max_lines=max(2, height - above)))


def _show(job, runners: list, sim, options: DemoOptions, deadline, started: float, out) -> None:
    from rich.console import Console
    from rich.live import Live

    gone: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in job.metrics.clusters}

    def rows():
        feeds = job.metrics.clusters
        if len(feeds) == 1:
            return _group_rows(job.metrics.state.view(), gone[next(iter(feeds))], sim.now_ms)
        return [{"cluster": name, **r} for name, feed in feeds.items()
                for r in _group_rows(feed.state.view(), gone[name], sim.now_ms)]

    def frame():
        return live_frame(rows(), _progress_line(job, started, sim), console.width, console.height)

    def done() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    def check() -> None:
        for runner in runners:
            if runner.error is not None:
                raise RuntimeError(f"simulator failed: {runner.error}")
        if job.failure is not None:  # the job's supervisor stopped (Spark's JVM exited): nothing more will come
            from streaming.spark.jvm_exit import JvmExited

            if isinstance(job.failure, JvmExited):
                raise RuntimeError(f"{job.failure.what}; the demo stops (run it again to start over)") from None
            raise job.failure

    def wait() -> None:
        remaining = None if deadline is None else deadline - time.monotonic()
        time.sleep(1.0 if remaining is None else max(0.0, min(1.0, remaining)))

    console = Console(file=out)
    if options.live and console.is_terminal:
        with Live(frame(), console=console, refresh_per_second=2, transient=False) as live:
            while not done():
                wait()
                check()
                live.update(frame())
    else:
        last = time.monotonic()
        while not done():
            wait()
            check()
            ending = deadline is not None and deadline - time.monotonic() < PLAIN_EVERY_S / 2
            if time.monotonic() - last >= PLAIN_EVERY_S and not ending:  # the last one comes at the end anyway
                last = time.monotonic()
                print(plain_summary(rows(), _progress_line(job, started, sim)) + "\n", file=out, flush=True)
        print(plain_summary(rows(), _progress_line(job, started, sim)), file=out, flush=True)
