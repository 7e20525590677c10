"""The compatibility flavours: with ``metrics.compat`` on, dashboards written for Kafka Lag Exporter or
kafka_exporter find their metric names and labels (as those tools document them), with groupscope's figures, and a
name groupscope shares with a flavour is served once, carrying both label sets."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streaming.sinks.compat_catalogue import COMPAT, FLAVOURS, KAFKA_EXPORTER, KAFKA_LAG_EXPORTER, exported
from streaming.sinks.metric_catalogue import METRICS
from streaming.sinks.metrics_server import MetricsServer
from streaming.sinks.state_store import MetricsState
from tests.sinks.scrape import NOW, group_row, partition_row

Samples = dict[str, list[tuple[dict[str, str], float]]]


def _scrape(state: MetricsState, compat: tuple[str, ...]) -> Samples:
    """Every sample of one scrape with the ``compat`` flavours on, by sample name."""
    server = MetricsServer(state, cluster="c1", partition_metrics=True, process_metrics=False, clock=lambda: NOW,
                           compat=compat)
    out: Samples = {}
    for family in text_string_to_metric_families(generate_latest(server.registry).decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _state() -> MetricsState:
    """g1 (two members) on orders:0 (owned by m-1), orders:1 (owned by nobody) and payments:0; g2 on orders:0."""
    state = MetricsState()
    state.apply_batch([group_row("g1"), group_row("g2", member_count=0, members=[], is_simple=True,
                                                  topics=[{"topic": "orders", "sum_lag": 2, "max_lag": 2,
                                                           "max_lag_seconds": None}])],
                      [partition_row("g1", "orders", 0, 30, committed_offset=100, log_start_offset=40),
                       partition_row("g1", "orders", 1, 10, owner=None, committed_offset=250, log_end_offset=260,
                                     log_start_offset=7),
                       partition_row("g1", "payments", 0, 5, owner="m-2"),
                       partition_row("g2", "orders", 0, 2, owner=None, committed_offset=123, log_end_offset=125,
                                     log_start_offset=41)])
    return state


def test_the_flavours_are_kafka_lag_exporter_and_kafka_exporter():
    assert FLAVOURS == ("kafka_lag_exporter", "kafka_exporter")
    assert COMPAT == {"kafka_lag_exporter": KAFKA_LAG_EXPORTER, "kafka_exporter": KAFKA_EXPORTER}


def test_an_unknown_flavour_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown metrics.compat flavour 'burrow'; known: kafka_lag_exporter, "
                                         "kafka_exporter"):
        exported(["burrow"])


def test_without_flavours_the_catalogue_is_groupscopes_own():
    assert exported() == tuple(METRICS)


def test_a_shared_name_is_served_once_with_groupscopes_labels_first():
    both = exported(["kafka_lag_exporter", "kafka_exporter", "kafka_lag_exporter"])  # a repeat counts once
    names = [s.name for s in both]
    assert len(names) == len(set(names))
    own = {s.name: s for s in METRICS}
    flavour = {s.name for specs in COMPAT.values() for s in specs}
    # groupscope's own order first (each shared name in its place), then the flavour-only metrics
    assert names[: len(METRICS)] == [s.name for s in METRICS]
    assert set(names[len(METRICS):]) == flavour - set(own)
    for spec in both[: len(METRICS)]:
        assert spec.labels[: len(own[spec.name].labels)] == own[spec.name].labels, spec.name
        assert (spec.kind, spec.scope) == (own[spec.name].kind, own[spec.name].scope), spec.name
    shared = {s.name for s in both[: len(METRICS)] if s is not own[s.name]}
    assert shared == flavour & set(own) and shared, "some names are both groupscope's and a flavour's"


def test_kafka_lag_exporter_labels_each_partition_with_its_owner_or_unknown():
    lag = {(l["group"], l["topic"], l["partition"]): (l["member_host"], l["consumer_id"], l["client_id"], v)
           for l, v in _scrape(_state(), ("kafka_lag_exporter",))["kafka_consumergroup_group_lag"]}
    assert lag == {("g1", "orders", "0"): ("/10.0.0.1", "m-1", "app", 30),
                   ("g1", "orders", "1"): ("unknown", "unknown", "unknown", 10),
                   ("g1", "payments", "0"): ("/10.0.0.2", "m-2", "app", 5),
                   ("g2", "orders", "0"): ("unknown", "unknown", "unknown", 2)}


def test_kafka_lag_exporter_group_and_offset_figures():
    s = _scrape(_state(), ("kafka_lag_exporter",))
    (g1_max,) = [(l, v) for l, v in s["kafka_consumergroup_group_max_lag"] if l["group"] == "g1"]
    # One series with groupscope's labels and the flavour's: cluster_name is the cluster, g1 is not simple.
    assert g1_max == ({"cluster": "c1", "group": "g1", "cluster_name": "c1", "is_simple_consumer": "false"}, 30)
    simple = {l["group"]: l["is_simple_consumer"] for l, _ in s["kafka_consumergroup_group_max_lag"]}
    assert simple == {"g1": "false", "g2": "true"}
    topic_sum = {(l["group"], l["topic"]): v for l, v in s["kafka_consumergroup_group_topic_sum_lag"]}
    assert topic_sum == {("g1", "orders"): 40, ("g1", "payments"): 5, ("g2", "orders"): 2}
    # Per partition, over the groups that commit to it: the largest end and the largest log start.
    latest = {(l["topic"], l["partition"]): v for l, v in s["kafka_partition_latest_offset"]}
    earliest = {(l["topic"], l["partition"]): v for l, v in s["kafka_partition_earliest_offset"]}
    assert latest == {("orders", "0"): 130, ("orders", "1"): 260, ("payments", "0"): 105}
    assert earliest == {("orders", "0"): 41, ("orders", "1"): 7}, "payments:0 has no known log start"


def test_kafka_exporter_sums_per_topic_and_names_the_group_consumergroup():
    s = _scrape(_state(), ("kafka_exporter",))
    offset_sum = {(l["consumergroup"], l["topic"]): v for l, v in s["kafka_consumergroup_current_offset_sum"]}
    assert offset_sum == {("g1", "orders"): 100 + 250, ("g1", "payments"): 100, ("g2", "orders"): 123}
    lag_sum = {(l["consumergroup"], l["topic"]): v for l, v in s["kafka_consumergroup_lag_sum"]}
    assert lag_sum == {("g1", "orders"): 40, ("g1", "payments"): 5, ("g2", "orders"): 2}
    lag = {(l["group"], l["consumergroup"], l["topic"], l["partition"]): v for l, v in s["kafka_consumergroup_lag"]}
    assert lag[("g1", "g1", "orders", "1")] == 10 and len(lag) == 4
    members = {l["consumergroup"]: v for l, v in s["kafka_consumergroup_members"]}
    assert members == {"g1": 2, "g2": 0}
    current = {(l["topic"], l["partition"]): v for l, v in s["kafka_topic_partition_current_offset"]}
    assert current == {("orders", "0"): 130, ("orders", "1"): 260, ("payments", "0"): 105}


def test_partition_figures_of_a_flavour_need_partition_metrics():
    server = MetricsServer(_state(), cluster="c1", process_metrics=False, clock=lambda: NOW,
                           compat=("kafka_lag_exporter", "kafka_exporter"))
    names = {f.name for f in text_string_to_metric_families(generate_latest(server.registry).decode())}
    partition_scoped = {s.name for specs in COMPAT.values() for s in specs if s.scope == "partition"}
    assert not names & partition_scoped
    assert {"kafka_consumergroup_group_max_lag", "kafka_consumergroup_lag_sum"} <= names
