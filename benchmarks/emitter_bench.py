"""What the heartbeat emitter's benchmarks share: their command line and a mock cluster holding their topics.

Each of ``bench_tail_probe.py`` and ``bench_oldest_probe.py`` ticks two emitters (a probe off, then on) against
librdkafka's mock cluster over TCP, on ``--topics`` topics ``topic-N`` of ``--partitions`` partitions, with the
heartbeat topics ``hb-off`` and ``hb-on``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Iterator
from contextlib import contextmanager

from streaming.kafka.mock_cluster import MockCluster

__all__ = ["arguments", "cluster", "timed_tick"]


def arguments(doc: str, *, topics: int, records: int, ticks_help: str) -> argparse.ArgumentParser:
    """The options both take (``--topics``, ``--partitions``, ``--records``, ``--ticks``), with these defaults."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=topics)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--records", type=int, default=records)
    ap.add_argument("--ticks", type=int, default=0, help=ticks_help)
    return ap


@contextmanager
def cluster(topics: int, partitions: int) -> Iterator[MockCluster]:
    """Says which machine this is, then yields a mock cluster with the topics and both heartbeat topics."""
    print(f"machine: {os.cpu_count()} cores {platform.machine()}, Python {platform.python_version()}")
    with MockCluster(1) as mc:
        for t in range(topics):
            mc.create_topic(f"topic-{t}", partitions)
        for name in ("hb-on", "hb-off"):
            mc.create_topic(name, 1)
        yield mc


def timed_tick(emitter) -> float:
    """One heartbeat tick's seconds; a failed tick ends the benchmark, saying why."""
    started = time.perf_counter()
    ok = emitter.tick()
    elapsed = time.perf_counter() - started
    if not ok:
        raise SystemExit(f"heartbeat tick failed: {emitter.status.last_error}")
    return elapsed
