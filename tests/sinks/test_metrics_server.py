"""``MetricsServer``: ``/metrics``, ``/ready`` and ``/healthz`` over HTTP, readiness with its reason, several
clusters behind one endpoint, a port checked before binding, and a stop that really closes the socket."""

from __future__ import annotations

import gzip
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.job.step import StepHealth
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.monitor_health import MonitorHealth, OffsetsPartitionHealth
from streaming.sinks.state_store import MetricsState
from tests.dashboards.promtools import require, run
from tests.sinks.scrape import NOW, full_state, get, group_row, monitor_samples


def test_promtool_lints_the_exposition():
    promtool = require("promtool")
    with MetricsServer(full_state(), cluster="c1", host="127.0.0.1", port=0, partition_metrics=True) as server:
        status, _, body = _fetch(server)  # the page as served, in the 0.0.4 format promtool reads
    assert status == 200
    out = run([promtool, "check", "metrics"], input=body, text=False)
    assert out.returncode == 0 and not out.stdout.strip() and not out.stderr.strip(), out


def test_server_endpoints_and_readiness():
    state = MetricsState()
    with MetricsServer(state, cluster="c1", host="127.0.0.1", port=0) as server:
        assert server.port != 0
        assert get(f"{server.url}/ready") == (503, "not ready: no batch processed yet\n")
        state.apply_batch([group_row()], health=MonitorHealth(offsets_partitions=(
            OffsetsPartitionHealth(0, 99, 100, 100, True), OffsetsPartitionHealth(1, 9, 50, 50, False))))
        status, body = get(f"{server.url}/ready")
        assert status == 503 and "[1]" in body and "40 records behind" in body
        state.set_health(MonitorHealth(offsets_partitions=(OffsetsPartitionHealth(0, 99, 100, 100, True),)))
        assert get(f"{server.url}/ready") == (200, "ready\n")
        assert get(f"{server.url}/healthz") == (200, "ok\n")
        assert get(f"{server.url}/nope")[0] == 404
        status, body = get(f"{server.url}/metrics")
        assert status == 200
        assert 'kafka_consumergroup_group_sum_lag{cluster="c1",group="g1"} 45.0' in body
        assert "process_resident_memory_bytes" in body  # the driver's own process metrics


def test_stop_closes_the_socket():
    server = MetricsServer(MetricsState(), cluster="c1", host="127.0.0.1", port=0).start()
    port = server.port
    listening = server._httpd.socket  # held here, so only an explicit close (not garbage collection) closes it
    with pytest.raises(RuntimeError, match="already started"):
        server.start()
    server.stop()
    assert listening.fileno() == -1
    server.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    again = MetricsServer(MetricsState(), cluster="c1", host="127.0.0.1", port=port).start()  # port is free
    try:
        assert get(f"{again.url}/healthz")[0] == 200
    finally:
        again.stop()


def test_bad_port_is_rejected_before_binding():
    with pytest.raises(ValueError, match="port"):
        MetricsServer(MetricsState(), cluster="c1", port=70000)


NOW = 1_795_311_000.0


def _health(*, batch_at: float, heartbeat_at: float, caught_up: bool = True) -> MonitorHealth:
    step = StepHealth(shard=0, records=10, decode_errors=0, unknown_records=0, heartbeats=1, last_offset=99,
                      offsets_high_watermark=100, offsets_last_stable=100, heartbeat_ms=int(heartbeat_at * 1000),
                      caught_up=caught_up, groups=1, step_seconds=0.01)
    return MonitorHealth().after_batch([step], batch_seconds=0.1, now=batch_at)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _get(server: MetricsServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_ready_goes_503_with_the_reason_when_batches_or_heartbeats_stop():
    state = MetricsState()
    clock = _Clock(NOW)
    with MetricsServer(state, cluster="c1", host="127.0.0.1", port=0, process_metrics=False, clock=clock,
                       max_batch_age_s=300, max_heartbeat_age_s=120) as server:
        assert _get(server, "/ready") == (503, "not ready: no batch processed yet\n")
        state.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 5))
        assert _get(server, "/ready") == (200, "ready\n")
        assert monitor_samples(server)["groupscope_last_batch_age_seconds"] == 2

        clock.now = NOW + 130  # batches still complete (see below) but carry no newer heartbeat
        state.set_health(_health(batch_at=NOW + 129, heartbeat_at=NOW - 5))
        assert _get(server, "/ready") == (503, "not ready: newest heartbeat is 135 s old (limit 120 s)\n")

        clock.now = NOW + 500  # the query hangs: no batch since NOW + 129
        status, body = _get(server, "/ready")
        assert (status, body) == (503, "not ready: no batch completed for 371 s (limit 300 s)\n")
        assert monitor_samples(server)["groupscope_last_batch_age_seconds"] == 371

        state.set_health(_health(batch_at=NOW + 499, heartbeat_at=NOW + 498))
        assert _get(server, "/ready") == (200, "ready\n")


