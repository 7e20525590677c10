"""The ``model:`` section of the configuration as the job's step receives it."""

from __future__ import annotations

from streaming.config import load_settings
from streaming.spark.job import step_config


def test_every_status_setting_reaches_the_rules():
    """Each ``model:`` threshold the status rules read is carried into the step's thresholds (a setting that is
    accepted but not passed on would be silently ignored)."""
    model = {"allowed_lag": 7, "stop_after_seconds": 45, "stop_cadence_factor": 4, "stop_max_seconds": 1800,
             "stop_first_interval_seconds": 600, "empty_group_grace_seconds": 20, "warn_after_seconds": 15,
             "commit_window": 10}
    th = step_config(load_settings(None, {"model": model})).model.thresholds
    assert (th.allowed_lag, th.stop_after_ms, th.stop_cadence_factor, th.stop_max_ms, th.stop_first_interval_ms,
            th.empty_group_grace_ms, th.warn_after_ms, th.window) == (7, 45_000, 4, 1_800_000, 600_000, 20_000,
                                                                      15_000, 10)
