"""The model's event and snapshot vocabulary: what the sinks rely on (event kinds are class names, verdict events
map to distinct verdict names, cause values are stable snake_case strings, everything frozen)."""

from __future__ import annotations

import dataclasses

import pytest

from streaming.model import events as ev
from streaming.model.rules import Status


def _event_classes() -> list[type]:
    return [obj for name in ev.__all__ if isinstance(obj := getattr(ev, name), type) and issubclass(obj, ev.Event)]


def test_every_public_event_class_is_exported_and_frozen():
    public = {cls for cls in vars(ev).values() if isinstance(cls, type) and issubclass(cls, ev.Event)
              and not cls.__name__.startswith("_")}
    assert public == set(_event_classes())
    for cls in public:
        assert cls.__dataclass_params__.frozen, cls


def test_kind_is_the_class_name():
    e = ev.OffsetDeleted("g", 5, 1_000, "t", 0)
    assert e.kind == "OffsetDeleted"
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.offset = 6  # type: ignore[misc]


def test_verdict_kinds_map_to_distinct_verdict_names():
    assert ev.VERDICT_OF_KIND == {
        "RebalanceStorm": "storm", "StormEnded": "storm_ended", "RollingRestart": "rolling_restart",
        "GroupFormed": "formation", "ScaleOut": "scale_out", "ScaleIn": "scale_in",
    }
    assert len(set(ev.VERDICT_OF_KIND.values())) == len(ev.VERDICT_EVENTS)


def test_cause_values_are_the_lowercase_names():
    """The values are written to tables and metrics labels: they must stay what the names say."""
    for cause in ev.RebalanceCause:
        assert cause.value == cause.name.lower()


def test_size_verdicts_share_their_fields():
    fields = [f.name for f in dataclasses.fields(ev.ScaleOut)]
    assert fields == [f.name for f in dataclasses.fields(ev.ScaleIn)] == [f.name for f in dataclasses.fields(ev.GroupFormed)]
    out = ev.ScaleOut("g", 1, 2, rebalances=3, window_seconds=4.0, first_timestamp=0, members_before=2,
                      members_after=5)
    assert out.reason == "" and out.verdict == "scale_out"


def test_snapshot_defaults():
    assert ev.ShardSnapshot(0, 1, 2).groups == ()
    v = ev.GroupVerdicts()
    assert (v.storms, v.storm_active, v.last_verdict, v.causes) == (0, False, None, ())
    lag = ev.PartitionLag("t", 0, 5, -1, "", 0, None, None, None, False, False, Status.OK, None)
    assert (lag.log_start, lag.lag_seconds_method, lag.status_reason) == (None, None, "")
