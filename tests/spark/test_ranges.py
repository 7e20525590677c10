"""What the two Python streaming sources share (``streaming.spark.ranges``): a stream reader over offset ranges, as
Spark calls it between triggers. Spark's reader interface is plain Python; Spark itself is not started."""

from __future__ import annotations

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from streaming.kafka.reader import OffsetRange
from streaming.spark.ranges import RangeReader, RangeTask


class _Ends(RangeReader):
    """A reader whose partitions end where it is told (None: the source cannot tell right now)."""

    def __init__(self, ends, *, max_rows=None, read_tasks=2, unlimited=frozenset()):
        self._ends = ends
        self.max_rows = max_rows
        self.read_tasks = read_tasks
        self.unlimited = unlimited

    def ends(self):
        return self._ends

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark's name); the subclasses' part
        pass

    def read(self, partition):  # the subclasses' part
        raise NotImplementedError


def test_the_default_limit_is_the_configured_rows_or_everything():
    assert isinstance(_Ends({}).getDefaultReadLimit(), ReadAllAvailable)
    limit = _Ends({}, max_rows=500).getDefaultReadLimit()
    assert isinstance(limit, ReadMaxRows) and limit.max_rows == 500


def test_a_source_that_cannot_tell_its_ends_stays_where_it_is():
    start = {"t": {"0": 5}}
    assert _Ends(None).latestOffset(start, ReadAllAvailable()) == start


def test_the_first_trigger_reads_from_the_start_of_every_partition():
    reader = _Ends({("t", 0): 30, ("t", 1): 10})
    assert reader.latestOffset({}, ReadAllAvailable()) == {"t": {"0": 30, "1": 10}}
    assert reader.latestOffset(None, ReadAllAvailable()) == {"t": {"0": 30, "1": 10}}


def test_a_partition_added_since_the_checkpoint_starts_at_zero_and_shares_the_limit():
    reader = _Ends({("t", 0): 130, ("t", 1): 100})
    # 30 waiting on the old partition, 100 on the new one: 40 allowed, shared 30:100
    assert reader.latestOffset({"t": {"0": 100}}, ReadMaxRows(40)) == {"t": {"0": 109, "1": 30}}


def test_the_heartbeat_topic_is_read_in_full_under_a_limit():
    reader = _Ends({("hb", 0): 50, ("t", 0): 1000}, unlimited=frozenset({"hb"}))
    assert reader.latestOffset({}, ReadMaxRows(10)) == {"hb": {"0": 50}, "t": {"0": 10}}


def test_a_batch_is_cut_into_read_tasks_of_its_ranges():
    reader = _Ends({}, read_tasks=2)
    tasks = reader.partitions({"t": {"0": 0, "1": 5}}, {"t": {"0": 40, "1": 25, "2": 10}})
    assert all(isinstance(t, RangeTask) for t in tasks)
    assert [list(t.ranges) for t in tasks] == [[OffsetRange("t", 0, 0, 40)],
                                               [OffsetRange("t", 1, 5, 25), OffsetRange("t", 2, 0, 10)]]


def test_a_batch_with_nothing_new_has_no_read_task():
    assert _Ends({}).partitions({"t": {"0": 7}}, {"t": {"0": 7}}) == []
