"""The Prometheus alert rules in ``alerts/``: ``promtool check rules``, ``promtool test rules`` (the unit tests in
``alerts/tests/``), and the conventions every rule follows (severity, runbook, tested firing and not firing,
series the sink exports). ``test_dashboards_live.py`` also loads them into a real Prometheus.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from streaming.sinks.prometheus import METRICS
from tests.dashboards.grafana import REPO, metric_names
from tests.dashboards.promtools import require, run

RULES = REPO / "alerts" / "groupscope.rules.yml"
UNIT_TESTS = sorted((REPO / "alerts" / "tests").glob("*.test.yml"))


def _rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def _alert_tests() -> list[dict]:
    """Every alert_rule_test case of the unit test files."""
    return [case for path in UNIT_TESTS for t in yaml.safe_load(path.read_text())["tests"]
            for case in t.get("alert_rule_test", [])]


def test_promtool_check_rules():
    promtool = require("promtool")
    out = run([promtool, "check", "rules", str(RULES)])
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


def test_promtool_unit_tests():
    promtool = require("promtool")
    assert UNIT_TESTS, "alerts/tests/*.test.yml missing"
    out = run([promtool, "test", "rules", *map(str, UNIT_TESTS)], cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("SUCCESS") == len(UNIT_TESTS), out.stdout


def test_promtool_unit_tests_can_fail(tmp_path: Path):
    # The same tests against rules whose storm alert forgets the catch-up gate must fail.
    promtool = require("promtool")
    (tmp_path / "tests").mkdir()
    broken = RULES.read_text().replace(
        "and on (cluster) (groupscope_caught_up == 1)", "and on (cluster) (vector(1) == 1)", 1)
    assert broken != RULES.read_text()
    (tmp_path / RULES.name).write_text(broken)
    for path in UNIT_TESTS:
        (tmp_path / "tests" / path.name).write_text(path.read_text())
    out = run([promtool, "test", "rules", *(str(tmp_path / "tests" / p.name) for p in UNIT_TESTS)])
    assert out.returncode != 0 and "KafkaConsumerGroupRebalanceStorm" in out.stdout + out.stderr


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: r["alert"])
def test_rule_conventions(rule):
    assert rule["labels"]["severity"] in ("critical", "warning")
    notes = rule["annotations"]
    assert set(notes) == {"summary", "description", "runbook"}
    assert len(notes["runbook"].split(". ")) >= 2, "a runbook says what to check, in more than one sentence"
    used = metric_names(rule["expr"])
    assert used <= {s.name for s in METRICS}, used - {s.name for s in METRICS}
    if used & {s.name for s in METRICS if s.scope == "group"}:
        assert "groupscope_caught_up" in rule["expr"], "consumer-group rules wait until the monitor caught up"
    assert not used & {s.name for s in METRICS if s.scope == "partition"}, "alerts must not need opt-in series"


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: r["alert"])
def test_every_rule_is_tested_firing_and_not_firing(rule):
    cases = [c for c in _alert_tests() if c["alertname"] == rule["alert"]]
    assert any(c.get("exp_alerts") for c in cases), "no case where it fires"
    assert any(not c.get("exp_alerts") for c in cases), "no case where it stays silent"
