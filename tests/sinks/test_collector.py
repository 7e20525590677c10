"""``GroupscopeCollector``: every series a scrape shows is a figure of the rows the state holds, exactly; unknown
figures are absent rather than 0; partition-level series appear only when asked for; and the real Kafka 4.0
captures replayed through the model give the lag Kafka's own Admin API reported.

Inputs are either small hand-made rows (each case says why its expectation is right) or the captures replayed
through the model (``replay_rows``), so the rows have exactly the shape the job produces.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from typing import Any

import pytest

from streaming.model.rules import Status
from streaming.sinks.collector import GroupscopeCollector
from streaming.sinks.metric_catalogue import METRICS
from streaming.sinks.state_store import MetricsState
from tests.model.replay import truth
from tests.sinks.replay_rows import ScenarioReplay
from tests.sinks.scrape import (PARTITION_METRICS, event, g1_partitions, group_row, partition_row, scrape, storm_prone,
                                value)


# (metric, labels beyond cluster/group, expected, why)
GROUP_CASES = [
    ("kafka_consumergroup_group_sum_lag", {}, 45, "row sum_lag"),
    ("kafka_consumergroup_group_max_lag", {}, 30, "row max_lag"),
    ("kafka_consumergroup_group_max_lag_seconds", {}, 12.5, "row max_lag_seconds"),
    ("kafka_consumergroup_topic_sum_lag", {"topic": "orders"}, 40, "topics[orders].sum_lag"),
    ("kafka_consumergroup_topic_max_lag", {"topic": "payments"}, 5, "topics[payments].max_lag"),
    ("kafka_consumergroup_topic_max_lag_seconds", {"topic": "orders"}, 12.5, "topics[orders].max_lag_seconds"),
    ("kafka_consumergroup_catch_up_seconds", {}, 90.0, "catch_up_seconds while catching up"),
    ("kafka_consumergroup_members", {}, 2, "member_count"),
    ("kafka_consumergroup_partitions", {}, 3, "partition_count"),
    ("kafka_consumergroup_generation", {}, 7, "classic generation"),
    ("kafka_consumergroup_state", {"type": "CLASSIC", "state": "STABLE"}, 1, "one series for the current state"),
    ("kafka_consumergroup_info", {"type": "CLASSIC", "protocol_type": "consumer", "assignor": "range",
                                  "simple": "false"}, 1, "info labels from the row"),
    ("kafka_consumergroup_status", {}, 1, "WARN is 1 in Status (OK=0 ... ERR=5)"),
    ("kafka_consumergroup_data_loss_partitions", {}, 0, "data_loss_partitions"),
    ("kafka_consumergroup_last_commit_timestamp_seconds", {}, 1_795_310_990.5, "ms -> s"),
    ("kafka_consumergroup_last_rebalance_timestamp_seconds", {}, 1_795_310_000, "ms -> s"),
    ("kafka_consumergroup_rebalances_total", {}, 6, "the model's own rebalance count"),
    ("kafka_consumergroup_rebalance_storms_total", {}, 0, "exported at 0 before any storm, so rate() sees the 1st"),
    ("kafka_consumergroup_rolling_restarts_total", {}, 0, "same"),
    ("kafka_consumergroup_rebalance_partitions_moved_total", {}, 0, "no Rebalance event yet"),
]


@pytest.mark.parametrize("metric,labels,expected,why", GROUP_CASES, ids=[c[0] + ":" + c[3] for c in GROUP_CASES])
def test_group_values_are_the_row_values(metric, labels, expected, why):
    state = MetricsState()
    state.apply_batch([group_row()])
    assert value(scrape(state), metric, group="g1", **labels) == expected, why


def test_unknown_values_are_absent_not_zero():
    # A time lag without end-offset history, a classic group's assignment epoch, an unknown status: absent series
    # say "unknown"; 0 would claim "caught up" or "epoch 0".
    state = MetricsState()
    state.apply_batch([group_row(max_lag_seconds=None, status="SOMETHING_NEW", last_commit_time=None)])
    series = scrape(state)
    for metric in ("kafka_consumergroup_group_max_lag_seconds", "kafka_consumergroup_assignment_epoch",
                   "kafka_consumergroup_status", "kafka_consumergroup_last_commit_timestamp_seconds"):
        assert value(series, metric, group="g1") is None, metric
    assert value(series, "kafka_consumergroup_topic_max_lag_seconds", group="g1", topic="payments") is None


def test_not_catching_up_is_inf_and_unknown_is_absent():
    state = MetricsState()
    state.apply_batch([group_row("g1", catch_up_seconds=None, catching_up=False),
                       group_row("g2", catch_up_seconds=None, catching_up=None)],
                      [partition_row("g1", "orders", 0, 7, catch_up_seconds=None, catching_up=False)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_catch_up_seconds", group="g1") == math.inf
    assert value(series, "kafka_consumergroup_partition_catch_up_seconds", group="g1", topic="orders",
                 partition="0") == math.inf
    assert value(series, "kafka_consumergroup_catch_up_seconds", group="g2") is None


@pytest.mark.parametrize("status", list(Status), ids=[s.name for s in Status])
def test_status_numbers_follow_the_enum(status):
    state = MetricsState()
    state.apply_batch([group_row(status=status.name)], [partition_row("g1", "orders", 0, 1, status=status.name)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_status", group="g1") == status.value
    assert value(series, "kafka_consumergroup_partition_status", group="g1", topic="orders", partition="0") \
        == status.value


def test_rows_read_back_from_arrow_give_the_same_values():
    # The driver gets rows from Arrow (to_pylist): times are datetimes, not epoch ms.
    utc = dt.timezone.utc
    state = MetricsState()
    state.apply_batch([group_row(last_commit_time=dt.datetime(2026, 11, 22, 1, 0, 0, 500_000, tzinfo=utc),
                                 last_rebalance_time=dt.datetime(2026, 11, 22, 1, 0, 0))])
    series = scrape(state)
    assert value(series, "kafka_consumergroup_last_commit_timestamp_seconds", group="g1") == \
        dt.datetime(2026, 11, 22, 1, 0, 0, 500_000, tzinfo=utc).timestamp()
    assert value(series, "kafka_consumergroup_last_rebalance_timestamp_seconds", group="g1") == \
        dt.datetime(2026, 11, 22, 1, 0, 0, tzinfo=utc).timestamp()  # naive means UTC (Arrow's TS is UTC)


def test_kip848_group_reports_its_epochs():
    state = MetricsState()
    state.apply_batch([group_row(group_type="CONSUMER", state="ASSIGNING", protocol_type=None, assignor="uniform",
                                 generation=12, assignment_epoch=11)])
    series = scrape(state)
    assert value(series, "kafka_consumergroup_generation", group="g1") == 12
    assert value(series, "kafka_consumergroup_assignment_epoch", group="g1") == 11
    assert value(series, "kafka_consumergroup_state", group="g1", type="CONSUMER", state="ASSIGNING") == 1
    assert value(series, "kafka_consumergroup_info", group="g1", type="CONSUMER", protocol_type="",
                 assignor="uniform", simple="false") == 1


def test_partition_series_are_the_partition_rows():
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_lag", group="g1", topic="orders", partition="0") == 30
    assert value(series, "kafka_consumergroup_lag_seconds", group="g1", topic="orders", partition="1") == 10.0
    assert value(series, "kafka_consumergroup_current_offset", group="g1", topic="payments", partition="0") == 100
    assert value(series, "kafka_consumergroup_partition_catch_up_seconds", group="g1", topic="orders",
                 partition="1") == 30.0
    assert value(series, "kafka_partition_latest_offset", topic="orders", partition="0") == 130
    assert value(series, "kafka_consumergroup_member_assigned_partitions", group="g1", member_id="m-2",
                 client_id="app", host="/10.0.0.2") == 1


def test_latest_offset_is_shared_by_groups_and_takes_the_newest():
    # Two groups on the same partition, snapshotted at slightly different times: one series, the larger end
    # (g1's, although g2 comes later).
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2")],
                      [partition_row("g1", "orders", 0, 30), partition_row("g2", "orders", 0, 2, log_end_offset=125)])
    series = scrape(state, partition_metrics=True)
    latest = {k: v for k, v in series.items() if k[0] == "kafka_partition_latest_offset"}
    assert list(latest.values()) == [130]


def test_partition_level_series_are_opt_in():
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions())
    off = {name for name, _ in scrape(state)}
    on = {name for name, _ in scrape(state, partition_metrics=True)}
    families = {f.name for f in GroupscopeCollector(state, cluster="c1").collect()}
    assert not families & {s.family_name for s in METRICS if s.scope == "partition"}, "not even empty families"
    assert not off & PARTITION_METRICS
    assert PARTITION_METRICS <= on
    assert off <= on


@pytest.mark.parametrize("partition_metrics", [False, True], ids=["default", "partition_metrics"])
def test_describe_announces_exactly_the_collected_families(partition_metrics):
    state = MetricsState()
    state.apply_batch([group_row()], g1_partitions(), [event("Rebalance", causes=["member_joined"],
                                                             partitions_moved=1)])
    collector = GroupscopeCollector(state, cluster="c1", partition_metrics=partition_metrics)
    described = [m.name for m in collector.describe()]
    collected = [m.name for m in collector.collect()]
    assert described == collected
    assert all(m.samples == [] for m in collector.describe())


def test_collector_needs_a_cluster():
    with pytest.raises(ValueError, match="cluster"):
        GroupscopeCollector(MetricsState(), cluster="")


def test_counters_come_from_the_row_and_anomalies_from_events():
    state = MetricsState()
    state.apply_batch([group_row(partitions_moved=5, last_partitions_moved=1,
                                 rebalance_causes=[{"cause": "leader_changed", "rebalances": 1},
                                                   {"cause": "member_joined", "rebalances": 2}])], event_rows=[
        event("Rebalance", causes=["member_joined"], partitions_moved=4),
        event("RebalanceStorm"), event("RollingRestart"),
        event("Anomaly", group_id=""), event("Anomaly"), event("StatusChanged"), event("MemberJoined"),
    ])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_partitions_moved_total", group="g1") == 5
    assert value(s, "kafka_consumergroup_last_rebalance_partitions_moved", group="g1") == 1
    assert value(s, "kafka_consumergroup_rebalance_causes_total", group="g1", cause="member_joined") == 2
    assert value(s, "kafka_consumergroup_rebalance_causes_total", group="g1", cause="leader_changed") == 1
    # no counter is counted from events (a restarted job would start again at 0): the row carries them
    assert value(s, "kafka_consumergroup_rebalance_storms_total", group="g1") == 0
    assert value(s, "groupscope_model_anomalies_total") == 2


def test_verdict_series_come_from_the_group_row():
    """Counters and the storm gauge are the model's (checkpointed) totals, so a job restart does not reset them."""
    state = MetricsState()
    state.apply_batch([group_row(storms=3, rolling_restarts=2, scale_outs=1, scale_ins=4, storm_active=True,
                                 verdict="storm", verdict_reason="flapping")])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_storms_total", group="g1") == 3
    assert value(s, "kafka_consumergroup_rolling_restarts_total", group="g1") == 2
    assert value(s, "kafka_consumergroup_scale_outs_total", group="g1") == 1
    assert value(s, "kafka_consumergroup_scale_ins_total", group="g1") == 4
    assert value(s, "kafka_consumergroup_rebalance_storm_active", group="g1") == 1
    assert value(s, "kafka_consumergroup_rebalance_verdict", group="g1", verdict="storm") == 1
    state.apply_batch([group_row(storms=3, storm_active=False, verdict="storm_ended")])
    s = scrape(state)
    assert value(s, "kafka_consumergroup_rebalance_storm_active", group="g1") == 0
    assert value(s, "kafka_consumergroup_rebalance_verdict", group="g1", verdict="storm_ended") == 1
    assert ("kafka_consumergroup_rebalance_verdict",
            frozenset({("cluster", "c1"), ("group", "g1"), ("verdict", "storm")})) not in s


