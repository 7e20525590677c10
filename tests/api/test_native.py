"""groupscope's own ``/v1`` paths: field by field against the model's snapshot, and every answer (``/v1`` and Burrow's
``/v3`` alike) against the OpenAPI description the server ships, strictly (no undescribed field, no missing one)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from streaming.api import ClusterSource, route
from streaming.api.routes import openapi_document
from tests.api.feed import Fed, feed_state
from tests.api.schema_check import problems

CLUSTER = "sim"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fed() -> Fed:
    return feed_state()


@pytest.fixture(scope="module")
def sources(fed) -> dict[str, ClusterSource]:
    return {CLUSTER: ClusterSource.of_state(CLUSTER, fed.state)}


def get(sources, path):
    reply = route("GET", path, sources)
    return reply.status, reply.body


def test_group_detail_carries_what_burrow_has_no_field_for(sources, fed):
    for gid, snap in fed.snapshots.items():
        status, g = get(sources, f"/v1/clusters/{CLUSTER}/groups/{gid}")
        assert status == 200, gid
        assert (g["cluster"], g["group"], g["type"], g["state"]) == (CLUSTER, gid, snap.group_type.name, snap.state)
        assert g["status"] == snap.status.name
        assert g["generation"] == snap.generation and g["assignment_epoch"] == snap.assignment_epoch
        assert g["leader"] == snap.leader and g["assignor"] == (snap.assignor or None)
        assert g["member_count"] == len(snap.members) and g["partition_count"] == len(snap.partitions)
        assert (g["sum_lag"], g["max_lag"], g["max_lag_seconds"]) == (snap.sum_lag, snap.max_lag,
                                                                      snap.max_lag_seconds)
        assert g["data_loss_partitions"] == sum(p.data_loss_risk for p in snap.partitions)
        assert (g["catch_up_seconds"], g["catching_up"]) == (snap.catch_up.seconds, snap.catch_up.catching_up)
        assert g["max_lag_seconds_lower_bound"] == any(p.lag_seconds_lower_bound for p in snap.partitions
                                                       if p.lag_seconds is not None)
        worst = max((p for p in snap.partitions if p.lag_seconds is not None), key=lambda p: p.lag_seconds,
                    default=None)
        assert g["max_lag_seconds_method"] == (worst and worst.lag_seconds_method)
        assert g["members"] == [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                                 "instance_id": m.instance_id, "member_epoch": m.member_epoch, "state": m.state,
                                 "assigned_partitions": len(m.assignment)} for m in snap.members]
        v = snap.verdicts
        r = g["rebalances"]
        assert (r["total"], r["storms"], r["rolling_restarts"], r["scale_outs"], r["scale_ins"]) == (
            snap.rebalances, v.storms, v.rolling_restarts, v.scale_outs, v.scale_ins)
        assert (r["storm_active"], r["verdict"], r["partitions_moved"]) == (v.storm_active, v.last_verdict,
                                                                           v.partitions_moved)
        assert r["causes"] == dict(v.causes) and r["last_ms"] == snap.last_rebalance_timestamp
        members = {m.member_id: m for m in snap.members}
        expected = []
        for p in sorted(snap.partitions, key=lambda p: (p.topic, p.partition)):
            m = members.get(p.owner)
            expected.append({
                "topic": p.topic, "partition": p.partition, "committed_offset": p.committed,
                "log_end_offset": p.log_end, "lag": p.lag, "lag_seconds": p.lag_seconds,
                "lag_seconds_lower_bound": p.lag_seconds_lower_bound, "lag_seconds_method": p.lag_seconds_method,
                "data_loss_risk": p.data_loss_risk,
                "catch_up_seconds": p.catch_up.seconds, "catching_up": p.catch_up.catching_up,
                "status": p.status.name, "status_reason": p.status_reason or None,
                "owner": None if p.owner is None else {"member_id": p.owner, "client_id": m and m.client_id,
                                                       "host": m and m.host},
                "commit_ms": p.commit_timestamp})
        assert g["partitions"] == expected, gid


def test_kip848_epochs_and_verdicts_are_exposed(sources, fed):
    kip848 = [g for g, s in fed.snapshots.items() if s.group_type.name == "CONSUMER"]
    assert kip848, "the workload has no KIP-848 group"
    snap = fed.snapshots[kip848[0]]
    _, g = get(sources, f"/v1/clusters/{CLUSTER}/groups/{kip848[0]}")
    assert snap.assignment_epoch is not None and g["assignment_epoch"] == snap.assignment_epoch
    assert {m["member_id"]: m["member_epoch"] for m in g["members"]} == \
        {m.member_id: m.member_epoch for m in snap.members}
    assert all(m.member_epoch is not None for m in snap.members)
    _, storm = get(sources, f"/v1/clusters/{CLUSTER}/groups/storm")
    assert fed.snapshots["storm"].verdicts.storms >= 1, "the storm scenario's verdict must be in the model"
    assert storm["rebalances"]["storms"] == fed.snapshots["storm"].verdicts.storms


def test_lists(sources, fed):
    status, body = get(sources, "/v1/clusters")
    assert status == 200 and [c["name"] for c in body["clusters"]] == [CLUSTER]
    assert body["clusters"][0]["groups"] == len(fed.snapshots) and body["clusters"][0]["caught_up"] is True
    status, body = get(sources, f"/v1/clusters/{CLUSTER}/groups")
    assert status == 200 and [g["group"] for g in body["groups"]] == sorted(fed.snapshots)
    status, body = get(sources, f"/v1/clusters/{CLUSTER}")
    assert status == 200 and body["offsets_partitions"] and body["batches"] == 1


def _answers(sources, fed):
    """(path, status, body) of every path of the description, over every group and topic, plus the 404s."""
    groups = sorted(fed.snapshots) + ["no-such-group"]
    topics = sorted({p.topic for s in fed.snapshots.values() for p in s.partitions}) + ["no-such-topic"]
    for cluster in (CLUSTER, "no-such-cluster"):
        paths = ["/v3/kafka", f"/v3/kafka/{cluster}", f"/v3/kafka/{cluster}/topic", f"/v3/kafka/{cluster}/consumer",
                 "/v1/clusters", f"/v1/clusters/{cluster}", f"/v1/clusters/{cluster}/groups"]
        paths += [f"/v3/kafka/{cluster}/topic/{t}{tail}" for t in topics for tail in ("", "/consumers")]
        paths += [f"/v3/kafka/{cluster}/consumer/{g}{tail}" for g in groups for tail in ("", "/status", "/lag")]
        paths += [f"/v1/clusters/{cluster}/groups/{g}" for g in groups]
        for path in paths:
            reply = route("GET", path, sources)
            yield path, reply.status, reply.body


def _template(path: str, doc) -> str:
    parts = path.strip("/").split("/")
    for template in doc["paths"]:
        t = template.strip("/").split("/")
        if len(t) == len(parts) and all(a == b or a.startswith("{") for a, b in zip(t, parts)):
            return template
    raise AssertionError(f"{path} is not in the OpenAPI description")


def test_every_answer_matches_the_openapi_description(sources, fed):
    doc = openapi_document()
    wrong, statuses = [], set()
    for path, status, body in _answers(sources, fed):
        responses = doc["paths"][_template(path, doc)]["get"]["responses"]
        assert str(status) in responses, f"{path}: status {status} is not described"
        statuses.add(status)
        schema = responses[str(status)]["content"]["application/json"]["schema"]
        wrong += [f"{path}: {p}" for p in problems(body, schema, doc)]
    assert wrong == []
    assert statuses == {200, 404}


def test_the_description_is_valid_json_shipped_with_the_package():
    text = (REPO / "streaming" / "api" / "openapi.json").read_text()
    doc = json.loads(text)
    assert doc["openapi"].startswith("3.1") and doc == openapi_document()
    # ``pip install .`` (the Docker image) copies only listed data files into the package.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "api/openapi.json" in project["tool"]["setuptools"]["package-data"]["streaming"]


def test_the_schema_checker_reports_each_kind_of_departure():
    """The checker the description is held to can fail: each departure from a schema is reported, at its path."""
    doc = {"components": {"schemas": {"Lag": {"type": "object", "required": ["group", "status"], "properties": {
        "group": {"type": "string"}, "status": {"enum": ["OK", "WARN"]}, "lag": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}}}}}}}
    ref = {"$ref": "#/components/schemas/Lag"}
    assert problems({"group": "g", "status": "OK", "lag": 3, "tags": ["a"]}, ref, doc) == []
    assert problems({"group": "g", "status": "OK", "extra": 1}, ref, doc) == ["$: 'extra' is not described"]
    assert problems({"group": "g"}, ref, doc) == ["$: missing 'status'"]
    assert problems({"group": 7, "status": "OK"}, ref, doc) == ["$.group: 7 is not of type string"]
    assert problems({"group": "g", "status": "BAD"}, ref, doc) == ["$.status: 'BAD' not in ['OK', 'WARN']"]
    assert problems({"group": "g", "status": "OK", "lag": -1}, ref, doc) == ["$.lag: -1 < 0"]
    assert problems({"group": "g", "status": "OK", "tags": ["a", 2]}, ref, doc) == ["$.tags[1]: 2 is not of type string"]
    assert problems(1, {"pattern": "x"}, doc) == ["$: schema keywords this checker does not know: ['pattern']"]


def test_a_group_nobody_judged_has_a_null_status_not_ok():
    """The model keeps a group OK while no log end offset is known for its partitions (rule ``no_end_offsets``):
    ``/v1`` says null there, for the group and its partition, as ``status`` and ``describe`` show ``-``."""
    from protocol import builders as b
    from protocol.codec import decode_record, encode_record
    from streaming.model.shard import GroupCoordinatorShard
    from streaming.schema import tables
    from streaming.sinks.prometheus import MetricsState

    t0 = 1_800_000_000_000
    shard = GroupCoordinatorShard(3)
    for offset, (gid, topic) in enumerate((("unjudged", "u"), ("judged", "t"))):
        shard.replay(offset, t0, decode_record(*encode_record(b.new_offset_commit(gid, topic, 0, 10,
                                                                                  commit_timestamp=t0))))
    shard.apply_heartbeat(t0 + 1_000, {("t", 0): 10})  # only topic t's end is known
    snapshots = shard.snapshot(t0 + 2_000).groups
    state = MetricsState()
    state.apply_batch([tables.group_row(s, shard=3, now_ms=t0 + 2_000) for s in snapshots],
                      [r for s in snapshots for r in tables.partition_rows(s, shard=3, now_ms=t0 + 2_000)])
    sources = {CLUSTER: ClusterSource.of_state(CLUSTER, state)}
    groups = {g["group"]: g for g in get(sources, f"/v1/clusters/{CLUSTER}/groups")[1]["groups"]}
    assert (groups["unjudged"]["status"], groups["judged"]["status"]) == (None, "OK")
    detail = get(sources, f"/v1/clusters/{CLUSTER}/groups/unjudged")[1]
    assert detail["status"] is None and [p["status"] for p in detail["partitions"]] == [None]
    assert [p["status"] for p in get(sources, f"/v1/clusters/{CLUSTER}/groups/judged")[1]["partitions"]] == ["OK"]


def test_an_unknown_cluster_or_group_is_a_404_naming_it():
    from streaming.api import native

    assert native.error(503, "not yet") == (503, {"error": {"status": 503, "message": "not yet"}})
    for answer in (native.cluster("prod", None), native.groups("prod", None), native.group("prod", None, "g")):
        status, body = answer
        assert status == 404 and body["error"]["message"] == "cluster 'prod' not found"
