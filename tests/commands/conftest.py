"""Segment files rebuilt from the Kafka 4.0 captures, one directory per scenario, for the commands that read
segments (``decode``, ``describe``).

The same fixture serves ``tests/streaming``; it is declared here too so that the command tests do not reach into
another test package's conftest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.protocol.conformance import rebuild_segments, scenarios


@pytest.fixture(scope="session")
def segment_dirs(captures: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for scenario in scenarios(captures):
        directory = tmp_path_factory.mktemp(scenario.name)
        rebuild_segments(captures, scenario.name, directory)
        out[scenario.name] = directory
    return out
