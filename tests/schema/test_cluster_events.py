"""Cluster events (a Kafka outage every shard saw on its own) merged into one ``group_events`` row per outage:
shard -1, the union of the groups, the reason said again with the merged count; other rows untouched."""

from __future__ import annotations

import json

import pyarrow as pa

from streaming.schema.cluster_events import CLUSTER_SHARD, merge_cluster_events, merge_cluster_rows


def outage(shard: int, groups: list[str], offset: int = 1_000, seconds: float = 95.4) -> dict:
    return {"kind": "KafkaUnavailable", "offset": offset, "shard": shard, "group_id": "",
            "detail": json.dumps({"groups": groups, "seconds": seconds, "reason": f"shard {shard}'s own"})}


def other(shard: int) -> dict:
    return {"kind": "Rebalance", "offset": 5, "shard": shard, "group_id": "g", "detail": "{}"}


def test_one_row_per_outage_with_every_group_it_touched():
    rows = merge_cluster_rows([outage(0, ["b", "a"]), other(0), outage(3, ["c", "a"]), outage(7, [])])
    assert rows[0] == other(0)
    (merged,) = rows[1:]
    assert merged["shard"] == CLUSTER_SHARD == -1 and merged["offset"] == 1_000
    detail = json.loads(merged["detail"])
    assert detail["groups"] == ["a", "b", "c"]
    assert detail["reason"] == ("Kafka unavailable for 95 s (no heartbeat and no coordinator write); 3 groups "
                                "rejoined: a cluster event, not counted against any group")


def test_outages_at_different_moments_stay_apart():
    rows = merge_cluster_rows([outage(0, ["a"], offset=1), outage(1, ["b"], offset=2)])
    assert [(r["offset"], json.loads(r["detail"])["groups"]) for r in rows] == [(1, ["a"]), (2, ["b"])]


def test_an_outage_no_group_felt_says_so():
    (row,) = merge_cluster_rows([outage(0, []), outage(1, [])])
    assert "no group had to rejoin" in json.loads(row["detail"])["reason"]


def test_a_row_without_detail_is_merged_too():
    bare = {"kind": "KafkaUnavailable", "offset": 9, "shard": 2, "group_id": "", "detail": None}
    (row,) = merge_cluster_rows([bare])
    assert json.loads(row["detail"])["groups"] == [] and row["shard"] == -1


def test_merge_over_a_table():
    table = pa.Table.from_pylist([other(0), outage(0, ["a"]), outage(1, ["b"])])
    merged = merge_cluster_events(table)
    assert merged.schema == table.schema and merged.num_rows == 2
    rows = merged.to_pylist()
    assert rows[0] == other(0) and json.loads(rows[1]["detail"])["groups"] == ["a", "b"]


def test_a_table_without_cluster_events_is_returned_as_it_is():
    table = pa.Table.from_pylist([other(0), other(1)])
    assert merge_cluster_events(table) is table