@pytest.mark.parametrize("scenario,label,groups", [
    ("d_transactions", "final-active", ["sd-txn-classic", "sd-txn-consumer"]),
    # sa-coop is left out: its commits raced the Admin API snapshot (tests/model/test_conformance.py EXC. 3).
    ("a_classic", "final-active", ["sa-static", "sa-simple", "sa-range", "sa-roundrobin"]),
    ("c_consumer_protocol", "final-active", ["sc-migrate", "sc-regex", "sc-range"]),
])
def test_lag_matches_kafkas_own_answer(scenario, label, groups):
    # End to end: real records -> model -> rows -> metrics give the lag the Admin API reported at that moment.
    replay = ScenarioReplay(scenario)
    replay.advance(label)
    b = replay.batch(extra=0)
    state = MetricsState()
    state.apply_batch(b.groups, b.partitions, b.events)
    series = scrape(state, partition_metrics=True)
    want = next(s for s in truth(scenario)["snapshots"] if s["label"] == label)["lag"]
    for gid in groups:
        assert value(series, "kafka_consumergroup_group_sum_lag", group=gid) == sum(
            p["lag"] for p in want[gid].values()), gid
        for key, p in want[gid].items():
            topic, partition = key.rsplit(":", 1)
            labels = {"group": gid, "topic": topic, "partition": partition}
            assert value(series, "kafka_consumergroup_lag", **labels) == p["lag"], (gid, key)
            assert value(series, "kafka_consumergroup_current_offset", **labels) == p["committed"], (gid, key)
            assert value(series, "kafka_partition_latest_offset", topic=topic, partition=partition) == p["log_end"]


