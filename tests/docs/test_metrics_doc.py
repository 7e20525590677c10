"""``docs/metrics.md`` against what ``/metrics`` serves: the ``METRICS`` catalogue of
``streaming/sinks/metric_catalogue.py``.

Every metric in the catalogue must have a row in the page, in the section of its scope, with its type and labels;
every metric name the page mentions (rows, prose, example queries) must exist in the catalogue. The status codes and
the ``/ready`` defaults the page quotes are checked against the code too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streaming.config import MetricsSettings
from streaming.model.rules import Status
from streaming.sinks.prometheus import METRICS

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"

# A table row whose first cell is a metric name in backticks: | `name` | type | labels | meaning |
_ROW = re.compile(r"^\|\s*`((?:kafka|groupscope)_[a-z0-9_]+)`\s*\|([^|]*)\|([^|]*)\|", re.M)
# A metric name anywhere; a name followed by `*` is a family pattern (kafka_consumergroup_*), not a metric.
_NAME = re.compile(r"(?<![\w.-])((?:kafka|groupscope)_[a-z0-9_]*[a-z0-9])(?![\w*])")
_SECTIONS = {"group": "## Group metrics", "partition": "## Partition and member metrics", "monitor": "## Monitor metrics"}


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def _rows(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    rows: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, kind, labels in _ROW.findall(text):
        assert name not in rows, f"{name} has two rows in {DOC.name}"
        rows[name] = (kind.strip(), tuple(re.findall(r"`([^`]+)`", labels)))
    return rows


def test_the_catalogue_is_not_empty():
    assert len(METRICS) > 10
    assert {s.scope for s in METRICS} == set(_SECTIONS)


@pytest.mark.parametrize("spec", METRICS, ids=lambda s: s.name)
def test_every_metric_of_the_code_is_documented_with_its_type_and_labels(spec):
    section = _section(_text(), _SECTIONS[spec.scope])
    rows = _rows(section)
    assert spec.name in rows, f"{spec.name} ({spec.scope} scope) has no row under '{_SECTIONS[spec.scope]}'"
    kind, labels = rows[spec.name]
    assert kind == spec.kind, f"{spec.name}: the page says {kind}, the code {spec.kind}"
    assert labels == spec.labels, f"{spec.name}: the page says labels {labels}, the code {spec.labels}"


def test_the_page_names_no_metric_the_code_does_not_have():
    known = {s.name for s in METRICS}
    text = _text()
    assert set(_rows(text)) <= known, f"rows for unknown metrics: {sorted(set(_rows(text)) - known)}"
    mentioned = set(_NAME.findall(text))
    assert mentioned - known == set(), f"{DOC.name} mentions metrics the code does not export"


def test_status_codes_are_the_codes_of_the_model():
    section = _section(_text(), "### Statuses as numbers")
    documented = {int(v): name for v, name in re.findall(r"^\|\s*(\d+)\s*\|\s*([A-Z]+)\s*\|", section, re.M)}
    assert documented == {int(s): s.name for s in Status}


def test_ready_limits_are_the_configured_defaults():
    section = _section(_text(), "## `/ready`")
    defaults = MetricsSettings()
    for setting in ("ready_max_batch_age_seconds", "ready_max_heartbeat_age_seconds"):
        match = re.search(rf"`metrics\.{setting}`[^(]*\((\d+) s\)", section)
        assert match, f"the /ready section does not quote metrics.{setting} with its default"
        assert float(match.group(1)) == getattr(defaults, setting)
