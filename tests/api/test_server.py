"""The API over real HTTP on loopback: Burrow's envelopes and 404s for unknown clusters, groups and topics, the
read-only rule, odd group names, the port-in-use line; plus the ``api`` settings and what the package may import.
Burrow's status rollup is ``test_burrow.py``; the view taken once per request is ``test_routes.py``."""

from __future__ import annotations

import ast
import http.client
import json
import socket
import urllib.parse
from pathlib import Path

import pytest

from streaming.api import ApiPortInUse, ApiServer, ClusterSource
from streaming.config import ConfigError, load_settings
from streaming.sinks.prometheus import MetricsState
from tests.api.feed import feed_state

CLUSTER = "sim"
HOST = socket.gethostname()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    fed = feed_state(seconds=40)
    with ApiServer({CLUSTER: ClusterSource.of_state(CLUSTER, fed.state)}, host="127.0.0.1", port=0) as srv:
        yield srv


def call(server: ApiServer, path: str, method: str = "GET"):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, dict(resp.getheaders()), (json.loads(data) if data else None)
    finally:
        conn.close()


def err(url: str, message: str) -> dict:
    return {"error": True, "message": message, "request": {"url": url, "host": HOST}}


@pytest.mark.parametrize("path, message", [
    ("/v3/kafka/nope", "cluster module not found"),
    ("/v3/kafka/nope/topic", "cluster not found"),
    ("/v3/kafka/nope/topic/steady-orders", "cluster or topic not found"),
    ("/v3/kafka/nope/topic/steady-orders/consumers", "cluster not found"),
    ("/v3/kafka/nope/consumer", "cluster not found"),
    ("/v3/kafka/nope/consumer/steady-range", "cluster or consumer not found"),
    (f"/v3/kafka/{CLUSTER}/consumer/nope", "cluster or consumer not found"),
    (f"/v3/kafka/{CLUSTER}/topic/nope", "cluster or topic not found"),
])
def test_unknown_cluster_group_or_topic_is_burrows_404(server, path, message):
    status, headers, body = call(server, path)
    assert (status, body) == (404, err(path, message))
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize("cluster, group", [("nope", "steady-range"), (CLUSTER, "nope")])
@pytest.mark.parametrize("kind", ["status", "lag"])
def test_unknown_group_status_is_notfound_with_404(server, cluster, group, kind):
    path = f"/v3/kafka/{cluster}/consumer/{group}/{kind}"
    status, _, body = call(server, path)
    assert status == 404
    assert body == {"error": False, "message": "consumer status returned",
                    "status": {"cluster": cluster, "group": group, "status": "NOTFOUND", "complete": 1.0,
                               "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0},
                    "request": {"url": path, "host": HOST}}


def test_consumers_of_an_unknown_topic_is_an_empty_list(server):
    path = f"/v3/kafka/{CLUSTER}/topic/nope/consumers"
    assert call(server, path)[::2] == (200, {"error": False, "message": "consumers of topic returned",
                                             "consumers": [], "request": {"url": path, "host": HOST}})


@pytest.mark.parametrize("path", ["/", "/v3", "/v3/kafka/sim/consumer/steady-range/offsets", "/v2/kafka", "/x"])
def test_unknown_paths_get_burrows_catch_all(server, path):
    status, _, body = call(server, path)
    assert (status, body) == (404, {"error": True, "message": "invalid request type", "result": {}})


def test_unknown_v1_paths_get_groupscope_errors(server):
    for path, message in (("/v1/nope", "no such path; see /v1/openapi.json"),
                          ("/v1/clusters/nope", "cluster 'nope' not found"),
                          (f"/v1/clusters/{CLUSTER}/groups/nope", f"group 'nope' not found in cluster '{CLUSTER}'")):
        status, _, body = call(server, path)
        assert (status, body) == (404, {"error": {"status": 404, "message": message}})


@pytest.mark.parametrize("method", ["DELETE", "POST", "PUT"])
def test_the_api_is_read_only(server, method):
    path = f"/v3/kafka/{CLUSTER}/consumer/steady-range"
    status, headers, body = call(server, path, method)
    assert (status, body) == (405, err(path, "method not allowed: this API is read-only"))
    assert headers["Allow"] == "GET, HEAD"
    status, _, body = call(server, f"/v1/clusters/{CLUSTER}", method)
    assert status == 405 and body["error"]["status"] == 405
    assert call(server, path)[0] == 200, "a refused write must change nothing"


def test_head_has_headers_and_no_body(server):
    status, headers, body = call(server, f"/v3/kafka/{CLUSTER}/consumer", "HEAD")
    _, get_headers, get_body = call(server, f"/v3/kafka/{CLUSTER}/consumer")
    assert status == 200 and body is None and get_body is not None
    assert int(headers["Content-Length"]) == int(get_headers["Content-Length"]) > 0  # what GET would send


def test_group_ids_with_slashes_and_non_ascii_are_reachable():
    state = MetricsState()
    row = {"group_id": "team/app-é", "status": "OK", "partition_count": 1, "members": []}
    part = {"group_id": "team/app-é", "topic": "t", "partition": 0, "committed_offset": 5, "log_end_offset": 7,
            "lag": 2, "status": "OK", "commit_time": 1_000}
    state.apply_batch([row], [part])
    with ApiServer({CLUSTER: ClusterSource.of_state(CLUSTER, state)}, host="127.0.0.1", port=0) as srv:
        quoted = urllib.parse.quote("team/app-é", safe="")
        status, _, body = call(srv, f"/v3/kafka/{CLUSTER}/consumer/{quoted}/lag")
        assert status == 200 and body["status"]["group"] == "team/app-é" and body["status"]["totallag"] == 2
        assert body["request"]["url"] == f"/v3/kafka/{CLUSTER}/consumer/team/app-é/lag"
        status, _, body = call(srv, f"/v1/clusters/{CLUSTER}/groups/{quoted}/")  # a trailing slash is ignored
        assert status == 200 and body["group"] == "team/app-é"


def test_port_in_use_is_one_line_naming_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ApiPortInUse) as info:
            ApiServer({}, host="127.0.0.1", port=port).start()
    message = str(info.value)
    assert message == f"HTTP API port 127.0.0.1:{port} is already in use (set api.port, or GROUPSCOPE_API__PORT)"


