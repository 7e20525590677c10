"""Every dashboard query against a real Prometheus scraping a real groupscope metrics endpoint.

Debian's ``prometheus`` runs on 127.0.0.1 with a temporary config and data directory, scrapes the endpoint of
``metrics_source`` every second and evaluates the alert rules. Two sources: the running ``groupscope run`` job fed
by the workload simulator through a real Kafka-protocol broker (``live_job``), and the real Kafka 4.0 captures
replayed into the real endpoint (``feed``). Then every panel's query and every variable query
of both dashboards, with template variables substituted as Grafana would, goes through ``/api/v1/query`` and must
succeed and return data; legend templates must name labels the results carry; every alert rule must evaluate
without error on the real series.

The overview is queried with all groups selected and every query must return data. The drill-down is queried for
every group its own ``group`` variable lists, and every query must return data for at least one of them: some
series exist only for some groups (a KIP-848 assignment epoch, members of a group that has any).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import yaml

from tests.dashboards.feed import MetricsSource, ReplayedMetrics
from tests.dashboards.live_job import LiveJobMetrics
from tests.dashboards.grafana import (
    REPO,
    annotations,
    dashboards,
    interpolate,
    label_values_query,
    targets,
    variables,
)
from tests.dashboards.promtools import PrometheusProcess


SOURCES = {"live-job": LiveJobMetrics, "replayed-captures": ReplayedMetrics}


@pytest.fixture(scope="module", params=list(SOURCES))
def metrics_source(request) -> Iterator[MetricsSource]:
    """The groupscope endpoint under test: the running job fed by the simulator, then the real Kafka 4.0 captures
    replayed into the real endpoint (real groups' data, including retention overtaking committed offsets)."""
    source = SOURCES[request.param]()
    try:
        yield source.start()
    finally:
        source.stop()


@pytest.fixture(scope="module")
def prometheus(metrics_source: MetricsSource) -> Iterator[PrometheusProcess]:
    prom = PrometheusProcess([metrics_source.target], [REPO / "alerts" / "groupscope.rules.yml"]).start()
    try:
        metrics_source.fill(prom)
        yield prom
    finally:
        prom.stop()


def _label_values(prom: PrometheusProcess, query: str, values: dict, alls: dict) -> list[str]:
    selector, label = label_values_query(query)
    series = prom.api("series", **{"match[]": interpolate(selector, values, alls)})
    return sorted({s[label] for s in series if label in s})


def _resolve(prom: PrometheusProcess, model: dict, overrides: dict) -> dict:
    """Variable values the way Grafana picks them: each query variable's first value, unless overridden."""
    values: dict = {}
    alls = {n: v.get("allValue", "") for n, v in variables(model).items()}
    for name, var in variables(model).items():
        if var["type"] != "query":
            continue
        options = _label_values(prom, var["query"], values, alls)
        assert options, f"variable {name} ({var['query']}) lists nothing"
        values[name] = overrides.get(name, [options[0]] if var.get("multi") else options[0])
        if name in overrides and overrides[name] != ["$__all"]:
            assert overrides[name] in options, (name, overrides[name], options)
    return values


def _check_legend(legend: str, result: list[dict], where: str) -> None:
    for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
        assert all(label in s["metric"] for s in result), f"{where}: legend uses {{{{{label}}}}}, not in the result"


def test_scrape_is_healthy(prometheus, metrics_source):
    (target,) = prometheus.api("targets")["activeTargets"]
    assert target["health"] == "up" and target["lastError"] == "", target


def test_overview_queries_all_return_data(prometheus, metrics_source):
    model = dashboards()["groupscope-overview.json"]
    alls = {n: v.get("allValue", "") for n, v in variables(model).items()}
    values = _resolve(prometheus, model, {"cluster": metrics_source.cluster, "group": ["$__all"]})
    empty = []
    for t in targets("groupscope-overview.json", model):
        result = prometheus.query(interpolate(t.expr, values, alls))
        if not result:
            empty.append(f"{t.panel_title} {t.ref_id}: {t.expr}")
        _check_legend(t.legend, result, f"{t.panel_title} {t.ref_id}")
    assert not empty, "queries without data:\n" + "\n".join(empty)


def test_group_drill_down_queries_return_data(prometheus, metrics_source):
    model = dashboards()["groupscope-group.json"]
    alls = {n: v.get("allValue", "") for n, v in variables(model).items()}
    base = _resolve(prometheus, model, {"cluster": metrics_source.cluster})
    groups = _label_values(prometheus, variables(model)["group"]["query"], base, alls)
    assert len(groups) >= 5, groups
    answered: dict[str, set[str]] = {}
    exprs = [(f"{t.panel_title} {t.ref_id}", t.expr, t.legend) for t in targets("groupscope-group.json", model)]
    exprs += [(f"annotation {a['name']}", a["expr"], "") for a in annotations(model)]
    for group in groups:
        values = _resolve(prometheus, model, {"cluster": metrics_source.cluster, "group": group,
                                              "topic": ["$__all"]})
        for where, expr, legend in exprs:
            result = prometheus.query(interpolate(expr, values, alls))
            _check_legend(legend, result, f"{where} ({group})")
            if result:
                answered.setdefault(where, set()).add(group)
    missing = [where for where, _, _ in exprs if where not in answered]
    assert not missing, f"no data for any of {groups}: {missing}"
    # The common panels answer for every group, not just one.
    for where in ("State A", "Status A", "Members A", "Offset lag per topic A", "Generation / epoch timeline A"):
        assert answered[where] == set(groups), (where, set(groups) - answered[where])


def test_topic_variable_narrows_the_drill_down(prometheus, metrics_source):
    model = dashboards()["groupscope-group.json"]
    alls = {n: v.get("allValue", "") for n, v in variables(model).items()}
    values = _resolve(prometheus, model, {"cluster": metrics_source.cluster, "group": metrics_source.two_topic_group})
    topics = _label_values(prometheus, variables(model)["topic"]["query"], values, alls)
    first, second = metrics_source.two_topics
    assert topics == [first, second]
    expr = next(t.expr for t in targets("groupscope-group.json", model) if t.panel_title == "Offset lag per partition")
    only = prometheus.query(interpolate(expr, dict(values, topic=[first]), alls))
    both = prometheus.query(interpolate(expr, dict(values, topic=[first, second]), alls))
    assert only and {s["metric"]["topic"] for s in only} == {first}
    assert {s["metric"]["topic"] for s in both} == {first, second}


def test_alert_rules_evaluate_on_real_series(prometheus, metrics_source):
    deadline = time.monotonic() + 20
    while True:
        groups = prometheus.api("rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        pending = [r["name"] for r in rules if r.get("lastEvaluation", "").startswith("0001-")]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    rules_file = yaml.safe_load((REPO / "alerts" / "groupscope.rules.yml").read_text())
    expected = sum(len(g["rules"]) for g in rules_file["groups"])
    assert len(rules) == expected and not pending, pending
    broken = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
    assert not broken, broken
    for alertname, groups in metrics_source.expected_alerts.items():
        firing = {a["labels"].get("group") for a in prometheus.api("alerts")["alerts"]
                  if a["labels"]["alertname"] == alertname and a["state"] == "firing"}
        assert firing == groups, (alertname, firing, groups)
