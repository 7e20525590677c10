"""A new checkpoint beside Delta tables written under another one is refused: its batch ids restart at 0 and the
tables would skip them as already written."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from streaming.driver.runner import refuse_tables_of_another_checkpoint
from streaming.schema.tables import TABLES
from streaming.sinks.delta import DeltaSink


def _quarantine_row() -> pa.Table:
    schema = TABLES["quarantine"]
    row = {f.name: None for f in schema}
    row["quarantined_date"] = dt.date(2026, 11, 24)
    return pa.Table.from_pylist([row], schema=schema)


def test_new_checkpoint_with_tables_of_another_is_refused(tmp_path):
    delta = DeltaSink(tmp_path / "delta", app_id="groupscope-x")
    refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))  # no tables yet: fine
    delta.write_batch(5, {"quarantine": _quarantine_row()})
    with pytest.raises(RuntimeError, match=r"another checkpoint \(up to batch 5\).*delta.path"):
        refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))
    with pytest.raises(RuntimeError):
        refuse_tables_of_another_checkpoint(delta, "file:" + str(tmp_path / "cp"))


def test_resuming_the_same_checkpoint_is_fine(tmp_path):
    delta = DeltaSink(tmp_path / "delta", app_id="groupscope-x")
    delta.write_batch(5, {"quarantine": _quarantine_row()})
    (tmp_path / "cp" / "offsets").mkdir(parents=True)
    (tmp_path / "cp" / "offsets" / "5").write_text("v1\n")
    refuse_tables_of_another_checkpoint(delta, str(tmp_path / "cp"))
    refuse_tables_of_another_checkpoint(delta, "s3a://bucket/cp")  # not local: cannot tell, not refused
