"""Reading groupscope's Grafana dashboard models the way Grafana does: panels, queries, variables, interpolation.

Only what the tests need of Grafana's behaviour: ``$var`` / ``${var}`` / ``${var:fmt}`` / ``[[var]]``
interpolation (a multi-value variable inside a regex matcher becomes ``(a|b)``, "All" becomes its ``allValue``),
the built-in interval variables, and ``label_values(selector, label)`` variable queries.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

__all__ = ["REPO", "DASHBOARD_DIR", "build_module", "dashboards", "Target", "targets", "annotations",
           "variables", "referenced", "interpolate", "label_values_query", "metric_names", "BUILTINS"]

REPO = Path(__file__).resolve().parents[2]
DASHBOARD_DIR = REPO / "dashboards"

# Grafana's built-in variables as the tests substitute them: windows long enough to hold several 1 s scrapes.
BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "15m", "__range_s": "900"}

_VAR = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<selector>.+?)\s*,\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")
_METRIC = re.compile(r"\b((?:kafka_consumergroup|kafka_partition|groupscope)_[a-z0-9_]+)\b")


def build_module() -> ModuleType:
    """``dashboards/build.py`` imported from its path (``dashboards`` is not an installed package)."""
    name = "groupscope_dashboards_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, DASHBOARD_DIR / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        if "grafana_foundation_sdk" not in str(exc):
            raise
        pytest.fail("grafana-foundation-sdk is not installed: pip install -e '.[test]' (the test extra pins it)")
    sys.modules[name] = module
    return module


@cache
def _load(name: str) -> str:
    return (DASHBOARD_DIR / name).read_text(encoding="utf-8")


def dashboards() -> dict[str, dict[str, Any]]:
    """The committed dashboard models by file name (fresh copies: tests may mutate them)."""
    names = sorted(p.name for p in DASHBOARD_DIR.glob("*.json"))
    return {n: json.loads(_load(n)) for n in names}


@dataclass(frozen=True)
class Target:
    dashboard: str
    panel_id: int
    panel_title: str
    panel_type: str
    ref_id: str
    expr: str
    legend: str
    instant: bool
    description: str


def _panels(model: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in model.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # panels inside collapsed rows


def targets(name: str, model: Mapping[str, Any]) -> list[Target]:
    out = []
    for panel in _panels(model):
        for t in panel.get("targets", []):
            out.append(Target(name, panel.get("id"), panel.get("title", ""), panel.get("type", ""),
                              t.get("refId", ""), t.get("expr", ""), t.get("legendFormat", ""),
                              bool(t.get("instant")) and not t.get("range"), panel.get("description", "")))
    return out


def annotations(model: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [a for a in model.get("annotations", {}).get("list", []) if a.get("expr")]


def variables(model: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in model.get("templating", {}).get("list", [])}


def referenced(text: str) -> set[str]:
    """Names of the variables a string refers to."""
    return {m.group(1) or m.group(3) or m.group(4) for m in _VAR.finditer(text or "")}


def interpolate(text: str, values: Mapping[str, str | list[str]], all_values: Mapping[str, str] = {}) -> str:
    """Grafana's substitution: a list (multi-value) becomes a regex alternation, ``["$__all"]`` the variable's
    allValue; built-ins as in :data:`BUILTINS`.

    Raises:
        KeyError: a variable without a value.
    """
    def value(name: str) -> str:
        if name in BUILTINS:
            return BUILTINS[name]
        v = values[name]
        if isinstance(v, list):
            if v == ["$__all"]:
                return all_values[name]
            return v[0] if len(v) == 1 else "(" + "|".join(_regex_escape(x) for x in v) + ")"
        return v

    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(3) or m.group(4)
        return value(name)

    return _VAR.sub(sub, text)


def _regex_escape(value: str) -> str:
    """Grafana's Prometheus data source escaping of a multi-value item: regex metacharacters get a backslash,
    doubled because the regex sits inside a PromQL string literal."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*+?.()|{}\[\]]", lambda m: "\\\\" + m.group(0), value)


def label_values_query(query: str) -> tuple[str | None, str]:
    """``label_values(selector, label)`` as ``(selector, label)``.

    Raises:
        ValueError: not a label_values query.
    """
    m = _LABEL_VALUES.match(query)
    if not m:
        raise ValueError(f"not a label_values(selector, label) query: {query!r}")
    return m.group("selector"), m.group("label")


def metric_names(expr: str) -> set[str]:
    """groupscope series names an expression uses (the families it exports, not PromQL functions)."""
    return set(_METRIC.findall(expr))