@pytest.mark.parametrize("scenario", ["a_classic", "c_consumer_protocol", "d_transactions"])
def test_replayed_rows_are_transcribed_exactly(scenario):
    replay = ScenarioReplay(scenario, storm_prone())
    state = MetricsState()
    events: list[dict[str, Any]] = []
    for label in replay.labels():
        replay.advance(label)
        b = replay.batch()
        state.apply_batch(b.groups, b.partitions, b.events)
        events += b.events
    series = scrape(state, partition_metrics=True)
    for r in b.groups:
        gid = r["group_id"]
        assert value(series, "kafka_consumergroup_group_sum_lag", group=gid) == r["sum_lag"]
        assert value(series, "kafka_consumergroup_members", group=gid) == r["member_count"]
        assert value(series, "kafka_consumergroup_generation", group=gid) == r["generation"]
        assert value(series, "kafka_consumergroup_rebalances_total", group=gid) == r["rebalances"]
        assert value(series, "kafka_consumergroup_state", group=gid, type=r["group_type"], state=r["state"]) == 1
        # The group's sum is the sum of its partition series: two sources, one answer.
        lags = [v for (name, labels), v in series.items()
                if name == "kafka_consumergroup_lag" and ("group", gid) in labels]
        assert sum(lags) == r["sum_lag"], gid
        mine = [e for e in events if e["group_id"] == gid]
        assert value(series, "kafka_consumergroup_rebalance_storms_total", group=gid) == (r["storms"] or 0)
        assert (r["storms"] or 0) == sum(e["kind"] == "RebalanceStorm" for e in mine)
        assert value(series, "kafka_consumergroup_rebalance_partitions_moved_total", group=gid) == \
            sum(e["partitions_moved"] or 0 for e in mine if e["kind"] == "Rebalance")
    if scenario == "a_classic":
        assert value(series, "kafka_consumergroup_rebalance_storms_total", group="sa-range") >= 1, \
            "the storm-prone config must produce real storms here"


