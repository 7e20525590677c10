"""``docs/delta-tables.md`` against the schemas of ``streaming/schema/tables.py``.

Every table has a section; every column (and every field of a list of structs, as ``parent.field``) has a row with
its Arrow type; the page documents no column the schema lacks; and each table's partitioning is the one declared in
``PARTITION_COLUMNS``.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pyarrow as pa
import pytest

from streaming.schema.tables import PARTITION_COLUMNS, TABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "delta-tables.md"

_ROW = re.compile(r"^\|\s*`([a-z_][a-z0-9_.]*)`\s*\|([^|]*)\|", re.M)


def type_name(t: pa.DataType) -> str:
    """How the page writes an Arrow type: ``int32``, ``double``, ``timestamp[ms, UTC]``, ``list<struct>``..."""
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, {t.tz}]"
    if pa.types.is_date32(t):
        return "date32"
    if pa.types.is_list(t):
        inner = t.value_type
        return f"list<{'struct' if pa.types.is_struct(inner) else type_name(inner)}>"
    return str(t)


def expected_columns(schema: pa.Schema) -> dict[str, str]:
    out: dict[str, str] = {}
    for field in schema:
        out[field.name] = type_name(field.type)
        if pa.types.is_list(field.type) and pa.types.is_struct(field.type.value_type):
            for child in field.type.value_type:
                out[f"{field.name}.{child.name}"] = type_name(child.type)
    return out


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _section(name: str) -> str:
    text = _text()
    heading = f"\n## `{name}`\n"
    assert heading in text, f"{DOC.name} has no section '## `{name}`'"
    start = text.index(heading) + 1
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def _documented(section: str) -> dict[str, str]:
    rows: dict[str, str] = {}
    for column, type_cell in _ROW.findall(section):
        assert column not in rows, f"column {column} has two rows"
        rows[column] = html.unescape(type_cell).strip()
    return rows


def test_every_table_has_a_section_and_no_other_table_does():
    sections = set(re.findall(r"^## `([a-z_]+)`$", _text(), re.M))
    assert sections == set(TABLES)


@pytest.mark.parametrize("name", list(TABLES))
def test_every_column_is_documented_with_its_type(name):
    documented = _documented(_section(name))
    expected = expected_columns(TABLES[name])
    missing = [c for c in expected if c not in documented]
    assert missing == [], f"{name}: columns of the schema missing from {DOC.name}"
    wrong = {c: (documented[c], t) for c, t in expected.items() if documented[c] != t}
    assert wrong == {}, f"{name}: documented type differs from the schema (page, code)"


@pytest.mark.parametrize("name", list(TABLES))
def test_the_page_documents_no_column_the_schema_lacks(name):
    extra = set(_documented(_section(name))) - set(expected_columns(TABLES[name]))
    assert extra == set(), f"{name}: documented columns that the schema does not have"


@pytest.mark.parametrize("name", list(TABLES))
def test_partitioning_is_the_declared_one(name):
    section = " ".join(_section(name).split())
    columns = PARTITION_COLUMNS[name]
    if columns:
        assert f"Partitioned by {', '.join(f'`{c}`' for c in columns)}." in section
    else:
        assert "Not partitioned." in section
    overview = re.search(rf"^\| \[`{name}`\]\(#{name}\) \|.*\|\s*([^|]+?)\s*\|$", _text(), re.M)
    assert overview, f"the overview table has no row for {name}"
    cell = overview.group(1)
    assert cell == (", ".join(f"`{c}`" for c in columns) if columns else "not partitioned")
