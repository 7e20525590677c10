"""Segment files rebuilt from the Kafka 4.0 captures, one directory per scenario (captures by the CLI tests)."""

from __future__ import annotations

import pytest

from tests.protocol.conformance import rebuild_segments, scenarios


@pytest.fixture(scope="session")
def segment_dirs(captures, tmp_path_factory):
    out = {}
    for scenario in scenarios(captures):
        directory = tmp_path_factory.mktemp(scenario.name)
        rebuild_segments(captures, scenario.name, directory)
        out[scenario.name] = directory
    return out
