"""``route``: paths to answers without HTTP. A path is split on ``/`` before it is percent-decoded (so a group id
holding ``/`` is reachable as ``%2F``), a trailing ``/`` is ignored, only GET and HEAD are served, unknown paths
under ``/v1`` get groupscope's error object and every other unknown path Burrow's catch-all body, and each request
reads its cluster's state once."""

from __future__ import annotations

import pytest

from streaming.api.routes import Reply, openapi_document, route
from streaming.api.source import ClusterSource
from streaming.sinks.monitor_health import MonitorHealth, OffsetsPartitionHealth
from streaming.sinks.state_store import MetricsState

# Burrow's catch-all: what it answers to a path none of its handlers serves (no request object).
CATCH_ALL = {"error": True, "message": "invalid request type", "result": {}}


def _sources(*groups: str) -> dict[str, ClusterSource]:
    state = MetricsState()
    state.apply_batch([{"group_id": g, "status": "OK", "partition_count": 1, "members": []} for g in groups],
                      [{"group_id": g, "topic": "t", "partition": 0, "committed_offset": 5, "log_end_offset": 7,
                        "lag": 2, "status": "OK"} for g in groups])
    return {"c": ClusterSource.of_state("c", state)}


def test_a_group_id_with_a_slash_is_one_segment_when_encoded():
    sources = _sources("team/app", "team")
    reply = route("GET", "/v3/kafka/c/consumer/team%2Fapp/lag", sources, host="h")
    assert reply.status == 200 and reply.body["status"]["group"] == "team/app"
    assert reply.body["request"] == {"url": "/v3/kafka/c/consumer/team/app/lag", "host": "h"}
    # Unencoded, the slash splits the path: /consumer/team/app/lag is no path Burrow serves.
    assert route("GET", "/v3/kafka/c/consumer/team/app/lag", sources) == Reply(404, CATCH_ALL)


def test_segments_are_decoded_as_utf8_and_invalid_bytes_are_no_path():
    sources = _sources("café")
    assert route("GET", "/v3/kafka/c/consumer/caf%C3%A9", sources).status == 200
    assert route("GET", "/v3/kafka/c/consumer/caf%E9", sources) == Reply(404, CATCH_ALL)  # Latin-1, not UTF-8


def test_a_trailing_slash_is_ignored():
    sources = _sources("g")
    assert route("GET", "/v3/kafka/c/consumer/g/", sources).body == route("GET", "/v3/kafka/c/consumer/g",
                                                                            sources).body
    assert route("GET", "/v1/clusters/", sources).body == route("GET", "/v1/clusters", sources).body


@pytest.mark.parametrize("path", ["/", "", "/v3", "/v3/kafka/c/consumer/g/offsets", "/v2/kafka", "/metrics"])
def test_paths_outside_the_api_get_burrows_catch_all(path):
    assert route("GET", path, _sources("g")) == Reply(404, CATCH_ALL)


@pytest.mark.parametrize("method", ["POST", "DELETE", "PUT"])
def test_only_reads_are_served_and_the_answer_says_which_methods_are(method):
    sources = _sources("g")
    v3 = route(method, "/v3/kafka/c/consumer/g", sources, host="h")
    assert (v3.status, v3.headers) == (405, (("Allow", "GET, HEAD"),))
    assert v3.body == {"error": True, "message": "method not allowed: this API is read-only",
                       "request": {"url": "/v3/kafka/c/consumer/g", "host": "h"}}
    v1 = route(method, "/v1/clusters", sources)
    assert (v1.status, v1.headers) == (405, (("Allow", "GET, HEAD"),))
    assert v1.body == {"error": {"status": 405, "message": "method not allowed: this API is read-only"}}
    assert route("HEAD", "/v3/kafka/c/consumer/g", sources).status == 200


@pytest.mark.parametrize("path", ["/v1", "/v1/nope", "/v1/clusters/c/groups/g/partitions", "/v1/clusters/c/x"])
def test_unknown_v1_paths_get_groupscopes_error_object(path):
    assert route("GET", path, _sources("g")) == Reply(
        404, {"error": {"status": 404, "message": "no such path; see /v1/openapi.json"}})


def test_the_openapi_document_is_served_as_shipped():
    reply = route("GET", "/v1/openapi.json", {})
    assert reply.status == 200 and reply.body is openapi_document()
    assert reply.body["openapi"].startswith("3.") and "/v1/clusters" in reply.body["paths"]


def test_the_cluster_list_needs_no_state_and_is_sorted():
    sources = {name: ClusterSource(name, lambda: pytest.fail("the list must not read any state"))
               for name in ("west", "east")}
    body = route("GET", "/v3/kafka", sources, host="h").body
    assert body == {"error": False, "message": "cluster list returned", "clusters": ["east", "west"],
                    "request": {"url": "/v3/kafka", "host": "h"}}


def test_the_cluster_view_is_taken_once_per_request():
    calls = []
    state = MetricsState()
    state.apply_batch([{"group_id": "g", "status": "OK"}], [],
                      health=MonitorHealth(offsets_partitions=(OffsetsPartitionHealth(0, caught_up=True),)))

    def view():
        calls.append(1)
        return state.view()

    sources = {"c": ClusterSource("c", view)}
    for path in ("/v3/kafka/c/consumer/g/lag", "/v3/kafka/c/topic", "/v1/clusters/c/groups/g"):
        calls.clear()
        assert route("GET", path, sources).status == 200
        assert len(calls) == 1, path
