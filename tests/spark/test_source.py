"""The groupscope Kafka source (``streaming.spark.source``) as Spark drives it, without Spark: its options (checked
when the stream starts, one clear error each), the offsets it plans against a real Kafka-protocol broker
(librdkafka's mock cluster), and the rows its read tasks hand Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from confluent_kafka import Producer

from streaming.job.packed import PACKED_DDL, PACKED_SCHEMA, split_ranges, unpack
from streaming.kafka.client import KafkaUnavailable
from streaming.kafka.mock_cluster import MockCluster
from streaming.kafka.reader import OffsetRange
from streaming.spark.ranges import RangeTask
from streaming.spark.source import SOURCE_DDL, KafkaRangeSource


def _reader(**options):
    return KafkaRangeSource({"kafka.bootstrap.servers": "b:9092", "topics": "t", **options}).streamReader(None)


# ---- options -----------------------------------------------------------------------------------------------------

def test_the_source_is_named_and_shaped_as_the_query_reads_it():
    assert KafkaRangeSource.name() == "groupscope_kafka"
    assert KafkaRangeSource({"packed": "true"}).schema() == PACKED_DDL
    assert KafkaRangeSource({}).schema() == SOURCE_DDL, "unpacked: the columns of Spark's own Kafka source"


def test_options_are_read_whatever_their_case_and_kafka_settings_passed_through():
    reader = KafkaRangeSource({"kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_SSL",
                               "Topics": " a , b ,", "startingOffsets": "latest", "maxOffsetsPerTrigger": "500",
                               "readTasks": "3", "unlimitedTopics": "b", "timeoutSeconds": "7.5", "packed": "TRUE",
                               "deferredTopics": "a", "reader": "consumer"}).streamReader(None)
    assert reader.kafka == {"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL"}
    assert (reader.topics, reader.starting, reader.max_rows, reader.read_tasks) == (["a", "b"], "latest", 500, 3)
    assert (reader.unlimited, reader.deferred, reader.timeout_s) == (frozenset({"b"}), frozenset({"a"}), 7.5)
    assert reader.packed and reader.reader == "consumer"


def test_the_defaults_read_committed_from_the_earliest_offsets_unlimited():
    reader = _reader()
    assert (reader.starting, reader.max_rows, reader.isolation, reader.reader, reader.packed) == (
        "earliest", None, "read_committed", "fetch", False)


@pytest.mark.parametrize("options, message", [
    ({"kafka.bootstrap.servers": None}, "needs the option kafka.bootstrap.servers"),
    ({"topics": " , "}, "needs the option topics"),
    ({"startingOffsets": "newest"}, "startingOffsets must be earliest or latest, got 'newest'"),
    ({"deferredTopics": "t"}, "deferredTopics needs packed=true"),
    ({"reader": "jdbc"}, "reader must be fetch or consumer, got 'jdbc'"),
    ({"packed": "yes"}, "packed must be true or false, got 'yes'"),
])
def test_a_bad_option_is_one_error_naming_it(options, message):
    base = {"kafka.bootstrap.servers": "b:9092", "topics": "t"}
    merged = {k: v for k, v in {**base, **options}.items() if v is not None}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        KafkaRangeSource(merged).streamReader(None)


def test_an_unreachable_cluster_is_no_news_not_a_failed_trigger(monkeypatch):
    reader = _reader()

    def unreachable(**kw):
        raise KafkaUnavailable("metadata request failed")

    monkeypatch.setattr(reader, "_ends", unreachable)
    assert reader.initialOffset() == {}
    assert reader.ends() is None


# ---- against a broker --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def broker():
    """Topic t: 10 records on partition 0, 4 on partition 1; topic hb: 2 records."""
    with MockCluster(1) as mc:
        mc.create_topic("t", 2)
        mc.create_topic("hb", 1)
        p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
        for i in range(10):
            p.produce("t", value=b"a%d" % i, partition=0)
        for i in range(4):
            p.produce("t", value=b"b%d" % i, partition=1)
        for i in range(2):
            p.produce("hb", value=b"h%d" % i, partition=0)
        p.flush(30)
        yield mc.bootstrap_servers


def _on(broker: str, **options):
    return KafkaRangeSource({"kafka.bootstrap.servers": broker, "topics": "t,hb", **options}).streamReader(None)


def test_the_first_offsets_are_the_log_starts_or_the_ends(broker):
    assert _on(broker).initialOffset() == {"hb": {"0": 0}, "t": {"0": 0, "1": 0}}
    assert _on(broker, startingOffsets="latest").initialOffset() == {"hb": {"0": 2}, "t": {"0": 10, "1": 4}}


def test_available_now_freezes_the_ends_at_the_start(broker, monkeypatch):
    reader = _on(broker)
    reader.prepareForTriggerAvailableNow()
    frozen = reader.ends()
    assert frozen == {("hb", 0): 2, ("t", 0): 10, ("t", 1): 4}
    monkeypatch.setattr(reader, "_ends", lambda **kw: pytest.fail("asked Kafka again"))
    assert reader.ends() == frozen


def test_a_task_reads_rows_of_the_kafka_source_columns(broker):
    rows = list(_on(broker).read(RangeTask((OffsetRange("t", 0, 2, 5), OffsetRange("t", 1, 0, 2)))))
    table = pa.Table.from_batches(rows)
    assert sorted(zip(table.column("partition").to_pylist(), table.column("value").to_pylist())) == [
        (0, b"a2"), (0, b"a3"), (0, b"a4"), (1, b"b0"), (1, b"b1")]


def test_a_packed_task_names_deferred_ranges_and_packs_the_rest(broker):
    reader = _on(broker, packed="true", deferredTopics="t")
    rows = pa.Table.from_batches(list(reader.read(RangeTask((OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 4, 4),
                                                              OffsetRange("hb", 0, 0, 2))))))
    assert rows.schema == PACKED_SCHEMA
    payloads, ranges = split_ranges(rows.column("payload").to_pylist())
    assert ranges == [OffsetRange("t", 0, 0, 10)], "an empty range is not named"
    assert unpack(payloads).column("value").to_pylist() == [b"h0", b"h1"]


def test_deferred_ranges_ride_with_the_first_read_task_and_weigh_nothing():
    reader = _reader(packed="true", deferredTopics="t", topics="t,hb", readTasks="2")
    start = {"t": {str(p): 0 for p in range(6)}, "hb": {"0": 0, "1": 0}}
    end = {"t": {str(p): 1_000_000 for p in range(6)}, "hb": {"0": 5, "1": 3}}
    tasks = reader.partitions(start, end)
    assert len(tasks) == 2, "the read topic's ranges still split over the tasks"
    assert [r.topic for r in tasks[0].ranges].count("t") == 6 and all(r.topic == "hb" for r in tasks[1].ranges)
    assert sorted(r.size for t in tasks for r in t.ranges if r.topic == "hb") == [3, 5]
    only_named = reader.partitions(start, {"t": end["t"], "hb": {"0": 0, "1": 0}})
    assert len(only_named) == 1 and len(only_named[0].ranges) == 6, "markers alone are one task"
    assert reader.partitions(end, end) == []
    undeferred = _reader(packed="true", topics="t", readTasks="2")
    assert len(undeferred.partitions(start, {"t": end["t"]})) == 2