def test_a_stalled_job_is_not_hidden_behind_catching_up():
    state = MetricsState()
    clock = _Clock(NOW + 1000)
    state.set_health(_health(batch_at=NOW, heartbeat_at=NOW, caught_up=False))
    server = MetricsServer(state, cluster="c1", process_metrics=False, clock=clock, max_batch_age_s=300,
                           max_heartbeat_age_s=120)
    assert server.not_ready_reason() == "no batch completed for 1000 s (limit 300 s)"
    clock.now = NOW + 10
    assert server.not_ready_reason().startswith("catching up on __consumer_offsets partitions [0]")


def test_several_clusters_one_endpoint_ready_per_cluster_and_for_all():
    east, west = MetricsState(), MetricsState()
    clock = _Clock(NOW)
    with MetricsServer(east, cluster="east", host="127.0.0.1", port=0, process_metrics=False, clock=clock,
                       max_batch_age_s=300, max_heartbeat_age_s=120, kafka_up=lambda: True) as server:
        server.add_cluster("west", west, kafka_up=lambda: False)
        east.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 5))
        west.set_health(_health(batch_at=NOW - 2, heartbeat_at=NOW - 200))
        assert _get(server, "/ready?cluster=east") == (200, "ready\n")
        assert _get(server, "/ready?cluster=west") == (503, "not ready: newest heartbeat is 200 s old (limit 120 s)\n")
        assert _get(server, "/ready") == (503, "not ready: cluster west: newest heartbeat is 200 s old (limit 120 s)\n")
        status, body = _get(server, "/ready?cluster=north")
        assert status == 404 and "east, west" in body
        west.set_health(_health(batch_at=NOW - 1, heartbeat_at=NOW - 1))
        assert _get(server, "/ready") == (200, "ready\n")
        # Both clusters' series in one exposition, told apart by the label.
        text = generate_latest(server.registry).decode()
        up = {s.labels["cluster"]: s.value for f in text_string_to_metric_families(text) for s in f.samples
              if s.name == "groupscope_kafka_up"}
        assert up == {"east": 1.0, "west": 0.0}
        with pytest.raises(ValueError):
            server.add_cluster("west", MetricsState())


def _fetch(server: MetricsServer, path: str = "/metrics", method: str = "GET", **headers: str):
    request = urllib.request.Request(server.url + path, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_metrics_negotiates_format_and_gzip_as_a_prometheus_server_asks():
    """Prometheus asks for OpenMetrics and gzip; curl asks for neither. Each gets the registry's own rendering."""
    with MetricsServer(full_state(), cluster="c1", host="127.0.0.1", port=0, process_metrics=False,
                       clock=lambda: NOW) as server:
        status, headers, body = _fetch(server)
        assert status == 200 and headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert "Content-Encoding" not in headers and body == generate_latest(server.registry)
        accept = ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8,"
                  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        status, headers, body = _fetch(server, Accept=accept, **{"Accept-Encoding": "gzip"})
        assert status == 200 and headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        assert headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(body) == openmetrics_latest(server.registry)


def test_metrics_name_filter_and_other_methods_answer_as_the_library_does():
    with MetricsServer(full_state(), cluster="c1", host="127.0.0.1", port=0, process_metrics=False,
                       clock=lambda: NOW) as server:
        status, _, body = _fetch(server, "/metrics?name[]=kafka_consumergroup_members")
        families = [f.name for f in text_string_to_metric_families(body.decode())]
        assert status == 200 and families == ["kafka_consumergroup_members"]
        status, headers, _ = _fetch(server, method="POST")
        assert status == 405 and headers["Allow"] == "OPTIONS,GET"
