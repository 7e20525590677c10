"""The ``/metrics`` page at scale: groupscope's page against prometheus_client's ``generate_latest`` (the reference),
on one state, in one run.

The state holds ``--groups`` groups (two members, two topics each; the rows of ``tests/sinks/scrape.py``) and, with
``--partitions N``, N committed partitions per group (served with ``metrics.partition_metrics``). Each way of
rendering runs ``--repeat`` times; the best time is printed:

* the reference: prometheus_client's ``generate_latest`` over the server's registry, 0.0.4 text and OpenMetrics;
* the page's first render after a batch (every series written), and a scrape between batches (the kept part served,
  the job's own series written);
* the same with gzip, as a Prometheus server asks: the first (the kept part compressed) and the next.

Every rendering is checked byte for byte against the reference's (gzip ones after decompressing). Usage::

    python benchmarks/bench_metrics_page.py                        # 10,000 groups, 10 partitions each
    python benchmarks/bench_metrics_page.py --groups 100000 --partitions 0
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest  # noqa: E402

from streaming.sinks.exposition import OPENMETRICS, TEXT  # noqa: E402
from streaming.sinks.metrics_page import MetricsPage  # noqa: E402
from streaming.sinks.metrics_server import MetricsServer  # noqa: E402
from streaming.sinks.state_store import MetricsState  # noqa: E402
from tests.sinks.scrape import NOW, group_row, partition_row  # noqa: E402


NEWLINE = b"\n"


def best(repeat: int, render, before=lambda: None) -> tuple[float, bytes]:
    """The best time of ``repeat`` renders (``before`` runs untimed ahead of each) and the last output."""
    times, out = [], b""
    for _ in range(repeat):
        before()
        started = time.perf_counter()
        out = render()
        times.append(time.perf_counter() - started)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10, help="committed partitions per group (0: group series only)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"load average {os.getloadavg()[0]:.1f}")
    state = MetricsState(keep_partitions=args.partitions > 0)
    groups = [f"group-{g:06d}" for g in range(args.groups)]

    def apply() -> None:
        state.apply_batch([group_row(g) for g in groups],
                          [partition_row(g, "orders", p, 5) for g in groups for p in range(args.partitions)])

    apply()
    server = MetricsServer(state, cluster="bench", partition_metrics=args.partitions > 0, process_metrics=False,
                           clock=lambda: NOW)
    for fmt, library in ((TEXT, generate_latest), (OPENMETRICS, openmetrics_latest)):
        reference_s, reference = best(args.repeat, lambda: library(server.registry))
        page = MetricsPage(server.collector, fmt)
        # ``apply`` before a render: a new batch, so the kept part is stale
        first_s, first_body = best(args.repeat, lambda: page.render().body, apply)
        kept_s, kept_body = best(args.repeat, lambda: page.render().body)
        gzip_first_s, gzip_first = best(args.repeat, lambda: page.render(gzip=True).body, apply)
        gzip_kept_s, gzip_kept = best(args.repeat, lambda: page.render(gzip=True).body)
        same = all(b == reference for b in (first_body, kept_body, gzip.decompress(gzip_first),
                                           gzip.decompress(gzip_kept)))
        print(f"{fmt.name}: {len(reference) / 2**20:.1f} MB, {reference.count(NEWLINE):,} lines "
              f"({args.groups:,} groups × {args.partitions} partitions); byte for byte the reference's: {same}")
        print(f"  reference (prometheus_client generate_latest)  {reference_s:7.3f} s")
        print(f"  page, first scrape after a batch               {first_s:7.3f} s  ({reference_s / first_s:.1f}× faster)")
        print(f"  page, a scrape between batches                 {kept_s:7.3f} s")
        print(f"  gzip ({len(gzip_kept) / 2**20:.1f} MB), first scrape after a batch       {gzip_first_s:7.3f} s")
        print(f"  gzip, a scrape between batches                 {gzip_kept_s:7.3f} s")


if __name__ == "__main__":
    main()
