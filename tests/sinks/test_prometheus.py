"""``prometheus.py`` names the sink's parts by their own objects; and the driver's metrics feed hands the sink what
it acts on: only the events the metrics read, and the input rate in decoded ``__consumer_offsets`` records per
second.

The sink's own parts have their tests beside them: ``test_collector.py``, ``test_state_store.py``,
``test_monitor_health.py``, ``test_metric_catalogue.py`` and ``test_metrics_server.py``.
"""

from __future__ import annotations

from tests.sinks.scrape import group_row, names_for_group, scrape, step, value


def test_the_feed_hands_the_metrics_only_the_events_they_act_on():
    import pyarrow as pa

    from streaming.config import load_settings
    from streaming.job.batch_sink import BatchResult
    from streaming.driver.metrics_feed import MetricsFeed
    from streaming.driver.runner import JobStatus
    from streaming.schema.tables import GROUP_EVENTS

    feed = MetricsFeed(load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1"}}), JobStatus())
    feed.state.apply_batch([group_row("g1"), group_row("gone")], batch_id=0)
    rows = [dict.fromkeys(GROUP_EVENTS.names) | {"kind": "StatusChanged", "group_id": "g1", "shard": 3, "offset": i,
                                                  "topic": "orders", "partition": i % 3} for i in range(2000)]
    rows += [dict.fromkeys(GROUP_EVENTS.names) | {"kind": "GroupDeleted", "group_id": "gone", "shard": 3,
                                                   "offset": 2000},
             dict.fromkeys(GROUP_EVENTS.names) | {"kind": "Anomaly", "group_id": "g1", "shard": 3, "offset": 2001}]
    feed.apply(BatchResult(1, tables={"group_events": pa.Table.from_pylist(rows, schema=GROUP_EVENTS)},
                           health=[step(0)]))
    s = scrape(feed.state)
    assert not names_for_group(s, "gone"), "GroupDeleted reached the metrics"
    assert names_for_group(s, "g1")
    assert value(s, "groupscope_model_anomalies_total") == 1, "Anomaly reached the metrics"


def test_feed_reports_records_of_the_offsets_topic_per_second(monkeypatch):
    """The input rate counts decoded __consumer_offsets records over the time between batches (Spark's own row
    rates would count the source's packed chunks)."""
    from streaming.job.batch_sink import BatchResult
    from streaming.config import load_settings
    from streaming.driver.metrics_feed import MetricsFeed
    from streaming.driver.runner import JobStatus

    clock = iter([1000.0, 1002.0, 1006.0])
    monkeypatch.setattr("streaming.driver.metrics_feed.time.time", lambda: next(clock))
    status = JobStatus(batch_duration_s=0.5)
    feed = MetricsFeed(load_settings(None, {"metrics": {"port": 0, "host": "127.0.0.1"}}), status)
    feed.apply(BatchResult(0, health=[step(0, records=300), step(1, records=200)]))
    assert feed.health.input_records_per_second == 1000.0, "first batch: over its own duration"
    feed.apply(BatchResult(1, health=[step(0, records=3000), step(1, records=1000)]))
    assert feed.health.input_records_per_second == 2000.0
    feed.apply(BatchResult(2, health=[step(0, records=0)]))
    assert feed.health.input_records_per_second == 0.0




def test_the_sink_names_each_part_by_the_object_its_module_defines():
    """``prometheus.py`` gathers the parts for the job and the catalogue checks: each name it exports must be the
    part's own object (a copy or a stale alias would give the job one class and the tests another)."""
    import streaming.sinks.prometheus as prometheus
    from streaming.sinks import collector, metric_catalogue, metrics_server, monitor_health, state_store

    homes = {"GroupscopeCollector": collector, "METRICS": metric_catalogue, "MetricSpec": metric_catalogue,
             "MetricsServer": metrics_server, "MonitorHealth": monitor_health,
             "OffsetsPartitionHealth": monitor_health, "ReadinessPolicy": monitor_health,
             "StepHealthLike": monitor_health, "MetricsState": state_store, "StateView": state_store,
             "METRIC_EVENT_KINDS": state_store}
    assert sorted(prometheus.__all__) == sorted(homes)
    for name, home in homes.items():
        assert getattr(prometheus, name) is getattr(home, name), name
