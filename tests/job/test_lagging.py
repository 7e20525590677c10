"""The step's list of lagging committed offsets (``streaming.job.lagging``): which partitions are listed, in which
order, how many, and how the driver reads the list back per shard."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa

from streaming.job.lagging import LAGGING_SCHEMA, LIMIT, lagging_of, lagging_table
from streaming.kafka.oldest_probe import Lagging


def _partition(topic: str, partition: int, committed: int, lag: int | None, lag_seconds: float | None,
               data_loss_risk: bool = False) -> SimpleNamespace:
    """The fields of a model's PartitionLag that the list is made of."""
    return SimpleNamespace(topic=topic, partition=partition, committed=committed, lag=lag, lag_seconds=lag_seconds,
                           data_loss_risk=data_loss_risk)


def _groups(*partitions) -> list[SimpleNamespace]:
    return [SimpleNamespace(partitions=tuple(partitions))]


def test_the_most_urgent_come_first_seconds_then_offsets_and_unknown_seconds_last():
    table = lagging_table(4, _groups(_partition("a", 0, 10, 5, 30.0), _partition("a", 1, 10, 500, None),
                                     _partition("b", 0, 10, 50, 30.0), _partition("c", 0, 10, 1, 900.0)))
    assert table.schema == LAGGING_SCHEMA
    assert [(r["topic"], r["partition"]) for r in table.to_pylist()] == [("c", 0), ("b", 0), ("a", 0), ("a", 1)]
    assert set(table.column("shard").to_pylist()) == {4}


def test_only_partitions_behind_with_a_record_to_read_are_listed():
    table = lagging_table(0, _groups(
        _partition("t", 0, 100, 0, 0.0),  # caught up
        _partition("t", 1, 100, None, None),  # no end offset known yet
        _partition("t", 2, -1, 40, 10.0),  # nothing committed
        _partition("t", 3, 5, 95, 60.0, data_loss_risk=True),  # below the log start: its record is gone
        _partition("t", 4, 100, 7, 3.0)))
    assert table.to_pylist() == [{"shard": 0, "topic": "t", "partition": 4, "committed_offset": 100, "lag": 7,
                                  "lag_seconds": 3.0}]


def test_a_shard_lists_at_most_the_limit_keeping_the_most_urgent():
    many = [_partition("t", p, 0, p + 1, float(p)) for p in range(LIMIT + 50)]
    table = lagging_table(1, _groups(*many))
    assert table.num_rows == LIMIT
    assert table.column("partition").to_pylist()[0] == LIMIT + 49
    assert min(table.column("partition").to_pylist()) == 50


def test_every_group_of_the_snapshot_is_listed():
    groups = _groups(_partition("a", 0, 1, 2, 2.0)) + _groups(_partition("b", 0, 1, 3, 1.0))
    assert lagging_table(2, groups).column("topic").to_pylist() == ["a", "b"]


def test_the_driver_gets_each_refreshed_shards_list_even_an_empty_one():
    table = pa.concat_tables([lagging_table(3, _groups(_partition("t", 0, 40, 60, 5.0))),
                              lagging_table(7, _groups(_partition("u", 2, 8, 1, None)))])
    assert lagging_of(table, [3, 5, 7]) == {3: [Lagging("t", 0, 40, 60, 5.0)], 5: [],
                                            7: [Lagging("u", 2, 8, 1, None)]}
    assert lagging_of(None, [1]) == {1: []}, "a full refresh without rows: nothing of that shard is behind"
