"""Shared fixtures: where the shared conformance data lives.

The data sits in a ``shared`` folder beside the repository (or wherever ``GROUPSCOPE_SHARED`` points). Tests that
need it fail when it is missing: a conformance suite that silently skips proves nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    env = os.environ.get("GROUPSCOPE_SHARED")
    path = Path(env) if env else REPO.parent / "shared"
    if not (path / "conformance" / "kafka-4.0").is_dir():
        pytest.fail(f"shared conformance data not found at {path} (set GROUPSCOPE_SHARED)")
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_dir()
