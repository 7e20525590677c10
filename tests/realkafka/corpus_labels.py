"""Labels for the corpus recordings, derived from what the clients did (``client_events.jsonl``) and nothing else.

Why a module of its own: the labels are the oracle of the verdict tests, so the rules that turn a client log into
expected verdicts must be readable apart from the code that drives the clients, and must never look at what the
model says. Every function takes the client log of one shape and returns label dicts in the layout
``tests/verdicts/labels.py`` checks (the layout of ``labels.json`` described in ``docs/recordings.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

__all__ = ["ClientLog", "expect", "never", "status", "never_status", "at_least_once", "labels_file", "SEMANTICS"]

SEMANTICS = {
    "time": "from_ms/to_ms are epoch milliseconds on the clock of the records, the end-offset samples and the "
            "client log; *_rel_s are seconds after t0_ms",
    "group.expect": "mode at_least_once: the verdict is reported for the group at least once inside "
                    "[from_ms, to_ms]; deadline_ms, when given, bounds the first report",
    "group.never": "none of these verdicts is reported for the group (inside [from_ms, to_ms] when given)",
    "partition.status": "mode throughout: every status of the partition inside [from_ms, to_ms] is `status` or "
                        "one of `allowed`, never one of `not`; allowed_transient tolerates a short stretch; "
                        "mode at_least_once: reported at least once inside the interval; partition '*' = every "
                        "partition of the group",
    "tolerance": "grace_s is already applied to from_ms (from_ms = the client action event_ms + grace_s)",
}


@dataclass(frozen=True)
class ClientLog:
    """The client log of one shape: driver actions (process starts, signals, exits, producer rates, operator
    commands) and what each member printed (assignments, commits, pauses, blocks)."""

    events: tuple[dict, ...]

    @classmethod
    def of(cls, events: Iterable[dict]) -> "ClientLog":
        return cls(tuple(sorted(events, key=lambda e: e["t_ms"])))

    def select(self, event: str, **match) -> list[dict]:
        return [e for e in self.events if e["event"] == event and all(e.get(k) == v for k, v in match.items())]

    def times(self, event: str, **match) -> list[int]:
        return [e["t_ms"] for e in self.select(event, **match)]

    def first(self, event: str, **match) -> int:
        found = self.times(event, **match)
        if not found:
            raise LookupError(f"the client log has no {event} {match}: the shape did not play as scripted")
        return found[0]

    def last(self, event: str, **match) -> int:
        found = self.times(event, **match)
        if not found:
            raise LookupError(f"the client log has no {event} {match}: the shape did not play as scripted")
        return found[-1]

    @property
    def t0(self) -> int:
        return self.first("scenario_t0")

    @property
    def end(self) -> int:
        return self.first("recorder_stopping")

    def churn(self, group: str) -> list[int]:
        """Every membership change a client caused: process starts, kills, crashes, clean stops, blocks."""
        kinds = ("process_start", "signal")
        return sorted(e["t_ms"] for e in self.events if e.get("group") == group and e["event"] in kinds)

    def partitions_of(self, member: str, before_ms: int) -> list[str]:
        """The partitions the member held at ``before_ms``, from its own assignment callbacks."""
        held: set[str] = set()
        for e in self.events:
            if e["t_ms"] > before_ms or e.get("member") != member:
                continue
            if e["event"] == "assigned":
                held |= set(e["partitions"])
            elif e["event"] in ("revoked", "lost"):
                held -= set(e["partitions"])
        return sorted(held)


def expect(group: str, verdict: str, from_ms: int, to_ms: int, why: str, *, deadline_ms: int | None = None,
           event_ms: int | None = None) -> dict:
    out = {"group": group, "expect": verdict, "mode": "at_least_once", "from_ms": from_ms, "to_ms": to_ms,
           "why": why}
    if deadline_ms is not None:
        out["deadline_ms"] = deadline_ms
    if event_ms is not None:
        out["event_ms"] = event_ms
    return out


def never(group: str, verdicts: list[str], why: str, *, from_ms: int | None = None, to_ms: int | None = None) -> dict:
    out: dict = {"group": group, "never": verdicts, "why": why}
    if from_ms is not None:
        out.update(from_ms=from_ms, to_ms=to_ms)
    return out


def status(group: str, partition: str, want: str | None, from_ms: int, to_ms: int, why: str, *,
           not_: tuple[str, ...] = (), allowed: tuple[str, ...] = (), event_ms: int | None = None,
           grace_s: float | None = None, transient: tuple[str, float] | None = None) -> dict:
    out: dict = {"group": group, "partition": partition, "mode": "throughout", "from_ms": from_ms, "to_ms": to_ms,
                 "why": why}
    if want:
        out["status"] = want
    if allowed:
        out["allowed"] = list(allowed)
    if not_:
        out["not"] = list(not_)
    if event_ms is not None:
        out["event_ms"] = event_ms
    if grace_s is not None:
        out["grace_s"] = grace_s
    if transient:
        out["allowed_transient"] = {"status": transient[0], "max_s": transient[1]}
    return out


def never_status(group: str, statuses: list[str], why: str) -> dict:
    """None of ``statuses`` on any partition of the group, over the whole recording."""
    return {"group": group, "partition": "*", "not": statuses, "why": why}


def at_least_once(group: str, partition: str, want: str, from_ms: int, to_ms: int, why: str,
                  event_ms: int | None = None) -> dict:
    out = {"group": group, "partition": partition, "status": want, "mode": "at_least_once", "from_ms": from_ms,
           "to_ms": to_ms, "deadline_ms": to_ms, "why": why}
    if event_ms is not None:
        out["event_ms"] = event_ms
    return out


def labels_file(shape: str, log: ClientLog, labels: list[dict], notes: list[str]) -> dict:
    """The whole ``labels.json``: the labels with their times also in seconds after the start."""
    t0 = log.t0
    for lb in labels:
        for key in ("from_ms", "to_ms", "deadline_ms", "event_ms"):
            if key in lb:
                lb[key.replace("_ms", "_rel_s")] = round((lb[key] - t0) / 1000, 3)
    return {"scenario": shape, "t0_ms": t0, "end_ms": log.end,
            "derived_from": "client_events.jsonl only (process starts, signals, exits, callbacks, commits, "
                            "pauses, producer rates, operator commands); the recording was not looked at",
            "semantics": SEMANTICS, "labels": labels, "notes": notes}
