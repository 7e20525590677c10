"""Every Burrow endpoint, field by field, against the group model's own snapshot of the same simulated workload,
and Burrow's status rollup for statuses the simulated workload does not produce (STALL, REWIND).

The state is fed with the rows the job's step builds (``tables.group_row``/``partition_rows``), both as built
(times in epoch ms) and read back from Arrow (times as ``datetime``), the two forms the driver sees. The oracle is
the model's ``GroupSnapshot`` objects, not the rows, and the status mapping is written out here again, so a change
on either side shows.
"""

from __future__ import annotations

import pytest

from streaming.api import ClusterInfo, ClusterSource, burrow, route
from streaming.model.rules import Status
from streaming.schema import tables
from streaming.sinks.prometheus import MetricsState
from tests.api.feed import DATA_LOSS, Fed, feed_state

# Burrow's names for groupscope's statuses (docs/http-api.md#statuses).
PARTITION = {"OK": "OK", "WARN": "WARN", "STALL": "STALL", "STOP": "STOP", "REWIND": "REWIND", "ERR": "ERR"}
GROUP = {"OK": "OK", "WARN": "WARN", "STALL": "ERR", "STOP": "ERR", "REWIND": "ERR", "ERR": "ERR"}
CLUSTER = "sim"


@pytest.fixture(scope="module")
def fed() -> Fed:
    return feed_state()


def _arrow_state(fed: Fed) -> MetricsState:
    """The same rows as the driver gets them: through Arrow (times come back as ``datetime``)."""
    view = fed.state.view()
    groups = tables.to_table("groups", fed.group_rows).to_pylist()
    shards = {r["group_id"]: r["shard"] for r in groups}
    parts = [tables.partition_rows(s, shard=shards[g], now_ms=fed.now_ms) for g, s in fed.snapshots.items()]
    state = MetricsState()
    state.apply_batch(groups, tables.to_table("lag", [r for rows in parts for r in rows]).to_pylist(), (),
                      view.health, batch_id=0)
    return state


@pytest.fixture(scope="module", params=["rows", "arrow"])
def sources(request, fed) -> dict[str, ClusterSource]:
    state = fed.state if request.param == "rows" else _arrow_state(fed)
    return {CLUSTER: ClusterSource.of_state(CLUSTER, state, ClusterInfo(servers=("b1:9092", "b2:9092"),
                                                                        refresh_seconds=5.0))}


def get(sources, path: str):
    reply = route("GET", path, sources, host="testhost")
    return reply.status, reply.body


def test_the_workload_covers_the_statuses_the_mapping_must_handle(fed):
    partition = {p.status for s in fed.snapshots.values() for p in s.partitions}
    group = {s.status for s in fed.snapshots.values()}
    assert {Status.OK, Status.WARN, Status.STOP, Status.ERR} <= partition, partition
    assert {Status.OK, Status.WARN, Status.STOP, Status.ERR} <= group, group
    assert any(m.member_epoch is not None for s in fed.snapshots.values() for m in s.members), "no KIP-848 member"


def test_cluster_list_and_detail(sources):
    assert get(sources, "/v3/kafka") == (200, {"error": False, "message": "cluster list returned",
                                               "clusters": [CLUSTER], "request": {"url": "/v3/kafka",
                                                                                  "host": "testhost"}})
    status, body = get(sources, f"/v3/kafka/{CLUSTER}")
    assert status == 200 and body["message"] == "cluster module detail returned"
    module = body["module"]
    assert module["class-name"] == "kafka" and module["servers"] == ["b1:9092", "b2:9092"]
    assert module["topic-refresh"] == module["offset-refresh"] == 5
    assert module["client-profile"]["tls"] is None and module["client-profile"]["sasl"] is None


def test_consumer_list_is_every_group_of_the_model(sources, fed):
    status, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer")
    assert status == 200 and body["error"] is False and body["message"] == "consumer list returned"
    assert body["consumers"] == sorted(fed.snapshots)


def _owner(snapshot, member_id):
    m = next((m for m in snapshot.members if m.member_id == member_id), None)
    return ("", "") if m is None else (m.host, m.client_id)


def _offset(p):
    return {"offset": p.committed, "timestamp": p.commit_timestamp, "observedAt": p.commit_timestamp, "lag": None}


