"""Acceptance: every real Kafka recording, replayed through the job's own step, meets every label in its
``labels.json`` (verdicts an SRE expects, derived from what the recording's clients did, never from a monitor).

Recordings are read from ``tests/data/conformance/verdicts/`` and, when ``GROUPSCOPE_VERDICT_RECORDINGS`` names a folder,
from there too (newer recordings, the same layout). Each scenario prints its table: one line per label with PASS or
FAIL, then the verdict timeline (status changes and rebalance verdicts) next to it, seconds after the scenario start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from streaming.offline.recording import load_recording, replay_recording
from tests.conftest import captures_dir

from .labels import check_labels


def recording_dirs() -> list[Path]:
    roots = [captures_dir() / "conformance" / "verdicts"]
    extra = os.environ.get("GROUPSCOPE_VERDICT_RECORDINGS")
    if extra:
        roots.append(Path(extra))
    found = sorted({p for root in roots if root.is_dir() for p in root.iterdir() if (p / "labels.json").is_file()})
    if not found:
        pytest.fail(f"no recordings with labels.json under {roots}")
    return found


DIRS = recording_dirs()


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_recording_meets_every_label(path: Path):
    labels = json.loads((path / "labels.json").read_text())
    timeline = replay_recording(load_recording(path))
    results = check_labels(timeline, labels)
    t0 = labels["t0_ms"]
    print(f"\n== {path.name}: {sum(r.ok for r in results)}/{len(results)} labels met")
    for r in results:
        print("  " + r.describe(t0))
    print("  timeline (s after start):")
    for e in timeline:
        where = f"{e.topic}:{e.partition}" if e.scope == "partition" else "(group)"
        print(f"    {(e.t_ms - t0) / 1000:7.1f} {e.group:<12} {where:<16} {e.previous or '-':>15} -> {e.verdict:<15} "
              f"{e.reason}")
    failed = [r.describe(t0) for r in results if not r.ok]
    assert not failed, "labels not met:\n" + "\n".join(failed)


def test_labels_checker_can_fail():
    """The checker is not vacuous: a timeline with the storm removed, or a status flipped, fails its labels."""
    path = captures_dir() / "conformance" / "verdicts" / "storm_crashloop"
    labels = json.loads((path / "labels.json").read_text())
    timeline = replay_recording(load_recording(path))
    assert all(r.ok for r in check_labels(timeline, labels))
    no_storm = [e for e in timeline if e.verdict != "storm"]
    assert not all(r.ok for r in check_labels(no_storm, labels))
    from dataclasses import replace

    flipped = [replace(e, verdict="STOP") if e.scope == "partition" and e.t_ms > labels["end_ms"] - 20_000 else e
               for e in timeline]
    late_stop = flipped + [replace(timeline[0], t_ms=labels["end_ms"] - 20_000, verdict="STOP", previous="OK")]
    assert not all(r.ok for r in check_labels(late_stop, labels))
