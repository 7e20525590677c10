"""The simulator's own record of the truth: every group as Kafka's loader would restore it from the log now.

This is the test oracle. It is kept by the coordinator emulation as it writes (never by replaying its records):
classic groups as of their last type-2 record (Stable with members, or Empty; in-memory rebalance phases are not in
the log, docs/kafka-formats.md#group-states), KIP-848 groups with epochs, members, target and current assignments (all of which the 4.0
coordinator persists on every change), committed offsets after transactional settlement and tombstones.
:func:`project` turns ``streaming.model.describe.describe(...)`` output into the same shape for comparison.
"""

from __future__ import annotations

from .coordinator import ClassicGroupSim, ConsumerGroupSim

__all__ = ["expected_groups", "project"]


def _offsets(store) -> dict[str, list]:
    return {f"{t}:{p}": [c.offset, c.metadata, None if c.leader_epoch < 0 else c.leader_epoch]
            for (t, p), c in sorted(store.items())}


def _tps(tps) -> list[list]:
    return [[t, p] for t, p in sorted(tps)]


def expected_groups(sim) -> dict[str, dict]:
    co = sim.coordinator
    out: dict[str, dict] = {}
    for gid in sorted(set(co.groups) | set(co.offsets)):
        g = co.groups.get(gid)
        offsets = _offsets(co.offsets.get(gid, {}))
        if g is None:  # a "simple" group: offsets only (Kafka creates an empty classic group without protocol)
            out[gid] = {"type": "CLASSIC", "state": "EMPTY", "protocol_type": None, "assignor": "", "generation": 0,
                        "assignment_epoch": None, "leader": None, "members": {}, "offsets": offsets}
        elif isinstance(g, ClassicGroupSim):
            p = g.persisted
            out[gid] = {"type": "CLASSIC", "state": p["state"], "protocol_type": p["protocol_type"],
                        "assignor": p["protocol"] or "", "generation": p["generation"], "assignment_epoch": None,
                        "leader": p["leader"],
                        "members": {mid: {**m, "assignment": _tps(m["assignment"]), "target_assignment": None,
                                          "member_epoch": None, "member_state": None}
                                    for mid, m in p["members"].items()},
                        "offsets": offsets}
        else:
            assert isinstance(g, ConsumerGroupSim)
            assignor = next((m.server_assignor for m in g.members.values() if m.server_assignor),
                            co.config.default_server_assignor)
            out[gid] = {"type": "CONSUMER", "state": g.state, "protocol_type": None, "assignor": assignor,
                        "generation": g.group_epoch, "assignment_epoch": g.assignment_epoch, "leader": None,
                        "members": {mid: {"client_id": m.client_id, "host": m.host, "group_instance_id": m.instance_id,
                                          "assignment": _tps(m.assigned),
                                          "target_assignment": _tps(g.target.get(mid, ())),
                                          "member_epoch": m.member_epoch, "member_state": m.state.name}
                                    for mid, m in g.members.items()},
                        "offsets": offsets}
    return out


def project(described: dict) -> dict[str, dict]:
    """``describe()`` output reduced to the oracle's shape (same keys, same value forms)."""
    out: dict[str, dict] = {}
    for gid, d in described["groups"].items():
        classic = d["type"] == "CLASSIC"
        out[gid] = {
            "type": d["type"], "state": d["state"], "protocol_type": d["protocol_type"],
            "assignor": d["partition_assignor"],
            "generation": d["generation"] if classic else d["group_epoch"],
            "assignment_epoch": d["assignment_epoch"], "leader": d["leader"],
            "members": {m["member_id"]: {"client_id": m["client_id"], "host": m["host"],
                                         "group_instance_id": m["group_instance_id"],
                                         "assignment": sorted(m["assignment"]),
                                         "target_assignment": None if m["target_assignment"] is None
                                         else sorted(m["target_assignment"]),
                                         "member_epoch": m["member_epoch"], "member_state": m["member_state"]}
                        for m in d["members"]},
            "offsets": {f"{o['topic']}:{o['partition']}": [o["offset"], o["metadata"], o["leader_epoch"]]
                        for o in sorted(d["offsets"], key=lambda o: (o["topic"], o["partition"]))},
        }
    return out