def test_data_loss_from_retention_shows_up():
    # Retention moves the low watermark past what the transactional groups committed: data loss, status ERR.
    replay = ScenarioReplay("d_transactions")
    replay.advance("final-active")
    b = replay.batch(low_at_end=True)
    state = MetricsState()
    state.apply_batch(b.groups, b.partitions, b.events)
    series = scrape(state, partition_metrics=True)
    for gid in ("sd-txn-classic", "sd-txn-consumer"):
        # every log start is moved to the end: each partition the group committed on has lost data
        committed = {(r["topic"], r["partition"]) for r in b.partitions if r["group_id"] == gid
                     and r["committed_offset"] is not None}
        assert len(committed) == 3  # sd-in:0-2
        assert value(series, "kafka_consumergroup_data_loss_partitions", group=gid) == len(committed)
        assert value(series, "kafka_consumergroup_status", group=gid) == Status.ERR.value


def test_scrapes_during_batches_see_whole_batches():
    # A batch replaces 50 groups at once; a concurrent scrape sees all of them at one generation, never a mix.
    state = MetricsState()
    state.apply_batch([group_row(f"g{i}", generation=0) for i in range(50)])
    errors: list[BaseException] = []
    done = threading.Event()

    def feed() -> None:
        try:
            for gen in range(1, 200):
                state.apply_batch([group_row(f"g{i}", generation=gen) for i in range(50)])
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, asserted below
            errors.append(exc)
        finally:
            done.set()

    t = threading.Thread(target=feed)
    t.start()
    collector = GroupscopeCollector(state, cluster="c1")
    seen = 0
    while not done.is_set() or seen == 0:
        fam = next(f for f in collector.collect() if f.name == "kafka_consumergroup_generation")
        assert len(fam.samples) == 50 and len({s.value for s in fam.samples}) == 1
        seen += 1
    t.join()
    assert not errors


