"""``metrics.compat``: the queries that Kafka Lag Exporter's and kafka_exporter's dashboards and their usual alert
rules run, against a real Prometheus scraping the real groupscope endpoint, return the right figures.

The endpoint is the real :class:`MetricsServer` with both flavours and partition metrics on, fed with real Kafka 4.0
captures replayed through the model (``tests.sinks.replay_rows``: classic groups with members, and transactional
groups whose records retention deleted, so log start offsets are not 0). Debian's ``prometheus`` scrapes it every
second and evaluates rules of the shape each tool's users write. Every expected figure is computed from the driver's
read model (``StateView``), not from the compat catalogue under test.

Cost: one Prometheus and one endpoint for the module, about 12 s.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from streaming.config import MetricsSettings
from streaming.sinks.compat_catalogue import COMPAT, FLAVOURS, exported
from streaming.sinks.metric_catalogue import METRICS, MetricSpec
from streaming.sinks.prometheus import MetricsServer, MetricsState
from streaming.sinks.state_store import StateView
from tests.dashboards.promtools import PrometheusProcess
from tests.sinks.replay_rows import ScenarioReplay

CLUSTER = "conformance"

# ---- facts from each tool's public documentation (README "Metrics" sections) -----------------------------------
# Kafka Lag Exporter: metric -> labels.
KLE_PARTITION = ("cluster_name", "group", "topic", "partition", "member_host", "consumer_id", "client_id")
KAFKA_LAG_EXPORTER = {
    "kafka_consumergroup_group_offset": KLE_PARTITION,
    "kafka_consumergroup_group_lag": KLE_PARTITION,
    "kafka_consumergroup_group_lag_seconds": KLE_PARTITION,
    "kafka_consumergroup_group_max_lag": ("cluster_name", "group", "is_simple_consumer"),
    "kafka_consumergroup_group_max_lag_seconds": ("cluster_name", "group", "is_simple_consumer"),
    "kafka_consumergroup_group_sum_lag": ("cluster_name", "group"),
    "kafka_consumergroup_group_topic_sum_lag": ("cluster_name", "group", "topic"),
    "kafka_partition_latest_offset": ("cluster_name", "topic", "partition"),
    "kafka_partition_earliest_offset": ("cluster_name", "topic", "partition"),
}
# kafka_exporter (danielqsj): metric -> labels; no cluster label (one exporter per cluster).
KAFKA_EXPORTER = {
    "kafka_consumergroup_current_offset": ("consumergroup", "topic", "partition"),
    "kafka_consumergroup_current_offset_sum": ("consumergroup", "topic"),
    "kafka_consumergroup_lag": ("consumergroup", "topic", "partition"),
    "kafka_consumergroup_lag_sum": ("consumergroup", "topic"),
    "kafka_consumergroup_members": ("consumergroup",),
    "kafka_topic_partition_current_offset": ("topic", "partition"),
    "kafka_topic_partition_oldest_offset": ("topic", "partition"),
}
DOCUMENTED = {"kafka_lag_exporter": KAFKA_LAG_EXPORTER, "kafka_exporter": KAFKA_EXPORTER}

# Kafka Lag Exporter's Grafana dashboard filters every query on namespace="$namespace" (a label Kubernetes
# discovery adds), cluster_name="$cluster_name" and group=~"$consumer_group"; outside Kubernetes the namespace is
# empty, and namespace="" matches series without the label, as in Prometheus.
KLE_SEL = f'namespace="",cluster_name="{CLUSTER}",group=~".*"'
# kafka_exporter's dashboards filter on instance="$instance" (the scrape target) and topic=~"$topic".

# Alert rules of the shapes each tool's users write (thresholds fit the replayed data), loaded into Prometheus.
RULES = {"groups": [{"name": "compat", "rules": [
    {"alert": "KleGroupLagHigh", "expr": f'kafka_consumergroup_group_max_lag{{cluster_name="{CLUSTER}"}} > 10'},
    {"alert": "KleLagSecondsHigh", "expr": "max by (cluster_name, group) (kafka_consumergroup_group_lag_seconds) > 5"},
    {"alert": "KafkaExporterLagHigh", "expr": "sum by (consumergroup) (kafka_consumergroup_lag) > 20"},
    {"alert": "KafkaExporterNoMembers", "expr": "kafka_consumergroup_members == 0"},
]}]}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[MetricsServer, StateView]]:
    state = MetricsState()
    for scenario, low_at_end in (("a_classic", False), ("d_transactions", True)):
        replay = ScenarioReplay(scenario)
        replay.advance("final-active")  # members still in the groups: the member labels have values
        b = replay.batch(low_at_end=low_at_end)
        state.apply_batch(b.groups, b.partitions, b.events)
    server = MetricsServer(state, cluster=CLUSTER, host="127.0.0.1", port=0, partition_metrics=True,
                           process_metrics=False, compat=list(FLAVOURS)).start()
    try:
        yield server, state.view()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def prom(endpoint, tmp_path_factory) -> Iterator[PrometheusProcess]:
    rules = tmp_path_factory.mktemp("compat") / "compat.rules.yml"
    rules.write_text(yaml.safe_dump(RULES))
    p = PrometheusProcess([f"127.0.0.1:{endpoint[0].port}"], [rules], job="compat").start()
    try:
        p.wait_for_scrapes(3)
        yield p
    finally:
        p.stop()


def _by(result: list[dict], *labels: str) -> dict[tuple[str, ...], float]:
    out = {}
    for r in result:
        key = tuple(r["metric"].get(label, "") for label in labels)
        assert key not in out, f"two series for {key}: {result}"
        out[key] = float(r["value"][1])
    return out


def _close(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert math.isclose(got[k], v, rel_tol=1e-9, abs_tol=1e-6), (k, got[k], v)


def _partitions(view: StateView):
    for gid in sorted(view.groups):
        for topic, n, p in view.group_partitions(gid):
            yield gid, topic, n, p


def test_every_documented_metric_has_exactly_its_labels_plus_groupscopes(prom):
    own = {s.name: s.labels for s in METRICS}
    for flavour, metrics in DOCUMENTED.items():
        for name, labels in metrics.items():
            series = prom.api("series", **{"match[]": name})
            assert series, f"{flavour}: {name} not served"
            expected = set(labels) | {"cluster"} | set(own.get(name, ()))
            for s in series:
                assert set(s) - {"__name__", "job", "instance"} == expected, (name, s)


def test_kafka_lag_exporter_dashboard_queries(prom, endpoint):
    _, view = endpoint
    groups = {g: v for g, v in view.groups.items()}
    _close(_by(prom.query(f"kafka_consumergroup_group_max_lag_seconds{{{KLE_SEL}}}"), "group"),
           {(g,): v.max_lag_seconds for g, v in groups.items() if v.max_lag_seconds is not None})
    _close(_by(prom.query(f"kafka_consumergroup_group_max_lag{{{KLE_SEL}}}"), "group"),
           {(g,): v.max_lag for g, v in groups.items() if v.max_lag is not None})
    _close(_by(prom.query(f"kafka_consumergroup_group_lag_seconds{{{KLE_SEL}}}"), "group", "topic", "partition"),
           {(g, t, str(n)): p.lag_seconds for g, t, n, p in _partitions(view) if p.lag_seconds is not None})
    lag_s: dict[tuple[str], float] = {}
    for g, _, _, p in _partitions(view):
        if p.lag_seconds is not None:
            lag_s[(g,)] = max(lag_s.get((g,), -1.0), p.lag_seconds)
    _close(_by(prom.query(f"max(kafka_consumergroup_group_lag_seconds{{{KLE_SEL}}}) by (group)"), "group"), lag_s)
    # The per-group row: committed offsets summed, and the latest offsets of the same partitions (one-to-one match on
    # namespace, cluster_name, topic and partition).
    for gid in ("sa-range", "sa-simple"):
        sel = f'namespace="",cluster_name="{CLUSTER}",group=~"{gid}"'
        parts = [(t, n, p) for g, t, n, p in _partitions(view) if g == gid]
        assert float(prom.query(f"sum(kafka_consumergroup_group_offset{{{sel}}})")[0]["value"][1]) == \
            sum(p.committed_offset for _, _, p in parts)
        latest = view.topic_end_offsets()
        q = (f"sum((kafka_consumergroup_group_offset{{{sel}}} * 0) + on(namespace,cluster_name,topic,partition) "
             f'kafka_partition_latest_offset{{namespace="",cluster_name="{CLUSTER}"}})')
        assert float(prom.query(q)[0]["value"][1]) == sum(latest[t][n] for t, n, _ in parts)
    _close(_by(prom.query(f'kafka_consumergroup_group_topic_sum_lag{{cluster_name="{CLUSTER}"}}'), "group", "topic"),
           {(g, t.topic): t.sum_lag for g, v in groups.items() for t in v.topics if t.sum_lag is not None})


def test_kafka_lag_exporter_member_labels_and_offsets(prom, endpoint):
    _, view = endpoint
    result = prom.query(f'kafka_consumergroup_group_lag{{cluster_name="{CLUSTER}",group="sa-range"}}')
    members = view.groups["sa-range"].members_by_id()
    owners = {(t, str(n)): p.owner for g, t, n, p in _partitions(view) if g == "sa-range"}
    assert owners and all(owners.values()), "the capture's sa-range has every partition assigned"
    for r in result:
        m = r["metric"]
        member = members[owners[(m["topic"], m["partition"])]]
        assert (m["consumer_id"], m["client_id"], m["member_host"]) == (member.member_id, member.client_id,
                                                                        member.host)
    # a group without members (sa-simple only commits): "unknown", as Kafka Lag Exporter writes then
    simple = prom.query(f'kafka_consumergroup_group_lag{{cluster_name="{CLUSTER}",group="sa-simple"}}')
    assert simple and {(r["metric"]["consumer_id"], r["metric"]["client_id"], r["metric"]["member_host"])
                       for r in simple} == {("unknown", "unknown", "unknown")}
    earliest = _by(prom.query(f'kafka_partition_earliest_offset{{cluster_name="{CLUSTER}"}}'), "topic", "partition")
    assert any(v > 0 for v in earliest.values()), "retention moved some log starts in the replayed batch"
    starts: dict[tuple[str, str], float] = {}
    for _, t, n, p in _partitions(view):
        if p.log_start_offset is not None:
            starts[(t, str(n))] = max(starts.get((t, str(n)), -1), p.log_start_offset)
    _close(earliest, starts)


def test_kafka_exporter_dashboard_queries(prom, endpoint):
    server, view = endpoint
    sel = f'instance="127.0.0.1:{server.port}",topic=~".*"'
    ends = view.topic_end_offsets()
    _close(_by(prom.query(f"sum(kafka_topic_partition_current_offset{{{sel}}}) by (topic)"), "topic"),
           {(t,): sum(v for v in parts.values() if v >= 0) for t, parts in ends.items()})
    lag: dict[tuple[str, str], float] = {}
    committed: dict[tuple[str, str], float] = {}
    for g, t, _, p in _partitions(view):
        if p.lag is not None:
            lag[(g, t)] = lag.get((g, t), 0) + p.lag
        committed[(g, t)] = committed.get((g, t), 0) + p.committed_offset
    _close(_by(prom.query(f"sum(kafka_consumergroup_lag{{{sel}}}) by (consumergroup, topic)"), "consumergroup",
               "topic"), lag)
    _close(_by(prom.query("kafka_consumergroup_lag_sum"), "consumergroup", "topic"), lag)
    _close(_by(prom.query(f"sum(kafka_consumergroup_current_offset{{{sel}}}) by (consumergroup, topic)"),
               "consumergroup", "topic"), committed)
    _close(_by(prom.query("kafka_consumergroup_current_offset_sum"), "consumergroup", "topic"), committed)
    _close(_by(prom.query("kafka_consumergroup_members"), "consumergroup"),
           {(g,): v.member_count for g, v in view.groups.items()})


def test_groupscope_own_queries_see_one_series_per_figure(prom, endpoint):
    # The names both use carry both label sets in one series: groupscope's own queries are unchanged and no sum
    # counts a figure twice.
    _, view = endpoint
    _close(_by(prom.query(f'kafka_consumergroup_group_sum_lag{{cluster="{CLUSTER}"}}'), "group"),
           {(g,): v.sum_lag for g, v in view.groups.items() if v.sum_lag is not None})
    _close(_by(prom.query(f'kafka_consumergroup_members{{cluster="{CLUSTER}"}}'), "group"),
           {(g,): v.member_count for g, v in view.groups.items()})
    assert float(prom.query("sum(kafka_consumergroup_lag)")[0]["value"][1]) == \
        sum(p.lag for *_, p in _partitions(view) if p.lag is not None)


def test_usual_alert_rules_fire_for_the_right_groups(prom, endpoint):
    _, view = endpoint
    prom.wait_for_scrapes(2)  # rules evaluated on scraped data
    firing = {}
    for r in prom.query('ALERTS{alertstate="firing"}'):
        m = r["metric"]
        firing.setdefault(m["alertname"], set()).add(m.get("group") or m.get("consumergroup"))
    lag_by_group: dict[str, int] = {}
    lag_s_by_group: dict[str, float] = {}
    for g, _, _, p in _partitions(view):
        lag_by_group[g] = lag_by_group.get(g, 0) + (p.lag or 0)
        if p.lag_seconds is not None:
            lag_s_by_group[g] = max(lag_s_by_group.get(g, 0.0), p.lag_seconds)
    want = {
        "KleGroupLagHigh": {g for g, v in view.groups.items() if (v.max_lag or 0) > 10},
        "KleLagSecondsHigh": {g for g, s in lag_s_by_group.items() if s > 5},
        "KafkaExporterLagHigh": {g for g, n in lag_by_group.items() if n > 20},
        "KafkaExporterNoMembers": {g for g, v in view.groups.items() if v.member_count == 0},
    }
    assert all(want.values()), f"the replayed data must make every rule fire for some group: {want}"
    assert {k: v for k, v in firing.items() if k in want} == want


# ---- without Prometheus --------------------------------------------------------------------------------------

def test_flavours_are_the_documented_sets_and_the_setting_names_them():
    own = {s.name: s.labels for s in METRICS}
    for flavour, specs in COMPAT.items():
        assert {s.name for s in specs} == set(DOCUMENTED[flavour]), flavour
        for s in specs:
            assert set(s.labels) == set(DOCUMENTED[flavour][s.name]) | {"cluster"} | set(own.get(s.name, ())), s.name
            assert s.kind == "gauge"
    assert tuple(MetricsSettings.model_fields["compat"].annotation.__args__[0].__args__) == FLAVOURS


def test_off_by_default_and_a_spec_that_drops_groupscopes_labels_is_refused(monkeypatch):
    assert exported() == METRICS
    names = {s.name for s in exported(["kafka_exporter"])}
    assert "kafka_consumergroup_lag_sum" in names and "kafka_consumergroup_group_lag" not in names
    bad = MetricSpec("kafka_consumergroup_members", "gauge", "group", ("consumergroup",), "x")
    monkeypatch.setitem(COMPAT, "kafka_exporter", (bad,))
    with pytest.raises(ValueError, match="would lose groupscope's labels"):
        exported(["kafka_exporter"])
    with pytest.raises(ValueError, match="unknown metrics.compat flavour"):
        exported(["burrow"])


def test_the_compatibility_page_lists_every_metric_with_its_labels():
    page = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text(encoding="utf-8")
    for flavour, metrics in DOCUMENTED.items():
        for name, labels in metrics.items():
            row = next((line for line in page.splitlines() if line.startswith(f"| `{name}` |")), None)
            assert row is not None, f"{name} has no row in docs/compatibility.md"
            cell = row.split("|")[2]
            assert cell.strip() == "same" or {x.strip(" `") for x in cell.split(",")} == set(labels), (name, cell)
