"""``METRICS``, the catalogue: names follow Prometheus' conventions (a counter ends in ``_total``), each name is
written once in the code, and what a scrape exposes (family names, help, types) is what the catalogue declares."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from streaming.sinks.metric_catalogue import METRICS
from streaming.sinks.metrics_server import MetricsServer
from tests.sinks.scrape import full_state


def test_catalogue_names_follow_conventions():
    for spec in METRICS:
        assert spec.name.startswith(("kafka_consumergroup_", "kafka_partition_", "groupscope_")), spec.name
        assert spec.name.endswith("_total") == (spec.kind == "counter"), spec.name
        assert spec.labels[0] == "cluster", spec.name
    assert len({s.name for s in METRICS}) == len(METRICS)


def test_each_metric_name_is_written_once_in_the_code():
    """The catalogue is the one place a metric's name is written: the collector walks it, so a renamed metric cannot
    leave an exporter behind that still writes the old name."""
    from pathlib import Path

    from streaming.sinks.compat_catalogue import COMPAT

    root = Path(__file__).resolve().parents[2] / "streaming"
    texts = {str(p.relative_to(root.parent)): p.read_text() for p in root.rglob("*.py")}
    # A name another exporter also uses is written once more where that exporter's flavour is declared: the other
    # tool fixed it, and the flavour's spec replaces groupscope's when on (compat_catalogue.py).
    flavoured = {s.name for specs in COMPAT.values() for s in specs}
    for spec in METRICS:
        where = {path: text.count(f'"{spec.name}"') for path, text in texts.items() if f'"{spec.name}"' in text}
        expected = {"streaming/sinks/metric_catalogue.py": 1}
        if spec.name in flavoured:
            expected["streaming/sinks/compat_catalogue.py"] = 1
        assert where == expected, (spec.name, where)


def test_text_and_openmetrics_parse_back():
    server = MetricsServer(full_state(), cluster="c1", partition_metrics=True, process_metrics=False)
    text = list(text_string_to_metric_families(generate_latest(server.registry).decode()))
    om = list(parse_openmetrics(generate_openmetrics(server.registry).decode()))
    assert {f.name for f in text} == {s.family_name for s in METRICS}
    assert {f.name for f in om} == {s.family_name for s in METRICS}
    helps = {f.name: f.documentation for f in text}
    assert "0=OK, 1=WARN, 2=STALL, 3=STOP, 4=REWIND, 5=ERR" in helps["kafka_consumergroup_status"]
    types = {f.name: f.type for f in text}
    assert all(types[s.family_name] == s.kind for s in METRICS)
