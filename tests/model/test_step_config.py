"""The step's configuration (``streaming/model/step_config.py``): the knobs of the ``model:`` section that belong to
the step rather than to the model (their settings' names, units, defaults and bounds), the fields no user sets,
and the values it refuses to be built with. That every knob of the whole section keeps its bounds in both places
is checked for all of them in ``tests/model/test_knobs.py``; the section read from a file, in
``tests/streaming/test_model_knobs.py``."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from streaming.config import HeartbeatSettings, SourceSettings
from streaming.model.knobs import settings_of
from streaming.model.shard import ModelConfig
from streaming.model.step_config import OFFSETS_TOPIC, StepConfig
from tests.conftest import REPO


def _own_settings() -> dict[str, tuple]:
    """The step's own settings (the model's are under ``model``): name -> (field, unit, default, bounds)."""
    return {s.name: (s.path[0], s.unit, s.default, s.bounds) for s in settings_of(StepConfig) if len(s.path) == 1}


def test_the_steps_own_knobs_are_set_in_seconds_or_records_with_their_bounds():
    assert _own_settings() == {
        "snapshot_interval_seconds": ("snapshot_interval_ms", "s", 10.0, (("gt", 0),)),
        "lag_interval_seconds": ("lag_interval_ms", "s", 60.0, (("gt", 0),)),
        "caught_up_slack": ("caught_up_slack", "records", 0, (("ge", 0),)),
        "caught_up_grace_seconds": ("caught_up_grace_ms", "s", 30.0, (("ge", 0),)),
    }


def test_the_settings_defaults_are_the_fields_defaults_in_milliseconds():
    config = StepConfig()
    for name, (field, unit, default, _) in _own_settings().items():
        assert getattr(config, field) == (default * 1000 if unit == "s" else default), name


def test_the_fields_no_user_sets_follow_the_other_sections():
    """The topics come from the heartbeat and source sections; nobody sets them under ``model:``."""
    names = {s.name for s in settings_of(StepConfig)}
    assert not names & {"heartbeat_topic", "offsets_topic", "partition_rows_every_snapshot"}
    config = StepConfig()
    assert config.heartbeat_topic == HeartbeatSettings().topic
    assert config.offsets_topic == SourceSettings().offsets_topic == OFFSETS_TOPIC == "__consumer_offsets"
    assert config.partition_rows_every_snapshot is False
    assert config.model == ModelConfig()


@pytest.mark.parametrize("field, value", [("snapshot_interval_ms", 0), ("snapshot_interval_ms", -10_000),
                                          ("lag_interval_ms", 0), ("caught_up_slack", -1),
                                          ("caught_up_grace_ms", -1)])
def test_a_value_outside_its_bounds_is_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"StepConfig\.{field} = {value}: must be"):
        StepConfig(**{field: value})


def test_the_bounds_themselves_are_accepted_where_they_are_inclusive():
    config = StepConfig(snapshot_interval_ms=1, lag_interval_ms=1, caught_up_slack=0, caught_up_grace_ms=0)
    assert (config.snapshot_interval_ms, config.caught_up_grace_ms) == (1, 0)


def test_a_config_is_a_frozen_value():
    """Shared by every shard's step of a job: one step cannot change another's."""
    config = StepConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.snapshot_interval_ms = 5  # type: ignore[misc]
    assert dataclasses.replace(config, caught_up_slack=4) == StepConfig(caught_up_slack=4) != config


def test_the_job_step_uses_this_class():
    from streaming.job.step import StepConfig as StepsConfig

    assert StepsConfig is StepConfig


def test_importing_it_brings_nothing_of_the_job():
    """Declared beside the model so that the configuration loader, which derives the ``model:`` section from it,
    does not depend on ``streaming.job``: checked in a fresh interpreter, whose modules no other test loaded."""
    probe = ("import sys, streaming.model.step_config; "
             "print(sorted(m for m in sys.modules if m.split('.')[:2] in (['streaming', 'job'], ['streaming', 'spark'])"
             " or m == 'pyspark'))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60,
                         check=True)
    assert out.stdout.strip() == "[]"
