"""``groupscope demo``: the whole product on one machine, with nothing installed but the package.

Services start in order and stop in reverse: librdkafka's mock cluster (a real Kafka-protocol broker on
127.0.0.1), the workload simulator writing what Kafka's group coordinator would write for misbehaving groups (and
real messages, so end offsets move), then the real streaming job (heartbeat emitter, Spark, Delta tables, metrics
endpoint). The terminal shows a live view of every group; a progress line says how far the job is while it
catches up. Ctrl-C (or ``--duration``) stops everything cleanly and prints where the results are.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import load_settings

__all__ = ["DemoOptions", "run_demo"]

DEMO_SCENARIOS = "all"


@dataclass(frozen=True)
class DemoOptions:
    scenarios: tuple[str, ...] = (DEMO_SCENARIOS,)
    seed: int = 7
    speed: float = 2.0
    duration_s: float | None = None
    directory: str = "groupscope-demo"
    metrics_port: int = 9308
    live: bool = True
    offsets_partitions: int = 50


def _group_rows(view) -> list[dict[str, Any]]:
    from .status_view import sort_by_severity, verdict_columns

    rows = []
    for gid, g in view.groups.items():
        rows.append({
            "group": gid, "type": g.get("group_type"), "state": g.get("state"), "members": g.get("member_count"),
            "lag": g.get("sum_lag"), "max_lag": g.get("max_lag"), "lag_seconds": g.get("max_lag_seconds"),
            "status": g.get("status"), "rebalances_1h": g.get("rebalances"), "storms": g.get("storms") or 0,
            **verdict_columns(g),
        })
    return sort_by_severity(rows)


def _progress_line(job, started: float, sim) -> str:
    health = job.metrics.state.view().health if job.metrics else None
    behind = sum(p.behind or 0 for p in health.offsets_partitions) if health and health.offsets_partitions else None
    parts = [f"simulated {sim.elapsed_ms / 1000:,.0f} s", f"batches {job.status.batches}"]
    if health is not None:
        parts.append(f"records decoded {health.records_decoded:,}")
        if health.caught_up:
            parts.append("caught up")
        elif behind is not None:
            parts.append(f"catching up: {behind:,} records of __consumer_offsets to go")
        else:
            parts.append("starting: waiting for the first heartbeat")
    parts.append(f"up {time.time() - started:,.0f} s")
    return " | ".join(parts)


def run_demo(options: DemoOptions, echo=print) -> int:
    from .kafka.mock_cluster import MockCluster
    from .runner import GroupscopeJob
    from .simulator import Simulation, SimulationRunner, resolve
    from .simulator.kafka_sink import KafkaSink

    root = Path(options.directory).resolve()
    scenarios = resolve(list(options.scenarios))
    started = time.time()
    echo(f"groupscope demo: starting an embedded Kafka-protocol broker, {len(scenarios)} simulated scenario(s) and "
         f"the streaming job (Delta tables in {root / 'delta'})")
    cluster = MockCluster(1)
    runner = job = sink = None
    job_thread = None
    try:
        cluster.create_topic("__consumer_offsets", options.offsets_partitions)
        cluster.create_topic("groupscope-heartbeat", 1)
        sim = Simulation(list(options.scenarios), seed=options.seed, offsets_partitions=options.offsets_partitions)
        sink = KafkaSink(cluster.bootstrap_servers, create_topic=cluster.create_topic)
        runner = SimulationRunner(sim, sink, speed=options.speed).start()
        settings = load_settings(None, {
            "cluster": "demo",
            "kafka": {"bootstrap.servers": cluster.bootstrap_servers},
            "spark": {"checkpoint": str(root / "checkpoint"), "trigger_seconds": 1.0, "shuffle_partitions": 2},
            "delta": {"path": str(root / "delta")},
            "metrics": {"host": "127.0.0.1", "port": options.metrics_port},
            "heartbeat": {"interval_seconds": 2.0},
            # Short thresholds so a few minutes of demo show STOP and STALL, not only OK.
            "model": {"snapshot_interval_seconds": 2.0, "lag_interval_seconds": 10.0, "stop_after_seconds": 30.0},
        })
        job = GroupscopeJob(settings, install_signal_handlers=False)
        job.start()
        metrics_url = f"http://127.0.0.1:{job.metrics.port}/metrics"
        echo(f"groupscope demo: metrics at {metrics_url}; Ctrl-C to stop")
        job_thread = threading.Thread(target=job.run, name="groupscope-supervisor", daemon=True)
        job_thread.start()
        deadline = None if options.duration_s is None else time.monotonic() + options.duration_s
        _show(job, runner, sim, options, deadline, started, echo)
    except KeyboardInterrupt:
        echo("groupscope demo: stopping")
    finally:
        if runner is not None:
            runner.stop()
        if job is not None:
            job.request_stop()
            if job_thread is not None:
                job_thread.join(60)
            job.stop()
        if sink is not None:
            sink.close()
        cluster.close()
    echo(f"groupscope demo: stopped. Delta tables: {root / 'delta'} (commits, group_events, lag, groups, quarantine)")
    echo(f"groupscope demo: see them again with: groupscope status --delta-path {root / 'delta'}")
    return 0


def _show(job, runner, sim, options: DemoOptions, deadline, started: float, echo) -> None:
    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    from .status_view import status_table

    def frame():
        rows = _group_rows(job.metrics.state.view())
        return Group(Text(_progress_line(job, started, sim), style="bold cyan"),
                     status_table(rows, title=f"consumer groups ({len(rows)})", rebalances_header="REBALANCES"))

    def done() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    if options.live:
        with Live(frame(), console=Console(), refresh_per_second=2, transient=False) as live:
            while not done():
                time.sleep(1.0)
                if runner.error is not None:
                    raise RuntimeError(f"simulator failed: {runner.error}")
                live.update(frame())
    else:
        console = Console(width=160)
        last = 0.0
        while not done():
            time.sleep(1.0)
            if runner.error is not None:
                raise RuntimeError(f"simulator failed: {runner.error}")
            if time.monotonic() - last >= 10:
                last = time.monotonic()
                console.print(frame())
        console.print(frame())
