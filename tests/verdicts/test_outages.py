"""Acceptance: real broker outages, recorded on a real Kafka 4.0 broker with real clients
(``tests/data/outages.tar.zst``, made by ``tests/realkafka/outage_recorder.py``), replayed through the job's own
step. Every label of ``labels.json`` (derived from the client log) holds, and each outage longer than the session
timeout is one ``KafkaUnavailable`` row naming the groups whose members Kafka made rejoin.

Two recordings: ``outage_stop`` (a deploy, then the broker stopped 25 s and started: 49 s away; then frozen 5 s)
and ``outage_freeze`` (frozen 25 s, then restarted, 17 s away, five seconds into a deploy's rebalance and inside
the rejoin window of the freeze; the static members' librdkafka consumers hung after the freeze and never
committed again, so that group is expected STOP, as any consumer that stopped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streaming.offline.recording import load_recording, timeline_from_events
from streaming.offline.recording.replay import replay_events
from tests.conftest import DATA, UNPACKED, unpack

from .labels import check_labels

ARCHIVE = DATA / "outages.tar.zst"


def outage_dirs() -> list[Path]:
    root = unpack(ARCHIVE, UNPACKED / "outages")
    found = sorted(p for p in root.iterdir() if (p / "labels.json").is_file())
    if not found:
        pytest.fail(f"no recordings with labels.json in {ARCHIVE}")
    return found


DIRS = outage_dirs()


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_outage_recording_meets_every_label(path: Path):
    labels = json.loads((path / "labels.json").read_text())
    rows = list(replay_events(load_recording(path)))
    results = check_labels(timeline_from_events(rows), labels)
    t0 = labels["t0_ms"]
    for r in results:
        print("  " + r.describe(t0))
    assert all(r.ok for r in results), "labels not met:\n" + "\n".join(r.describe(t0) for r in results if not r.ok)

    reported = [(r, json.loads(r["detail"])) for r in rows if r["kind"] == "KafkaUnavailable"]
    for outage in labels["outages"]:
        covering = [d for _, d in reported if d["since_ms"] <= outage["from_ms"] + 3_000
                    and d["back_ms"] >= outage["to_ms"] - 1_000 and d["since_ms"] < outage["to_ms"]]
        if not outage["expect_cluster_event"]:
            assert not covering, f"a {outage['how']} of {(outage['to_ms'] - outage['from_ms']) / 1000:.0f} s " \
                                 f"is shorter than the session timeout, yet reported: {covering}"
            continue
        assert len(covering) == 1, f"outage {outage} reported {len(covering)} times: {reported}"
        seen = covering[0]
        assert set(outage["groups_rejoined"]) <= set(seen["groups"]), (outage, seen)
        print(f"  outage {outage['how']} {(outage['to_ms'] - outage['from_ms']) / 1000:.0f} s: reported "
              f"{seen['seconds']:.0f} s, groups {seen['groups']}")
    assert all(r["shard"] == -1 and r["group_id"] == "" for r, _ in reported), "one merged row per outage"


def test_outage_labels_can_fail():
    """The checks are not vacuous: a storm added for a healthy group, or a STOP after the outage, fails them."""
    path = DIRS[0]
    labels = json.loads((path / "labels.json").read_text())
    timeline = timeline_from_events(replay_events(load_recording(path)))
    assert all(r.ok for r in check_labels(timeline, labels))
    from dataclasses import replace

    long = next(o for o in labels["outages"] if o["expect_cluster_event"])
    storm = replace(next(e for e in timeline if e.group == "ok-eager"), scope="group", verdict="storm",
                    t_ms=long["to_ms"] + 5_000)
    assert not all(r.ok for r in check_labels(timeline + [storm], labels))
    stop = replace(next(e for e in timeline if e.group == "ok-coop" and e.scope == "partition"),
                   verdict="STOP", t_ms=long["to_ms"] + 5_000)
    assert not all(r.ok for r in check_labels(timeline + [stop], labels))
