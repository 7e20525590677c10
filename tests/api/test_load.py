"""Load on the real server over loopback: thousands of requests from several threads while batches keep replacing
the state. Bounded in time; no request may fail, and every answer must be one the state had as a whole (a batch
applied mid-request never shows half-applied). Prints and records the p99 latency (``benchmarks/bench_api.py``
measures a larger state)."""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from urllib.parse import quote

from streaming.api import ApiServer, ClusterSource, route
from streaming.sinks.prometheus import MetricsState
from tests.api.feed import feed_state

CLUSTER = "load"
REQUESTS = 3000
THREADS = 8
TIME_LIMIT_S = 90.0  # two shared cores; the answers themselves take milliseconds


def _batches():
    """Two snapshots of the same workload (40 s and 100 s into it), each as the rows of one batch."""
    return [(fed.group_rows, fed.partition_rows, fed.health) for fed in (feed_state(seconds=40), feed_state())]


def test_thousands_of_concurrent_requests_while_batches_apply(record_property):
    batches = _batches()
    state = MetricsState()
    state.apply_batch(*batches[0][:2], health=batches[0][2])
    groups = sorted(state.view().groups)
    paths = [f"/v3/kafka/{CLUSTER}/consumer"] + [
        p for g in groups for p in (f"/v3/kafka/{CLUSTER}/consumer/{quote(g)}/lag",
                                    f"/v3/kafka/{CLUSTER}/consumer/{quote(g)}",
                                    f"/v1/clusters/{CLUSTER}/groups/{quote(g)}")]
    # Every answer the live state can give: after the first batch, after the second, after the first again.
    expected: dict[str, list] = {p: [] for p in paths}
    replay = MetricsState()
    for i in (0, 1, 0):
        replay.apply_batch(*batches[i][:2], health=batches[i][2])
        for p in paths:
            expected[p].append(route("GET", p, {CLUSTER: ClusterSource.of_state(CLUSTER, replay)}).body)
    assert any(expected[p][0] != expected[p][1] for p in paths), "the two batches must differ for the test to mean much"

    stop = threading.Event()

    def writer() -> None:
        i = 1
        while not stop.is_set():
            state.apply_batch(*batches[i][:2], health=batches[i][2])
            i ^= 1
            time.sleep(0.002)

    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    counter = iter(range(REQUESTS))

    def client(port: int) -> None:
        mine, bad = [], []
        for i in counter:
            path = paths[i % len(paths)]
            started = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                body = json.loads(resp.read())
                if resp.status != 200:
                    bad.append(f"{path}: HTTP {resp.status}")
                else:
                    body.get("request", {}).pop("host", None)
                    if not any(body == _without_host(e) for e in expected[path]):
                        bad.append(f"{path}: an answer the state never had as a whole")
            except OSError as exc:
                bad.append(f"{path}: {exc}")
            finally:
                conn.close()
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)
            failures.extend(bad)

    with ApiServer({CLUSTER: ClusterSource.of_state(CLUSTER, state)}, host="127.0.0.1", port=0) as server:
        w = threading.Thread(target=writer, daemon=True)
        w.start()
        started = time.monotonic()
        pool = [threading.Thread(target=client, args=(server.port,)) for _ in range(THREADS)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(TIME_LIMIT_S)
        elapsed = time.monotonic() - started
        stop.set()
        w.join(5)
    assert not any(t.is_alive() for t in pool), f"clients still running after {TIME_LIMIT_S:.0f} s"
    assert failures == [], failures[:5]
    assert len(latencies) == REQUESTS
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    p50, p99 = q[49] * 1000, q[98] * 1000
    record_property("api_p50_ms", round(p50, 2))
    record_property("api_p99_ms", round(p99, 2))
    print(f"\nHTTP API: {REQUESTS} requests, {THREADS} threads, {elapsed:.1f} s "
          f"({REQUESTS / elapsed:.0f}/s): p50 {p50:.1f} ms, p99 {p99:.1f} ms")
    assert elapsed < TIME_LIMIT_S


def _without_host(body):
    if isinstance(body, dict) and "request" in body:
        body = {**body, "request": {k: v for k, v in body["request"].items() if k != "host"}}
    return body