def test_consumer_detail_matches_every_partition(sources, fed):
    for gid, snap in fed.snapshots.items():
        status, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer/{gid}")
        assert status == 200 and body["message"] == "consumer detail returned", gid
        topics = body["topics"]
        assert set(topics) == {p.topic for p in snap.partitions}, gid
        seen = set()
        for p in snap.partitions:
            owner, client_id = _owner(snap, p.owner)
            assert topics[p.topic][p.partition] == {"offsets": [_offset(p)], "owner": owner, "client_id": client_id,
                                                    "current-lag": max(0, p.lag or 0)}, (gid, p)
            seen.add((p.topic, p.partition))
        for topic, entries in topics.items():
            for n, entry in enumerate(entries):
                if (topic, n) not in seen:  # a gap below the highest committed partition: Burrow's empty entry
                    assert entry == {"offsets": [], "owner": "", "client_id": "", "current-lag": 0}


@pytest.mark.parametrize("kind", ["lag", "status"])
def test_status_and_lag_match_the_model(sources, fed, kind):
    owned = 0
    for gid, snap in fed.snapshots.items():
        status, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer/{gid}/{kind}")
        assert status == 200 and body["error"] is False and body["message"] == "consumer status returned"
        st = body["status"]
        expected = []
        for p in sorted(snap.partitions, key=lambda p: (p.topic, p.partition)):
            owner, client_id = _owner(snap, p.owner)
            owned += bool(owner)
            expected.append({"topic": p.topic, "partition": p.partition, "owner": owner, "client_id": client_id,
                             "status": PARTITION[p.status.name], "start": _offset(p), "end": _offset(p),
                             "current_lag": max(0, p.lag or 0), "complete": 1.0})
        lags = [e["current_lag"] for e in expected]
        assert st["cluster"] == CLUSTER and st["group"] == gid
        assert st["status"] == GROUP[snap.status.name], gid
        assert st["partition_count"] == len(snap.partitions)
        assert st["totallag"] == sum(lags) == snap.sum_lag, gid
        assert st["complete"] == (1.0 if expected else 0.0)
        if expected:
            assert st["maxlag"] == expected[lags.index(max(lags))] and st["maxlag"]["current_lag"] == snap.max_lag
        else:
            assert st["maxlag"] is None
        wanted = expected if kind == "lag" else [e for e in expected if e["status"] != "OK"]
        assert st["partitions"] == wanted, gid
    assert owned, "no partition had an owner: the owner lookup was not exercised"


def test_data_loss_is_err_beside_warn_and_groups_roll_up(sources, fed):
    _, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer/lagging/status")
    by_partition = {(p["topic"], p["partition"]): p["status"] for p in body["status"]["partitions"]}
    assert by_partition[DATA_LOSS] == "ERR"
    assert set(by_partition.values()) == {"ERR", "WARN"} and body["status"]["status"] == "ERR"
    # A group whose worst partition is STOP is ERR for Burrow; its partitions keep STOP.
    assert fed.snapshots["stopped"].status is Status.STOP
    _, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer/stopped/status")
    assert body["status"]["status"] == "ERR" and {p["status"] for p in body["status"]["partitions"]} == {"STOP"}


def test_topics_and_their_end_offsets(sources, fed):
    topics = {p.topic for s in fed.snapshots.values() for p in s.partitions}
    status, body = get(sources, f"/v3/kafka/{CLUSTER}/topic")
    assert status == 200 and body["message"] == "topic list returned" and body["topics"] == sorted(topics)
    for topic in topics:
        committed = {p.partition for s in fed.snapshots.values() for p in s.partitions if p.topic == topic}
        status, body = get(sources, f"/v3/kafka/{CLUSTER}/topic/{topic}")
        assert status == 200 and body["message"] == "topic offsets returned"
        offsets = body["offsets"]
        assert len(offsets) == max(committed) + 1
        for n, end in enumerate(offsets):
            # The simulator's own end offsets: what the heartbeat carried.
            assert end == (fed.ends[(topic, n)] if n in committed else -1), (topic, n)
        status, body = get(sources, f"/v3/kafka/{CLUSTER}/topic/{topic}/consumers")
        assert status == 200 and body["message"] == "consumers of topic returned"
        assert body["consumers"] == sorted(g for g, s in fed.snapshots.items()
                                           if any(p.topic == topic for p in s.partitions))