def test_stop_closes_the_port():
    srv = ApiServer({}, host="127.0.0.1", port=0).start()
    port = srv.port
    srv.stop()
    srv.stop()  # twice is fine
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_api_settings_default_off_and_need_metrics():
    s = load_settings(None, {})
    assert (s.api.enabled, s.api.host, s.api.port) == (False, "0.0.0.0", 8000)
    assert not s.partition_rows_on_driver
    assert load_settings(None, {"api": {"enabled": True}}).partition_rows_on_driver
    with pytest.raises(ConfigError) as info:
        load_settings(None, {"api": {"enabled": True}, "metrics": {"enabled": False}})
    assert len(info.value.lines) == 1 and "api.enabled needs metrics.enabled" in info.value.lines[0]
    with pytest.raises(ConfigError):
        load_settings(None, {"api": {"port": 70000}})


ALLOWED = ("streaming.api", "streaming.sinks.state_store", "streaming.sinks.http_server", "streaming.schema",
           "streaming.model")


def test_the_package_uses_only_what_its_docstring_allows():
    wrong = []
    for path in sorted((REPO / "streaming" / "api").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            wrong += [f"{path.name} imports {n}" for n in names
                      if n.split(".")[0] in ("streaming", "protocol") and not n.startswith(ALLOWED)]
            wrong += [f"{path.name} uses a relative import" for _ in [1] if isinstance(node, ast.ImportFrom)
                      and node.level]
    assert wrong == []
