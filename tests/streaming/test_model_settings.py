"""The ``model:`` section of the configuration as the job's step receives it."""

from __future__ import annotations

import pytest

from streaming.config import load_settings
from streaming.spark.job import step_config


# (the part of the step's model config, the model: settings given, what that part must hold)
CASES = [
    ("thresholds", {"allowed_lag": 7, "stop_after_seconds": 45, "stop_cadence_factor": 4, "stop_max_seconds": 1800,
                    "stop_first_interval_seconds": 600, "empty_group_grace_seconds": 20, "warn_after_seconds": 15,
                    "commit_window": 10},
     {"allowed_lag": 7, "stop_after_ms": 45_000, "stop_cadence_factor": 4, "stop_max_ms": 1_800_000,
      "stop_first_interval_ms": 600_000, "empty_group_grace_ms": 20_000, "warn_after_ms": 15_000, "window": 10}),
    ("rebalance", {"storm_rebalances": 4, "storm_window_seconds": 300, "storm_flaps": 3, "flap_lifetime_seconds": 15,
                   "settle_seconds": 25, "return_wait_seconds": 120, "stepwise_leave_seconds": 15,
                   "storm_quiet_seconds": 90, "silent_after_seconds": 30},
     {"storm_rebalances": 4, "storm_window_ms": 300_000, "storm_flaps": 3, "flap_lifetime_ms": 15_000,
      "settle_ms": 25_000, "return_wait_ms": 120_000, "stepwise_leave_ms": 15_000, "storm_quiet_ms": 90_000,
      "silent_after_ms": 30_000}),
]


@pytest.mark.parametrize("part,model,want", CASES, ids=[c[0] for c in CASES])
def test_every_model_setting_reaches_the_step(part, model, want):
    """Each ``model:`` setting the status rules or the rebalance judge read is carried into the step's config (a
    setting that is accepted but not passed on would be silently ignored)."""
    got = getattr(step_config(load_settings(None, {"model": model})).model, part)
    assert {name: getattr(got, name) for name in want} == want


def test_spark_settings_written_as_yaml_booleans_and_numbers_are_spark_strings(tmp_path):
    """``spark.conf`` values go to Spark as strings; YAML's ``true`` and ``3`` are written as Spark spells them."""
    path = tmp_path / "groupscope.yaml"
    path.write_text("spark:\n  conf:\n    spark.python.worker.reuse: true\n    spark.sql.shuffle.partitions: 3\n")
    assert load_settings(str(path)).spark.conf == {"spark.python.worker.reuse": "true",
                                                   "spark.sql.shuffle.partitions": "3"}