def test_complete_is_zero_while_catching_up():
    fed = feed_state(seconds=40, caught_up=False)
    sources = {CLUSTER: ClusterSource.of_state(CLUSTER, fed.state)}
    _, body = get(sources, f"/v3/kafka/{CLUSTER}/consumer/steady-range/lag")
    assert body["status"]["complete"] == 0.0
    assert {p["complete"] for p in body["status"]["partitions"]} == {0.0}


def _status_of(statuses: list[str]) -> tuple[str, list[str]]:
    """Burrow's group status and partition statuses for one group whose partitions have ``statuses``."""
    state = MetricsState()
    worst = max(statuses, key=["OK", "WARN", "STALL", "STOP", "REWIND", "ERR"].index)
    state.apply_batch([{"group_id": "g", "status": worst, "partition_count": len(statuses)}],
                      [{"group_id": "g", "topic": "t", "partition": i, "committed_offset": 1, "lag": 1, "status": s}
                       for i, s in enumerate(statuses)])
    body = route("GET", "/v3/kafka/c/consumer/g/lag", {"c": ClusterSource.of_state("c", state)}).body
    return body["status"]["status"], [p["status"] for p in body["status"]["partitions"]]


@pytest.mark.parametrize("statuses, group", [
    (["OK", "OK"], "OK"),
    (["OK", "WARN"], "WARN"),
    (["WARN", "STALL"], "ERR"),
    (["OK", "STOP"], "ERR"),
    (["REWIND", "WARN"], "ERR"),
    (["ERR", "OK"], "ERR"),
])
def test_status_rollup_follows_burrow(statuses, group):
    assert _status_of(statuses) == (group, statuses)


def test_status_lists_only_partitions_that_are_not_ok():
    state = MetricsState()
    state.apply_batch([{"group_id": "g", "status": "STALL", "partition_count": 3}],
                      [{"group_id": "g", "topic": "t", "partition": i, "committed_offset": 1, "lag": i, "status": s}
                       for i, s in enumerate(["OK", "STALL", "REWIND"])])
    body = route("GET", "/v3/kafka/c/consumer/g/status", {"c": ClusterSource.of_state("c", state)}).body["status"]
    assert [p["status"] for p in body["partitions"]] == ["STALL", "REWIND"]
    assert body["partition_count"] == 3 and body["maxlag"]["partition"] == 2 and body["totallag"] == 3


@pytest.mark.parametrize("protocol,sasl,tls", [
    ("PLAINTEXT", False, False), ("SSL", False, True), ("SASL_PLAINTEXT", True, False), ("SASL_SSL", True, True),
    ("sasl_ssl", True, True),  # librdkafka reads security.protocol case-insensitively
])
def test_cluster_detail_describes_the_connection_as_burrows_client_profile(protocol, sasl, tls):
    info = ClusterInfo(servers=("b1:9093",), client_id="gs-east", refresh_seconds=2.6, security_protocol=protocol,
                       sasl_mechanism="SCRAM-SHA-512", sasl_username="monitor")
    status, body = burrow.cluster_detail(ClusterSource("east", MetricsState().view, info))
    module = body["module"]
    assert status == 200 and module["servers"] == ["b1:9093"] and module["class-name"] == "kafka"
    assert (module["topic-refresh"], module["offset-refresh"]) == (3, 3), "whole seconds, as Burrow's config has"
    profile = module["client-profile"]
    assert profile["client-id"] == "gs-east"
    assert (profile["sasl"] is not None, profile["tls"] is not None) == (sasl, tls)
    if sasl:
        assert profile["sasl"] == {"name": "SCRAM-SHA-512", "handshake-first": True, "username": "monitor"}
    assert "password" not in repr(body)
    assert burrow.cluster_detail(None) == (404, {"error": True, "message": "cluster module not found"})


def test_topic_detail_fills_partitions_without_a_measured_end_with_minus_one():
    state = MetricsState()
    state.apply_batch([{"group_id": "g", "status": "OK"}],
                      [{"group_id": "g", "topic": "orders", "partition": p, "committed_offset": 1,
                        "log_end_offset": end, "lag": end - 1, "status": "OK"} for p, end in ((0, 10), (2, 30))])
    assert burrow.topic_detail(state.view(), "orders") == (
        200, {"error": False, "message": "topic offsets returned", "offsets": [10, -1, 30]})
    assert burrow.topic_detail(state.view(), "payments")[0] == 404
    assert burrow.cluster_list(["west", "east"]) == (
        200, {"error": False, "message": "cluster list returned", "clusters": ["east", "west"]})
