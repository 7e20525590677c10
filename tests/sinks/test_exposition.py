"""``MetricWriter`` writes what prometheus_client's own ``generate_latest`` writes, byte for byte, in both formats:
the library is the reference, and every case below is rendered by both from the same samples.

The cases are the ones a hand-written writer gets wrong: labels the catalogue lists out of name order, label values
that need escaping (backslash, newline, double quote) and non-ASCII ones, zero and minus zero, infinities, NaN,
values Go prints with an exponent, booleans, unknown values (left out), help text with backslashes and quotes, and
counters (named ``x_total`` in 0.0.4 headers, ``x`` in OpenMetrics ones).
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from streaming.sinks.exposition import OPENMETRICS, TEXT, MetricWriter, escape_label_value, label_blocks
from streaming.sinks.metric_catalogue import METRICS, MetricSpec, PerGroup, PerPartition

SAMPLES = [
    (["c1", "plain", "orders", "0"], 0),
    (["c1", "minus-zero", "orders", "1"], -0.0),
    (["c1", 'quote"d', "orders", "2"], 1),
    (["c1", "back\\slash", "orders", "3"], True),
    (["c1", "new\nline", "orders", "4"], False),
    (["c1", "gruppe-ä-漢", "orders", "5"], 12.5),
    (["c1", "big", "orders", "6"], 1_795_310_990.5),
    (["c1", "bigger", "orders", "7"], 123_456_789_012_345),
    (["c1", "inf", "orders", "8"], math.inf),
    (["c1", "minus-inf", "orders", "9"], -math.inf),
    (["c1", "nan", "orders", "10"], math.nan),
    (["c1", "unknown", "orders", "11"], None),
    (["c1", "negative", "orders", "12"], -3),
    (["c1", "tiny", "orders", "13"], 1e-7),
    (["c1", "plain", "orders", "14"], 0),  # a repeated value and a repeated label value
]
LABELS = ("cluster", "group", "topic", "partition")  # not in name order, as the catalogue's partition metrics
HELP = 'Lag of "one" partition \\ in records;\nsecond line.'


def _spec(kind: str, name: str) -> MetricSpec:
    return MetricSpec(name, kind, "partition", LABELS, HELP, lambda s: SAMPLES)


def _library(spec: MetricSpec, latest) -> str:
    """The library's rendering of the same samples."""
    family = (CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily)(
        spec.family_name, spec.help, labels=list(spec.labels))
    for labels, value in SAMPLES:
        if value is not None:
            family.add_metric(list(labels), float(value))

    class One:
        def collect(self):
            yield family

    registry = CollectorRegistry()
    registry.register(One())
    text = latest(registry).decode()
    return text.removesuffix("# EOF\n")


@pytest.mark.parametrize("fmt, latest", [(TEXT, generate_latest), (OPENMETRICS, openmetrics_latest)],
                         ids=["0.0.4", "openmetrics"])
@pytest.mark.parametrize("kind, name", [("gauge", "x_lag"), ("counter", "x_moves_total")])
def test_a_metric_is_written_as_the_library_writes_it(fmt, latest, kind, name):
    spec = _spec(kind, name)
    writer = MetricWriter(spec)
    assert writer.header(fmt) + writer.lines(spec.samples(None)) == _library(spec, latest)


@pytest.mark.parametrize("fmt, latest", [(TEXT, generate_latest), (OPENMETRICS, openmetrics_latest)],
                         ids=["0.0.4", "openmetrics"])
def test_every_catalogue_header_is_the_librarys(fmt, latest):
    """Each metric's HELP and TYPE lines, the catalogue's own texts (a metric without samples still has them)."""
    for spec in METRICS:
        family = (CounterMetricFamily if spec.kind == "counter" else GaugeMetricFamily)(
            spec.family_name, spec.help, labels=list(spec.labels))

        class One:
            def collect(self):
                yield family

        registry = CollectorRegistry()
        registry.register(One())
        assert MetricWriter(spec).header(fmt) == latest(registry).decode().removesuffix("# EOF\n"), spec.name


def test_labels_are_written_in_name_order_whatever_the_catalogue_order():
    spec = MetricSpec("x", "gauge", "partition", ("zeta", "alpha"), "h", lambda s: [(["z", "a"], 1)])
    assert MetricWriter(spec).lines(spec.samples(None)) == 'x{alpha="a",zeta="z"} 1.0\n'


def test_a_metric_without_labels_has_no_braces():
    spec = MetricSpec("x", "gauge", "monitor", (), "h", lambda s: [([], 2)])
    assert MetricWriter(spec).lines(spec.samples(None)) == "x 2.0\n"


@pytest.mark.parametrize("raw, escaped", [
    ("plain", "plain"), ('a"b', 'a\\"b'), ("a\\b", "a\\\\b"), ("a\nb", "a\\nb"), ('\\"\n', '\\\\\\"\\n'),
    ("ä-漢", "ä-漢"), ("", ""),
])
def test_label_values_escape_backslash_newline_and_quote(raw, escaped):
    assert escape_label_value(raw) == escaped


@pytest.mark.parametrize("kind", [PerGroup, PerPartition])
def test_a_keyed_metric_written_from_label_blocks_is_what_lines_writes(kind):
    """The page writes one-value-per-group and per-partition metrics from each group's (partition's) label block,
    laid out once: the same lines, escaping, label order, zeros, unknowns and all, as the general writer's."""
    labels = [row[:len(kind.labels)] for row, _ in SAMPLES]
    values = [value for _, value in SAMPLES]  # the item a value is read from is the value itself here
    spec = MetricSpec("kafka_consumergroup_x", "gauge", "group", kind.labels, HELP, kind(lambda v: v))
    writer = MetricWriter(spec)
    expected = writer.lines(zip(labels, values))
    assert expected.count("\n") == len(SAMPLES) - 1  # the unknown value is left out
    assert writer.keyed_lines(values, label_blocks(kind.labels, labels)) == expected


def test_only_a_keyed_metric_is_written_from_label_blocks():
    monitor_metric = next(m for m in METRICS if m.scope == "monitor")
    with pytest.raises(ValueError, match=monitor_metric.name):
        MetricWriter(monitor_metric).keyed_lines([], [])
    assert sum(isinstance(m.keyed, PerGroup) for m in METRICS) >= 15  # most group metrics take the shared blocks
    assert sum(isinstance(m.keyed, PerPartition) for m in METRICS) >= 4
