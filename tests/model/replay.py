"""Replays the real Kafka 4.0 captures (``tests/data/conformance/kafka-4.0``) into the model, two ways.

* ``raw``: every record below the snapshot's high watermark, with its batch header: transactional commits are held
  per producer id and control records go to ``replay_end_txn_marker`` (the segment-file path).
* ``read_committed``: what a read_committed consumer of ``__consumer_offsets`` sees at that moment: records with
  ``visible_read_committed`` below both the high watermark and the last stable offset (a transaction whose marker
  is not yet below the high watermark was still open then, and a read_committed reader stops at its first record),
  replayed as plain records (the Spark source path; no headers, no markers).
"""

from __future__ import annotations

import json
from functools import lru_cache

import pytest

from protocol.codec import decode_record
from streaming.model.shard import CoordinatorModel, ModelConfig
from tests.conftest import captures_dir

MODES = ("raw", "read_committed")


def scenario_names() -> list[str]:
    root = captures_dir() / "conformance" / "kafka-4.0"
    names = sorted(p.name for p in root.iterdir() if (p / "truth.json").exists())
    if not names:
        pytest.fail(f"no scenarios with truth.json under {root}")
    return names


@lru_cache(maxsize=None)
def records(scenario: str) -> tuple:
    """``(partition, offset, timestamp, decoded or None, raw dict)`` sorted by partition and offset."""
    out = []
    with open(captures_dir() / "conformance" / "kafka-4.0" / scenario / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            rec = None
            if not r["batch"]["is_control"]:
                rec = decode_record(bytes.fromhex(r["key_hex"]),
                                    None if r["value_hex"] is None else bytes.fromhex(r["value_hex"]))
            out.append((r["partition"], r["offset"], r["timestamp"], rec, r))
    out.sort(key=lambda x: (x[0], x[1]))
    return tuple(out)


@lru_cache(maxsize=None)
def truth(scenario: str) -> dict:
    with open(captures_dir() / "conformance" / "kafka-4.0" / scenario / "truth.json", encoding="utf-8") as fh:
        return json.load(fh)


def _marker_offsets(recs) -> dict[tuple[int, int], list[int]]:
    """Control-record offsets per (partition, producer id), ascending."""
    out: dict[tuple[int, int], list[int]] = {}
    for partition, offset, _, _, raw in recs:
        if raw["batch"]["is_control"]:
            out.setdefault((partition, raw["batch"]["producer_id"]), []).append(offset)
    return out


def last_stable_offsets(recs, hws: dict[int, int]) -> dict[int, int]:
    """Per partition: the first offset of a transaction still open at the high watermark (else the hw)."""
    markers = _marker_offsets(recs)
    lso = dict(hws)
    for partition, offset, _, _, raw in recs:
        b = raw["batch"]
        hw = hws.get(partition, 0)
        if offset >= hw or b["is_control"] or not b["is_transactional"]:
            continue
        closing = [m for m in markers.get((partition, b["producer_id"]), []) if m > offset]
        if not closing or closing[0] >= hw:
            lso[partition] = min(lso[partition], offset)
    return lso


def replay(scenario: str, hws: dict[int, int], mode: str, config: ModelConfig = ModelConfig()) -> CoordinatorModel:
    recs = records(scenario)
    model = CoordinatorModel(config)
    limit = hws if mode == "raw" else last_stable_offsets(recs, hws)
    for partition, offset, ts, rec, raw in recs:
        if offset >= limit.get(partition, 0):
            continue
        shard = model.shard(partition)
        b = raw["batch"]
        if mode == "raw":
            if b["is_control"]:
                shard.replay_end_txn_marker(b["producer_id"], raw["control"]["type"], offset, ts)
            else:
                shard.replay(offset, ts, rec, b["producer_id"], b["producer_epoch"], b["is_transactional"])
        else:
            if b["is_control"] or not raw["visible_read_committed"]:
                continue
            shard.replay(offset, ts, rec)
    return model


def snapshot_cases() -> list[tuple[str, int, str]]:
    return [(sc, i, s["label"]) for sc in scenario_names() for i, s in enumerate(truth(sc)["snapshots"])]
