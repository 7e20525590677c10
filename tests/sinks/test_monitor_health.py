"""``MonitorHealth``: the job's own figures add up over batches, each ``__consumer_offsets`` partition says how far
behind it is and how much an open transaction holds back, and they reach ``/metrics`` as the ``groupscope_*``
series."""

from __future__ import annotations

import pytest

from streaming.sinks.monitor_health import MonitorHealth, OffsetsPartitionHealth
from streaming.sinks.state_store import MetricsState
from tests.sinks.scrape import NOW, group_row, scrape, step, value


def test_health_accumulates_over_batches():
    h = MonitorHealth()
    assert not h.caught_up, "nothing read yet: not ready"
    h = h.after_batch([step(0, records=10, decode_errors=2, caught_up=False, last_offset=9, state_bytes=700),
                       step(1, records=5, unknown_records=1, state_bytes=300)], batch_seconds=0.5, now=NOW - 5,
                      input_records_per_second=30.0)
    h = h.after_batch([step(0, records=90, heartbeat_ms=1_795_310_995_000, state_bytes=900)], batch_seconds=0.25,
                      now=NOW, query_restarts=1)
    assert [p.state_bytes for p in h.offsets_partitions] == [900, 300], "a shard's newest size replaces its last"
    assert (h.records_decoded, h.decode_errors, h.unknown_records, h.batches) == (103, 2, 1, 2)
    assert (h.last_batch_seconds, h.input_records_per_second, h.last_batch_time) == (0.25, 30.0, NOW)
    assert h.heartbeat_time == 1_795_310_995.0 and h.query_restarts == 1
    assert h.caught_up, "shard 0 caught up in the second batch, shard 1 kept its first report"
    with pytest.raises(ValueError):
        h.after_batch([], batch_seconds=-1, now=NOW)
    with pytest.raises(ValueError):
        h.after_batch([step(0, records=-1)], batch_seconds=0, now=NOW)


@pytest.mark.parametrize("part,behind,unstable", [
    (OffsetsPartitionHealth(0, 89, 100, 100, False), 10, 0),  # 90..99 not read yet
    (OffsetsPartitionHealth(0, 89, 100, 90, True), 0, 10),  # read up to the LSO; an open txn holds back 10
    (OffsetsPartitionHealth(0, 99, 100, -1, True), 0, None),  # no LSO reported: the HWM is the end
    (OffsetsPartitionHealth(0, -1, -1, -1, False), None, None),  # no heartbeat yet: unknown
    (OffsetsPartitionHealth(0, 120, 100, 100, True), 0, 0),  # a racing report past the end: never negative
], ids=["behind", "open-transaction", "no-lso", "unknown", "racing"])
def test_offsets_partition_behind_and_unstable(part, behind, unstable):
    assert (part.behind, part.unstable) == (behind, unstable)


def test_monitor_series():
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")], health=MonitorHealth(
        records_decoded=1000, decode_errors=3, unknown_records=2, batches=12, query_restarts=1,
        last_batch_seconds=0.4, input_records_per_second=2500.0, last_batch_time=NOW - 1, heartbeat_time=NOW - 7.5,
        offsets_partitions=(OffsetsPartitionHealth(0, 89, 100, 90, True, 2048, 2),
                            OffsetsPartitionHealth(1, 9, 50, 50, False, 1024, 1))))
    s = scrape(state)
    expected = {
        "groupscope_records_decoded_total": 1000, "groupscope_decode_errors_total": 3,
        "groupscope_unknown_records_total": 2, "groupscope_batches_total": 12, "groupscope_query_restarts_total": 1,
        "groupscope_batch_duration_seconds": 0.4, "groupscope_input_records_per_second": 2500,
        "groupscope_last_batch_timestamp_seconds": NOW - 1, "groupscope_last_heartbeat_timestamp_seconds": NOW - 7.5,
        "groupscope_heartbeat_age_seconds": 7.5,  # injected clock minus the heartbeat
        "groupscope_caught_up": 0,  # partition 1 is 40 records behind
        "groupscope_groups": 2, "groupscope_model_anomalies_total": 0,
        "groupscope_state_bytes": 3072,  # both shards' state
        # every shard sees each outage; one whose log was written during a gap (the job's own downtime) does not
        "groupscope_kafka_outages_total": 2,
    }
    assert {k: value(s, k) for k in expected} == expected
    assert value(s, "groupscope_offsets_topic_behind_records", partition="1") == 40
    assert value(s, "groupscope_offsets_topic_unstable_records", partition="0") == 10
    assert value(s, "groupscope_offsets_topic_last_stable_offset", partition="0") == 90
    assert [dict(k[1])["version"] for k in s if k[0] == "groupscope_build_info"] != []


def test_heartbeat_age_is_never_negative_and_absent_without_heartbeat():
    state = MetricsState()
    assert value(scrape(state), "groupscope_heartbeat_age_seconds") is None
    state.set_health(MonitorHealth(heartbeat_time=NOW + 3))  # emitter clock slightly ahead of the driver's
    assert value(scrape(state), "groupscope_heartbeat_age_seconds") == 0