def test_a_status_nobody_judged_is_absent_rather_than_ok():
    """No log end offset is known yet for ``unjudged`` (before the first heartbeat, or after a backfill): the model
    keeps it OK, but an OK on /metrics would say it was judged healthy. Its status series are absent, as ``status``
    shows ``-``; its other series stay, and a group judged OK still exports 0."""
    state = MetricsState()
    unknown = {"lag": None, "log_end_offset": None, "lag_seconds": None}
    state.apply_batch([group_row("unjudged", status="OK", sum_lag=None, max_lag=None, partition_count=1, topics=[]),
                       group_row("judged", status="OK", sum_lag=0, max_lag=0, partition_count=1, topics=[])],
                      [{**partition_row("unjudged", "orders", 0, 0), **unknown}, partition_row("judged", "orders", 0, 0)])
    series = scrape(state, partition_metrics=True)
    assert value(series, "kafka_consumergroup_status", group="unjudged") is None
    assert value(series, "kafka_consumergroup_partition_status", group="unjudged", topic="orders", partition="0") is None
    assert value(series, "kafka_consumergroup_members", group="unjudged") == 2
    assert value(series, "kafka_consumergroup_status", group="judged") == Status.OK.value
    assert value(series, "kafka_consumergroup_partition_status", group="judged", topic="orders",
                 partition="0") == Status.OK.value


def test_each_partitions_time_lag_says_how_it_was_found():
    state = MetricsState()
    partitions = [partition_row("g1", "orders", 0, 30, lag_seconds=1_860.0, lag_seconds_method="measured"),
                  partition_row("g1", "orders", 1, 10),
                  partition_row("g1", "payments", 0, 5, lag_seconds=None, lag_seconds_method=None)]
    state.apply_batch([group_row(max_lag_seconds=1_860.0, max_lag_seconds_method="measured")], partitions)
    series = scrape(state, partition_metrics=True)
    methods = {dict(labels)["partition"] + "/" + dict(labels)["topic"]: dict(labels)["method"]
               for (name, labels), value in series.items() if name == "kafka_consumergroup_lag_seconds_method"}
    assert methods == {"0/orders": "measured", "1/orders": "interpolated"}, "none without a time lag"
    seconds = {dict(labels)["partition"]: v for (name, labels), v in series.items()
               if name == "kafka_consumergroup_lag_seconds" and dict(labels)["topic"] == "orders"}
    assert seconds == {"0": 1_860.0, "1": 10.0}
    groups = {dict(labels)["method"]: v for (name, labels), v in series.items()
              if name == "kafka_consumergroup_group_max_lag_seconds_method"}
    assert groups == {"measured": 1}, "the group's largest time lag is the measured one"
