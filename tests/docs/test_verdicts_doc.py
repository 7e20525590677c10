"""``docs/verdicts.md`` against the decision tables the model runs: the status rules (``RULES`` of
``streaming/model/rules.py``) and the rebalance verdicts (``VERDICTS`` of ``streaming/model/verdicts.py``).

Each table of the page must name every row of its table in the code, in the order the code tries them, with the
status a status rule gives; nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path

from streaming.model.rules import RULES
from streaming.model.verdicts import VERDICTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "verdicts.md"

# | 4b | `kafka_returning` | the status before | ... : the number, the rule and the status cell
_STATUS_ROW = re.compile(r"^\|\s*\d+b?\s*\|\s*`([a-z_]+)`\s*\|([^|]*)\|", re.M)
# | `storm` | when | reported |
_VERDICT_ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|", re.M)


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_status_table_names_every_rule_in_the_order_the_code_tries_them():
    rows = _STATUS_ROW.findall(_section("Statuses"))
    assert [name for name, _ in rows] == [rule.name for rule in RULES]


def test_the_status_table_gives_each_rule_its_status():
    documented = {name: cell.strip() for name, cell in _STATUS_ROW.findall(_section("Statuses"))}
    for rule in RULES:
        expected = "the status before" if rule.status is None else rule.status.name
        assert documented[rule.name] == expected, rule.name


def test_the_verdict_table_names_every_verdict_in_the_order_the_code_tries_them():
    tried: list[str] = []
    for rule in VERDICTS:
        if rule.verdict is not None and rule.verdict not in tried:
            tried.append(rule.verdict)
    assert _VERDICT_ROW.findall(_section("Rebalance verdicts")) == tried
