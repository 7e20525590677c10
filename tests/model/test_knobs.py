"""The knob declarations (``streaming/model/knobs.py``): every field of the model's configuration says how a user
sets it, settings keep their declared units and bounds, and a configuration is built from settings generically."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from streaming.job.step import StepConfig
from streaming.model.knobs import MS, Internal, Knob, build, check_bounds, internal, knob, settings_of
from streaming.model.rules import Thresholds
from streaming.model.shard import ModelConfig
from streaming.model.verdicts import RebalanceConfig

CONFIGS = (StepConfig, ModelConfig, Thresholds, RebalanceConfig)


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_field_is_a_knob_an_internal_field_with_its_reason_or_a_part(cls):
    parts = {ModelConfig, Thresholds, RebalanceConfig}
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("groupscope.knob")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if type(default) in parts:
            continue
        assert isinstance(spec, (Knob, Internal)), f"{cls.__name__}.{f.name} says not how it is set"
        assert spec.meaning if isinstance(spec, Knob) else spec.reason, f"{cls.__name__}.{f.name}"


def test_a_field_added_without_a_declaration_is_refused():
    @dataclass(frozen=True)
    class Config:
        declared: int = knob(1, "records", "a declared knob")
        added: int = 2

    with pytest.raises(TypeError, match="Config.added"):
        settings_of(Config)


def test_an_internal_field_needs_its_reason():
    with pytest.raises(TypeError):
        internal(1)


def test_a_duration_is_set_in_seconds_under_a_seconds_name():
    @dataclass(frozen=True)
    class Config:
        wait_ms: int = knob(1_500, MS, "a wait", gt=0, le=60_000)
        tries: int = knob(3, "tries", "attempts", ge=1)

    wait, tries = settings_of(Config)
    assert (wait.name, wait.type, wait.default, wait.unit, wait.bounds) == ("wait_seconds", float, 1.5, "s",
                                                                           (("gt", 0), ("le", 60)))
    assert (tries.name, tries.type, tries.default, tries.unit) == ("tries", int, 3, "tries")
    assert build(Config, {"wait_seconds": 0.25, "tries": 5}) == Config(wait_ms=250, tries=5)


def test_a_duration_not_named_in_ms_names_its_setting():
    @dataclass(frozen=True)
    class Config:
        wait: int = knob(1_000, MS, "a wait")

    with pytest.raises(TypeError, match="wait"):
        settings_of(Config)


def test_two_knobs_of_one_setting_name_are_refused():
    @dataclass(frozen=True)
    class Part:
        wait_ms: int = knob(1, MS, "a wait")

    @dataclass(frozen=True)
    class Config:
        part: Part = field(default_factory=Part)
        wait: int = knob(2, MS, "another", setting="wait_seconds")

    with pytest.raises(TypeError, match="wait_seconds"):
        settings_of(Config)


def test_build_takes_internal_fields_only_as_given_and_knobs_only_as_settings():
    assert build(StepConfig, {}, heartbeat_topic="hb").heartbeat_topic == "hb"
    with pytest.raises(TypeError, match="snapshot_interval_ms"):
        build(StepConfig, {}, snapshot_interval_ms=1)
    with pytest.raises(KeyError, match="snapshot_interval_ms"):
        build(StepConfig, {"snapshot_interval_ms": 1})


def test_the_declared_defaults_are_the_dataclasses_defaults():
    assert build(StepConfig, {}) == StepConfig()
    assert build(StepConfig, {s.name: s.default for s in settings_of(StepConfig)}) == StepConfig()


def _outside(bounds: tuple[tuple[str, float], ...], scale: float) -> list[float]:
    """Values just outside each bound, in the field's unit."""
    step = {"gt": 0, "ge": -1, "lt": 0, "le": 1}
    return [b * scale + step[op] for op, b in bounds]


@pytest.mark.parametrize("setting", settings_of(StepConfig), ids=lambda s: s.name)
def test_the_model_refuses_what_the_settings_refuse(setting):
    """A knob's bounds hold for the dataclass as much as for the ``model:`` section (the stall count and the STOP
    ceiling give way to their partners instead: tests/model/test_rules.py)."""
    scale = 1000 if setting.unit == "s" else 1
    for value in _outside(setting.bounds, scale):
        with pytest.raises(ValueError, match=setting.path[-1]):
            _replace(StepConfig(), setting.path, value)


def _replace(config, path: tuple[str, ...], value):
    if len(path) == 1:
        return dataclasses.replace(config, **{path[0]: value})
    return dataclasses.replace(config, **{path[0]: _replace(getattr(config, path[0]), path[1:], value)})


def test_check_bounds_names_the_field_and_the_bound():
    @dataclass(frozen=True)
    class Config:
        ratio: float = knob(0.5, "fraction", "a ratio", gt=0, lt=1)

    with pytest.raises(ValueError, match=r"Config.ratio = 1.5: must be < 1"):
        check_bounds(Config(ratio=1.5))
