"""The model's knobs, each declared once: on its field of the model's configuration dataclasses.

The dataclasses (``Thresholds``, ``RebalanceConfig``, ``ModelConfig`` and the step's ``StepConfig``) stay the
plain-Python truth the model reads, durations in milliseconds. Each field says in its metadata how a user sets it:
its key in the ``model:`` section of the configuration, its unit there (seconds for a field in ms), the bounds a
value must keep and a one-line meaning. The configuration loader derives the section from :func:`settings_of`, the
job builds the model's configuration from the section with :func:`build`, and the dataclasses check their own
values with :func:`check_bounds`: a knob is one line, and its default, unit and bounds cannot drift apart between
the user's settings and the model.

A field the user does not set is declared :func:`internal`, with the reason; a field holding another configuration
dataclass (``ModelConfig.thresholds``) is a part whose knobs belong to the same section. A field that is none of
these makes :func:`settings_of` fail, so a knob cannot be added without saying how it is set.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, TypeVar

__all__ = ["MS", "Knob", "Internal", "Setting", "knob", "internal", "settings_of", "build", "check_bounds"]

_KEY = "groupscope.knob"
MS = "ms"  # a duration the model holds in milliseconds and the user sets in seconds
_BOUNDS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "gt": (operator.gt, ">"), "ge": (operator.ge, ">="), "lt": (operator.lt, "<"), "le": (operator.le, "<=")}

C = TypeVar("C")


@dataclass(frozen=True)
class Knob:
    """How a user sets one field: ``unit`` is the field's own (``ms`` is set in seconds), bounds in the field's
    unit too; ``setting`` is the key in the ``model:`` section (default: the field's name, ``_ms`` read as
    ``_seconds``)."""

    unit: str
    meaning: str
    setting: str | None = None
    bounds: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Internal:
    """A field the ``model:`` section does not set, and why."""

    reason: str


@dataclass(frozen=True)
class Setting:
    """One key of the ``model:`` section: where it lands in the model's configuration and what it accepts, in the
    user's units."""

    name: str
    path: tuple[str, ...]  # field names from the root configuration class down to the field
    type: type
    default: Any
    unit: str  # as the user writes it: "s" for a field in ms
    meaning: str
    bounds: tuple[tuple[str, float], ...]  # ("gt", 0), in the user's unit

    def to_model(self, value: Any) -> Any:
        """The field's value for a setting of ``value``: seconds become whole milliseconds."""
        return round(value * 1000) if self.unit == "s" else value


def knob(default: Any, unit: str, meaning: str, *, setting: str | None = None, gt: float | None = None,
         ge: float | None = None, lt: float | None = None, le: float | None = None) -> Any:
    """A dataclass field the user sets in the ``model:`` section."""
    bounds = tuple((name, b) for name, b in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if b is not None)
    return dataclasses.field(default=default, metadata={_KEY: Knob(unit, meaning, setting, bounds)})


def internal(default: Any = dataclasses.MISSING, reason: str = "", *,
             default_factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field the ``model:`` section does not set; ``reason`` says why (required)."""
    if not reason:
        raise TypeError("an internal field needs its reason")
    return dataclasses.field(default=default, default_factory=default_factory, metadata={_KEY: Internal(reason)})


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _part(f: dataclasses.Field) -> type | None:
    """The configuration class a field holds, if it holds one (a part of the same section)."""
    value = _default(f)
    return type(value) if dataclasses.is_dataclass(value) and _KEY not in f.metadata else None


def _setting(f: dataclasses.Field, spec: Knob, path: tuple[str, ...]) -> Setting:
    default = _default(f)
    if spec.unit != MS:
        return Setting(spec.setting or f.name, path, type(default), default, spec.unit, spec.meaning, spec.bounds)
    if spec.setting is None and not f.name.endswith("_ms"):
        raise TypeError(f"{f.name}: a duration in ms is named *_ms, or names its setting")
    name = spec.setting or f.name.removesuffix("_ms") + "_seconds"
    bounds = tuple((op, b / 1000) for op, b in spec.bounds)
    return Setting(name, path, float, default / 1000, "s", spec.meaning, bounds)


def _walk(cls: type, path: tuple[str, ...]) -> Iterator[Setting]:
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        part = _part(f)
        if isinstance(spec, Knob):
            yield _setting(f, spec, (*path, f.name))
        elif part is not None:
            yield from _walk(part, (*path, f.name))
        elif not isinstance(spec, Internal):
            raise TypeError(f"{cls.__name__}.{f.name}: declare it with knob(...) (a user setting) or "
                            "internal(..., reason) (not one)")


def settings_of(cls: type) -> list[Setting]:
    """Every setting of the section ``cls`` is the root of, in declaration order. Raises :class:`TypeError` for a
    field declared neither as a knob nor as internal, or two knobs of one setting name."""
    out = list(_walk(cls, ()))
    names = [s.name for s in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TypeError(f"{cls.__name__}: settings declared twice: {', '.join(twice)}")
    return out


def build(cls: type[C], values: Mapping[str, Any], **given: Any) -> C:
    """An instance of ``cls`` from the section's ``values`` (keyed by setting name, in the user's units; a missing
    one keeps its default) and the internal fields of ``cls`` itself in ``given``."""
    settings = settings_of(cls)
    unknown = set(values) - {s.name for s in settings}
    if unknown:
        raise KeyError(f"{cls.__name__}: no setting {', '.join(sorted(unknown))}")
    return _build(cls, (), {s.path: s.to_model(values[s.name]) for s in settings if s.name in values}, given)


def _build(cls: type[C], path: tuple[str, ...], fields: dict[tuple[str, ...], Any], given: Mapping[str, Any]) -> C:
    kwargs = {}
    for f in dataclasses.fields(cls):
        spec = f.metadata.get(_KEY)
        if isinstance(spec, Internal):
            if f.name in given:
                kwargs[f.name] = given[f.name]
        elif (part := _part(f)) is not None:
            kwargs[f.name] = _build(part, (*path, f.name), fields, {})
        elif (*path, f.name) in fields:
            kwargs[f.name] = fields[(*path, f.name)]
    wrong = set(given) - {f.name for f in dataclasses.fields(cls) if isinstance(f.metadata.get(_KEY), Internal)}
    if wrong:
        raise TypeError(f"{cls.__name__}: {', '.join(sorted(wrong))} not internal fields (knobs come from values)")
    return cls(**kwargs)


def check_bounds(config: Any) -> None:
    """Raises :class:`ValueError` naming the first knob of ``config`` (a configuration dataclass, not its parts)
    outside its declared bounds: the model refuses what the configuration loader refuses."""
    for f in dataclasses.fields(config):
        spec = f.metadata.get(_KEY)
        if not isinstance(spec, Knob):
            continue
        value = getattr(config, f.name)
        for name, bound in spec.bounds:
            holds, sign = _BOUNDS[name]
            if not holds(value, bound):
                raise ValueError(f"{type(config).__name__}.{f.name} = {value!r}: must be {sign} {bound:g}")
