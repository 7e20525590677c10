"""The ``model:`` section is derived from the knobs the model declares (``streaming/model/knobs.py``): every knob is
a setting, reaches the step's configuration in the model's units, and a bad value is one line naming its key."""

from __future__ import annotations

import inspect

import pytest
import yaml

from streaming.config import ConfigError, load_settings
from streaming.job.step import StepConfig
from streaming.model.knobs import Setting, settings_of
from streaming.spark.job import step_config

SETTINGS = settings_of(StepConfig)


def _distinct(s: Setting, i: int) -> object:
    """A valid value of ``s``, different from its default and from every other setting's (``i``: its position).
    Values grow with the position, so a knob's partner declared after it (the stall count's window, the STOP
    floor's ceiling) is larger, as it must be to be read back unchanged."""
    if s.type is str:
        return f"value-{i}"
    bounds = dict(s.bounds)
    low = bounds.get("ge", bounds.get("gt", 0))
    if "lt" in bounds:
        return low + (bounds["lt"] - low) * (i + 1) / (len(SETTINGS) + 2)
    return low + 1 + i + (0.25 if s.type is float else 0)


def _model_value(s: Setting, value: object) -> object:
    return int(value * 1000) if s.unit == "s" else value


def _read(config: StepConfig, path: tuple[str, ...]) -> object:
    for name in path:
        config = getattr(config, name)
    return config


def test_every_knob_goes_from_the_yaml_file_to_the_model_config(tmp_path):
    values = {s.name: _distinct(s, i) for i, s in enumerate(SETTINGS)}
    assert all(values[s.name] != s.default for s in SETTINGS)
    path = tmp_path / "groupscope.yaml"
    path.write_text(yaml.safe_dump({"model": values}))
    config = step_config(load_settings(str(path)))
    assert {s.name: _read(config, s.path) for s in SETTINGS} == {s.name: _model_value(s, values[s.name])
                                                                  for s in SETTINGS}


def test_step_config_names_no_knob():
    """The job reads the section through the declarations: a knob is not mapped again by hand."""
    source = inspect.getsource(step_config)
    assert [s.name for s in SETTINGS if s.name in source or s.path[-1] in source] == []


def test_the_defaults_are_the_model_configs_defaults():
    assert step_config(load_settings(None)) == StepConfig()


def test_a_knob_is_read_from_the_environment_in_seconds(monkeypatch):
    monkeypatch.setenv("GROUPSCOPE_MODEL__TREND_SECONDS", "45")
    assert step_config(load_settings(None)).model.thresholds.trend_ms == 45_000


def _error_lines(tmp_path, model: dict) -> list[str]:
    path = tmp_path / "groupscope.yaml"
    path.write_text(yaml.safe_dump({"model": model}))
    with pytest.raises(ConfigError) as err:
        load_settings(str(path))
    return [line.removeprefix(f"{path}: ") for line in err.value.lines]


@pytest.mark.parametrize("model, line", [
    ({"storm_window_secs": 60}, "model.storm_window_secs: unknown setting (did you mean model.storm_window_seconds?)"),
    ({"stop_after_seconds": "soon"}, "model.stop_after_seconds: Input should be a valid number, unable to parse "
                                     "string as a number"),
    ({"storm_flaps": 2.5}, "model.storm_flaps: Input should be a valid integer, got a number with a fractional part"),
    ({"catching_up_ratio": 1.5}, "model.catching_up_ratio: Input should be less than 1"),
    ({"stall_commits": 1}, "model.stall_commits: Input should be greater than or equal to 2"),
])
def test_a_bad_model_setting_is_one_line_naming_it(tmp_path, model, line):
    assert _error_lines(tmp_path, model) == [line]


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.bounds], ids=lambda s: s.name)
def test_every_bound_of_every_knob_is_checked_with_one_line(tmp_path, setting):
    for op, bound in setting.bounds:
        value = bound + {"gt": 0, "ge": -1, "lt": 0, "le": 1}[op]
        (line,) = _error_lines(tmp_path, {setting.name: value})
        assert line.startswith(f"model.{setting.name}: Input should be "), line
