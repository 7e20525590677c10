"""The Grafana dashboards, statically: generated from ``dashboards/build.py``, valid against the dashboard schema
(grafana-foundation-sdk's typed models), well laid out, every variable and query well-formed (PromQL parsed by
``promtool``), and built only from series the Prometheus sink exports.

Grafana cannot be installed here; ``test_dashboards_live.py`` runs every query against a real Prometheus.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from streaming.sinks.prometheus import METRICS
from tests.dashboards.grafana import (
    BUILTINS,
    DASHBOARD_DIR,
    annotations,
    build_module,
    dashboards,
    interpolate,
    label_values_query,
    metric_names,
    referenced,
    targets,
    variables,
)
from tests.dashboards.promtools import require, run

if sys.version_info < (3, 11):  # pragma: no cover - CI runs 3.11
    pytest.skip("grafana-foundation-sdk needs Python 3.11+", allow_module_level=True)

NAMES = ["groupscope-overview.json", "groupscope-group.json"]
SPEC = {s.name: s for s in METRICS}
OPT_IN = "partition_metrics"


@pytest.fixture(scope="module")
def models() -> dict:
    return dashboards()


def test_the_dashboards_are_there(models):
    assert sorted(models) == sorted(NAMES)


def test_json_is_what_build_py_builds():
    # The JSON is generated: a hand edit (or a generator change without regenerating) fails here.
    build = build_module()
    for path, text in build.rendered():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run python dashboards/build.py"
    assert build.main(["--check"]) == 0


@pytest.mark.parametrize("name", NAMES)
def test_json_is_valid_against_the_dashboard_schema(models, name):
    # Decoding into the SDK's typed models (panels and queries through their plugins' schemas) and encoding
    # again drops any key the schema does not know: the canonical form equals the file only if all is known.
    canonical = build_module().canonical(models[name])
    assert canonical == models[name]


def _first_timeseries(model: dict) -> dict:
    return next(p for p in model["panels"] if p["type"] == "timeseries")


# Misspelled keys at each level of the model: the schema check above must catch every one.
MUTATIONS = {
    "panel": lambda m: _first_timeseries(m).__setitem__("gridpos", {}),
    "query": lambda m: _first_timeseries(m)["targets"][0].__setitem__("exprr", "up"),
    "panel options": lambda m: _first_timeseries(m)["options"].__setitem__("legnd", {}),
    "field config": lambda m: _first_timeseries(m)["fieldConfig"]["defaults"]["custom"].__setitem__("drawStyl", 1),
    "variable": lambda m: m["templating"]["list"][1].__setitem__("refesh", 1),
}


@pytest.mark.parametrize("where", list(MUTATIONS))
def test_schema_check_catches_unknown_fields(where):
    model = dashboards()["groupscope-group.json"]
    MUTATIONS[where](model)
    assert build_module().canonical(model) != model


@pytest.mark.parametrize("name", NAMES)
def test_dashboard_fields(models, name):
    m = models[name]
    assert m["schemaVersion"] >= 39  # Grafana 11
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", m["uid"])
    assert m["title"] and m["description"]
    assert m["time"] == {"from": "now-3h", "to": "now"} and m["refresh"]
    assert "groupscope" in m["tags"]
    assert m.get("id") is None, "provisioned dashboards must not carry a database id"


def test_uids_and_titles_are_unique(models):
    assert len({m["uid"] for m in models.values()}) == len(models)
    assert len({m["title"] for m in models.values()}) == len(models)


@pytest.mark.parametrize("name", NAMES)
def test_layout(models, name):
    occupied: dict[tuple[int, int], int] = {}
    ids = []
    for p in models[name]["panels"]:
        g = p["gridPos"]
        ids.append(p["id"])
        assert all(isinstance(g[k], int) for k in "xywh"), p["title"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] == "row":
            assert (g["x"], g["w"], g["h"]) == (0, 24, 1) and p["panels"] == []
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in occupied, f"panel {p['id']} overlaps panel {occupied[(x, y)]}"
                occupied[(x, y)] = p["id"]
    assert all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == len(ids)
    assert models[name]["panels"][0]["type"] == "row", "panels start under a row"


@pytest.mark.parametrize("name", NAMES)
def test_panels_query_prometheus_through_the_datasource_variable(models, name):
    for p in models[name]["panels"]:
        if p["type"] == "row":
            continue
        assert p["title"] and p.get("description"), p["id"]
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs and len(set(refs)) == len(refs) and all(re.fullmatch(r"[A-Z]", r) for r in refs), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == p["datasource"] and t["expr"].strip(), (p["title"], t["refId"])
            assert t.get("instant") != t.get("range"), (p["title"], t["refId"])
        if p["type"] == "table":
            assert all(t["format"] == "table" and t["instant"] for t in p["targets"]), p["title"]
            assert [x["id"] for x in p["transformations"]] == ["merge", "organize"], p["title"]


@pytest.mark.parametrize("name", NAMES)
def test_variables(models, name):
    m = models[name]
    vs = variables(m)
    assert list(vs)[:2] == ["datasource", "cluster"] and "group" in vs
    if name == "groupscope-group.json":
        assert "topic" in vs and not vs["group"]["multi"] and vs["topic"]["includeAll"]
    else:
        assert vs["group"]["multi"] and vs["group"]["includeAll"]
    assert vs["datasource"]["type"] == "datasource" and vs["datasource"]["query"] == "prometheus"
    seen = {"datasource"}
    for v in list(vs.values())[1:]:
        assert v["type"] == "query" and v["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        selector, label = label_values_query(v["query"])
        assert selector and label == v["name"], v["name"]
        assert referenced(v["query"]) <= seen, f"{v['name']} refers to a variable defined after it"
        assert metric_names(selector) <= set(SPEC), v["name"]
        if v.get("includeAll"):
            assert v["allValue"] == ".*", "All must match every value, including ones not listed yet"
        seen.add(v["name"])
    # Every variable is used by some query, and every query variable is defined.
    used = set().union(*(referenced(t.expr) for t in targets(name, m)),
                       *(referenced(a["expr"]) for a in annotations(m)),
                       *(referenced(v["query"]) for v in vs.values() if v["type"] == "query"))
    assert used - set(BUILTINS) <= set(vs), used - set(vs)
    assert set(vs) - {"datasource"} <= used


@pytest.mark.parametrize("name", NAMES)
def test_queries_use_only_exported_series(models, name):
    for t in targets(name, models[name]):
        names = metric_names(t.expr)
        assert names, (t.panel_title, t.expr)
        assert names <= set(SPEC), (t.panel_title, names - set(SPEC))
        if any(SPEC[n].scope == "partition" for n in names):
            assert OPT_IN in t.description, f"{t.panel_title}: say that it needs partition_metrics"
        if any(SPEC[n].kind == "counter" for n in names):
            assert re.search(r"\b(rate|increase)\(", t.expr), f"{t.panel_title}: a raw counter is not a graph"


def test_every_exported_series_is_on_a_dashboard(models):
    used = set().union(*(metric_names(expr) for _, expr in _all_queries(models)))
    missing = {s.name for s in METRICS} - used - {
        # Shown through another series: the data-age panels, the Groups stat, the hung-transaction alert.
        "groupscope_last_batch_timestamp_seconds", "groupscope_last_heartbeat_timestamp_seconds",
        "groupscope_groups", "groupscope_offsets_topic_last_stable_offset",
    }
    assert not missing, missing


def test_overview_links_to_the_drill_down(models):
    overview, group = models["groupscope-overview.json"], models["groupscope-group.json"]
    table = next(p for p in overview["panels"] if p["title"] == "Groups" and p["type"] == "table")
    links = [prop["value"] for o in table["fieldConfig"]["overrides"] if o["matcher"]["options"] == "group"
             for prop in o["properties"] if prop["id"] == "links"]
    url = links[0][0]["url"]
    assert url.startswith(f"/d/{group['uid']}/")
    assert {k[len("var-"):] for k in re.findall(r"(var-\w+)=", url)} <= set(variables(group))


def _all_queries(models) -> list[tuple[str, str]]:
    """Every PromQL expression of the dashboards (panels, annotations, variable selectors), interpolated."""
    values = {"cluster": "c1", "group": ["$__all"], "topic": ["$__all"]}
    out = []
    for name, m in models.items():
        alls = {n: v.get("allValue", "") for n, v in variables(m).items()}
        one = dict(values, group="g1") if name == "groupscope-group.json" else values
        out += [(f"{name} {t.panel_title} {t.ref_id}", interpolate(t.expr, one, alls)) for t in targets(name, m)]
        out += [(f"{name} annotation {a['name']}", interpolate(a["expr"], one, alls)) for a in annotations(m)]
        for v in variables(m).values():
            if v["type"] == "query":
                selector, _ = label_values_query(v["query"])
                out.append((f"{name} variable {v['name']}", interpolate(selector, one, alls)))
    return out


def test_every_query_parses(models, tmp_path: Path):
    # promtool parses every expression of a rules file: turn each query into a recording rule.
    promtool = require("promtool")
    queries = _all_queries(models)
    rules = {"groups": [{"name": "dashboards", "rules": [{"record": f"dashboard:query_{i}", "expr": expr}
                                                         for i, (_, expr) in enumerate(queries)]}]}
    path = tmp_path / "queries.rules.yml"
    path.write_text(json.dumps(rules))
    out = run([promtool, "check", "rules", str(path)])
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"{len(queries)} rules found" in out.stdout


def test_query_check_can_fail(tmp_path: Path):
    promtool = require("promtool")
    path = tmp_path / "bad.rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "x", "rules": [
        {"record": "x:y", "expr": 'sum by (group) (rate(kafka_consumergroup_lag{cluster="c1"}[1m])'}]}]}))
    out = run([promtool, "check", "rules", str(path)])
    assert out.returncode != 0


def test_provisioning_points_at_the_dashboards():
    import yaml

    provider = yaml.safe_load((DASHBOARD_DIR / "provisioning" / "dashboards" / "groupscope.yaml").read_text())
    (p,) = provider["providers"]
    assert p["type"] == "file" and p["options"]["path"] == "/var/lib/grafana/dashboards/groupscope"
    datasource = yaml.safe_load((DASHBOARD_DIR / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    (ds,) = datasource["datasources"]
    assert ds["type"] == "prometheus" and ds["url"] == "$GROUPSCOPE_PROMETHEUS_URL" and ds["isDefault"]
