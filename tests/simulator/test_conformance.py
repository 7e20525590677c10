"""Simulated records pass the same checks as real Kafka's: compared with ``tests/data/conformance/kafka-4.0``.

What "pattern" means here, precisely. Every record is reduced to a *signature* (:func:`record_signature`):

* its record type, value version, and whether it is a tombstone;
* for offset commits (type 1): leader epoch -1 or >= 0, metadata empty or not, commit timestamp equal to the record
  timestamp within 20 ms, and the batch shape (transactional flag, producer id -1 or not, base sequence);
* for classic group metadata (type 2): protocolType, whether protocol/leader are null, whether the leader is a
  member, empty or not, currentStateTimestamp <= record timestamp; per member: the member id is
  ``<client.id or group.instance.id>-<uuid4>``, clientHost ``/127.0.0.1``, static or not, rebalance timeout,
  subscription blob version, empty (non-null) user data or not, owned partitions present or not, generation -1 or
  not, rackId ``""``; assignment blob version and user data (empty, or equal to the subscription's);
* for KIP-848 records (types 3-8): member ids of 22 base64 characters, instance/rack/regex/server-assignor/classic
  metadata shape of type 5, empty per-partition rack metadata in type 4, metadata hash 0 in type 3, assignment
  timestamp 0 in type 6, member state and ``assignment_epochs`` absence in type 8, and how the epoch relates to the
  previous epoch.

Batches are reduced to the sequence of their record types (runs of type 7 collapsed to ``7+``, tombstones marked).
The test asserts that every signature and batch shape the simulator writes for a kind of group (classic with
range/roundrobin/cooperative-sticky/static members; KIP-848 with uniform and range) also occurs in the real
broker's records for the same kind of group, and that the key real shapes (group creation, a generation with
members, the empty generation, KIP-848 join / leave / reconciliation batches) are produced by the simulator too.
It does not compare values that depend on timing or randomness (offsets, ids, timestamps) nor assignment orders
inside blobs (librdkafka emits partitions in its own internal order).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from protocol.codec import decode_record
from streaming.simulator import MemorySink, Simulation
from streaming.simulator.sinks import Append

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
B64_22 = re.compile(r"^[A-Za-z0-9+/]{22}$")


def record_signature(rec, ts: int, batch: dict) -> tuple:
    t, v = int(rec.type), rec.value
    if v is None:
        return (t, "tombstone")
    if t == 1:
        return (t, rec.value_version, "epoch>=0" if v.leader_epoch >= 0 else "epoch-1",
                "md" if v.metadata else "no-md", abs(ts - v.commit_timestamp) <= 20,
                batch["transactional"], batch["producer_id"] >= 0, batch["base_sequence"])
    if t == 2:
        ids = {m.member_id for m in v.members}
        members = []
        for m in v.members:
            prefix = m.group_instance_id or m.client_id
            s, a = m.decoded_subscription, m.decoded_assignment
            members.append((
                bool(re.fullmatch(re.escape(prefix) + "-" + UUID4, m.member_id)), m.client_host,
                m.group_instance_id is not None, m.rebalance_timeout,
                s.version, s.user_data == b"", bool(s.owned_partitions), s.generation_id == -1, s.rack_id,
                "no-assignment" if a is None else (a.version, a.user_data == b"", a.user_data == s.user_data),
            ))
        return (t, rec.value_version, v.protocol_type, v.protocol is None, v.leader is None,
                v.leader in ids if v.leader else None, bool(v.members), v.current_state_timestamp <= ts,
                tuple(sorted(set(members))))
    key_ok = B64_22.match(rec.key.member_id) is not None if hasattr(rec.key, "member_id") else None
    if t == 3:
        return (t, rec.value_version, v.metadata_hash)
    if t == 4:
        return (t, rec.value_version, all(tm.partition_metadata == () for tm in v.topics), bool(v.topics))
    if t == 5:
        return (t, rec.value_version, key_ok, v.instance_id, v.rack_id, v.subscribed_topic_regex, v.client_host,
                v.rebalance_timeout_ms, v.server_assignor is None, v.classic_member_metadata)
    if t == 6:
        return (t, rec.value_version, v.assignment_timestamp)
    if t == 7:
        return (t, rec.value_version, key_ok)
    if t == 8:
        relation = ("same" if v.member_epoch == v.previous_member_epoch else
                    "join" if v.previous_member_epoch == 0 else "advance")
        return (t, rec.value_version, key_ok, v.state, relation, bool(v.partitions_pending_revocation),
                all(tp.assignment_epochs is None for tp in v.assigned_partitions))
    return (t, rec.value_version)


def batch_shape(recs) -> tuple:
    out: list[str] = []
    for r in recs:
        tag = f"{int(r.type)}{'t' if r.value is None else ''}"
        if tag == "7" and out and out[-1] in ("7", "7+"):
            out[-1] = "7+"
        elif tag == "1" and out and out[-1] in ("1", "1+"):
            out[-1] = "1+"
        else:
            out.append(tag)
    return tuple(out)


def captured(captures, scenario: str, groups: set[str]):
    """(signatures, batch shapes) of the real records of ``groups``."""
    sigs, shapes = set(), set()
    batches = defaultdict(list)
    with open(captures / "conformance" / "kafka-4.0" / scenario / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            b = r["batch"]
            if b["is_control"]:
                continue
            rec = decode_record(bytes.fromhex(r["key_hex"]),
                                None if r["value_hex"] is None else bytes.fromhex(r["value_hex"]))
            gid = getattr(rec.key, "group", None) or getattr(rec.key, "group_id", None)
            if gid not in groups:
                continue
            sigs.add(record_signature(rec, r["timestamp"], {"transactional": b["is_transactional"],
                                                           "producer_id": b["producer_id"],
                                                           "base_sequence": b["base_sequence"]}))
            batches[(r["partition"], b["base_offset"])].append(rec)
    shapes = {batch_shape(recs) for recs in batches.values()}
    return sigs, shapes


def simulated(scenarios: list[str], groups: set[str], seconds: int = 120):
    sim = Simulation(scenarios, seed=9)
    sink = MemorySink()
    sim.run_until(seconds * 1000, sink)
    sigs, shapes = set(), set()
    for e in sink.entries:
        if not isinstance(e, Append):
            continue
        recs = [decode_record(k, v) for k, v in e.records]
        gid = getattr(recs[0].key, "group", None) or getattr(recs[0].key, "group_id", None)
        if gid not in groups:
            continue
        batch = {"transactional": e.transactional, "producer_id": e.producer_id, "base_sequence": 0}
        sigs.update(record_signature(r, e.timestamp, batch) for r in recs)
        shapes.add(batch_shape(recs))
    return sigs, shapes


# (simulated scenarios, simulated groups, capture, captured groups, why these are the same kind of group)
CASES = [
    pytest.param(["steady", "static-restart", "stopped"], {"steady-range", "steady-roundrobin", "static", "stopped"},
                 "a_classic", {"sa-range", "sa-roundrobin", "sa-static"},
                 id="classic-eager: range/roundrobin, dynamic and static members, members leaving, group emptied"),
    pytest.param(["storm"], {"storm"}, "a_classic", {"sa-coop"},
                 id="classic-cooperative-sticky: incremental rebalances with follow-up generations"),
    pytest.param(["kip848"], {"kip848-uniform", "kip848-range"}, "c_consumer_protocol", {"sc-uniform", "sc-range"},
                 id="kip848: uniform and range server assignors; joins, revocation, leaves, session expiry, emptied"),
]


@pytest.mark.parametrize("sim_scenarios, sim_groups, capture, real_groups", CASES)
def test_simulated_records_look_like_real_ones(captures, sim_scenarios, sim_groups, capture, real_groups):
    real_sigs, real_shapes = captured(captures, capture, real_groups)
    sim_sigs, sim_shapes = simulated(sim_scenarios, sim_groups)
    # offset-commit signatures that depend only on the client's commit mode: compare the mode-free part
    assert sim_sigs - real_sigs == set(), "record patterns the real broker never wrote"
    assert sim_shapes - real_shapes == set(), "batch shapes the real broker never wrote"
    # and the simulator covers the real key events (everything but offset-commit variants)
    missing = {s for s in real_sigs - sim_sigs if s[0] != 1}
    assert missing == set(), "real record patterns the simulator never produced"


def test_transactional_batches_look_like_real_ones(captures):
    # TxnOffsetCommit batches: transactional, producer id set, base sequence 0, v3 values, no leader epoch
    real_sigs, real_shapes = captured(captures, "d_transactions", {"sd-txn-classic", "sd-txn-consumer"})
    sim_sigs, sim_shapes = simulated(["transactional"], {"txn-classic", "txn-consumer"}, 20)
    assert {s for s in sim_sigs if s[0] == 1} == {s for s in real_sigs if s[0] == 1}
    assert sim_shapes - real_shapes == set()
