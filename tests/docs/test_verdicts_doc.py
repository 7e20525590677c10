"""``docs/verdicts.md`` against the decision tables the model runs: the status rules (``RULES`` of
``streaming/model/rules.py``) and the rebalance verdicts (``VERDICTS`` of ``streaming/model/verdicts.py``); and its
Tuning table against the knobs the model declares (``streaming/model/knobs.py``).

Each table of the page must name every row of its table in the code, in the order the code tries them, with the
status a status rule gives; nothing else. The Tuning table lists every setting of the ``model:`` section with its
default, unit and meaning, in declaration order, and every ``model.NAME`` the documentation mentions is one of them.
"""

from __future__ import annotations

import re
from pathlib import Path

from streaming.job.step import StepConfig
from streaming.model.knobs import Setting, settings_of
from streaming.model.rules import RULES
from streaming.model.verdicts import VERDICTS

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "verdicts.md"

# | 4b | `kafka_returning` | the status before | ... : the number, the rule and the status cell
_STATUS_ROW = re.compile(r"^\|\s*\d+b?\s*\|\s*`([a-z_]+)`\s*\|([^|]*)\|", re.M)
# | `storm` | when | reported |
_VERDICT_ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|", re.M)
# | `stop_after_seconds` | 30 | s | meaning |
_KNOB_ROW = re.compile(r"^\| `[a-z_]+` \|.*\|$", re.M)
_MENTION = re.compile(r"`model\.([a-z_]+)`")


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


def knob_row(s: Setting) -> str:
    """The Tuning table's row of one setting, as the page must have it."""
    default = f"{s.default:g}" if isinstance(s.default, (int, float)) else s.default
    return f"| `{s.name}` | {default} | {s.unit} | {s.meaning} |"


def test_the_tuning_table_lists_every_model_setting():
    want = [knob_row(s) for s in settings_of(StepConfig)]
    assert _KNOB_ROW.findall(_section("Tuning")) == want, "the Tuning table's rows, as the knobs declare them:\n" + \
        "\n".join(want)


def test_the_documentation_names_only_model_settings_that_exist():
    names = {s.name for s in settings_of(StepConfig)}
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    unknown = sorted({f"{p.name}: model.{m}" for p in pages for m in _MENTION.findall(p.read_text(encoding="utf-8"))
                      if m not in names})
    assert unknown == []
