"""The task workers' daemon started ahead of the query (streaming.spark.worker_daemon.start_early) is the one the
query's tasks are forked from: it is running before any query, and a query of the job's kind starts no second one."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from streaming.spark import worker_daemon
from streaming.spark.session import build_session

pytestmark = pytest.mark.spark


def _task_daemons(jvm_pid: int) -> list[int]:
    """Processes the JVM started as the task workers' daemon (its direct children running this module)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        if parent == jvm_pid and b"streaming.spark.worker_daemon" in args and b"pyspark.worker" in args:
            found.append(int(pid))
    return found


def test_the_daemon_started_early_is_the_one_the_query_tasks_use():
    spark = build_session(master="local[1]")
    jvm = spark.sparkContext._gateway.proc.pid
    worker_daemon.start_early(spark).join(120)
    started = _task_daemons(jvm)
    assert len(started) == 1, f"expected the task daemon to be running before any query, found {started}"

    def count(key: tuple, pdf: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"k": [key[0]], "n": [len(pdf)]})

    rows = (spark.range(100).selectExpr("id % 3 AS k").groupBy("k")
            .applyInPandas(count, "k long, n long").collect())
    assert sorted((r.k, r.n) for r in rows) == [(0, 34), (1, 33), (2, 33)]
    assert _task_daemons(jvm) == started, "the query's tasks started a daemon of their own"
