"""A Spark standalone cluster on loopback (one master, N workers), started from the pyspark installation itself.

pyspark's wheel ships ``bin/spark-class`` and the jars of the master and the worker, so nothing else needs to be
installed: the test starts ``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` as child processes,
waits until the master's JSON status lists every worker alive, and kills them afterwards. Each worker gets one
core, so a job with two workers really runs its tasks in two executor JVMs (and their Python workers).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import pyspark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _master_state(ui_port: int, master_url: str) -> dict | None:
    """The master's JSON status, or None until our master answers on ``ui_port`` (another process that took the
    port first answers with something else: HTML, or another master's URL)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            state = json.load(resp)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and state.get("url") == master_url else None


def _alive_workers(ui_port: int, master_url: str) -> int:
    state = _master_state(ui_port, master_url) or {}
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextmanager
def standalone_cluster(workdir: Path, workers: int = 2, *, cores: int = 1, memory: str = "1g",
                       timeout_s: float = 180.0, worker_cgroups: Sequence[Path] | None = None) -> Iterator[str]:
    """Yields the master URL (``spark://127.0.0.1:PORT``) once ``workers`` workers are registered.

    ``worker_cgroups``: one ``cgroup.procs`` file per worker; worker i joins the i-th before it starts, so it and
    everything it launches (its executors and their Python workers) run under that cgroup's limits.
    """
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}
    spark_class = str(home / "bin" / "spark-class")
    port, ui_port = _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    workdir.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []

    def start(args: list[str], log: str, cgroup_procs: Path | None = None) -> None:
        # Joined in the child before exec, so no process of the worker's (spark-class starts a launcher JVM
        # first) ever runs outside the cgroup.
        join = None if cgroup_procs is None else (lambda: cgroup_procs.write_text(str(os.getpid())))
        with open(workdir / log, "wb") as out:
            procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, preexec_fn=join))

    deadline = time.monotonic() + timeout_s

    def wait_for(ready, what: str) -> None:
        while not ready():
            dead = [p.args[1] for p in procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"standalone cluster process exited early: {dead}; logs in {workdir}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {timeout_s:.0f} s; logs in {workdir}")
            time.sleep(0.5)

    try:
        # The master first, and its status page up, before the workers bind their own ports: a worker binding
        # the port picked for the master's page before the master does would answer in its place.
        start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(ui_port)], "master.log")
        wait_for(lambda: _master_state(ui_port, master_url) is not None,
                 f"the master {master_url} did not answer on its status port {ui_port}")
        for i in range(workers):
            start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores),
                   "--memory", memory, "--webui-port", "0", "--work-dir", str(workdir / f"worker-{i}"), master_url],
                  f"worker-{i}.log", worker_cgroups[i] if worker_cgroups else None)
        wait_for(lambda: _alive_workers(ui_port, master_url) >= workers,
                 f"{workers} workers did not register with {master_url}")
        yield master_url
    finally:
        for proc in reversed(procs):
            _stop(proc)


def executor_count(spark) -> int:
    """Executors registered with the driver (the driver itself excluded)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return len(infos) - 1
