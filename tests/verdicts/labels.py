"""Checks a verdict timeline against a recording's ``labels.json`` (the verdicts an SRE expects, derived from what
the recording's clients did). Each label becomes one :class:`LabelResult`; the semantics follow the labels file's
own ``semantics`` block:

* group ``expect`` (mode ``at_least_once``): the verdict is reported inside ``[from_ms, to_ms]``, first by
  ``deadline_ms`` when given;
* group ``never``: none of the verdicts is reported (inside the interval when one is given);
* partition ``status`` (mode ``throughout``): the partition's status over the interval is ``status`` or one of
  ``allowed``; a stretch of ``allowed_transient.status`` up to ``max_s`` is tolerated; never one of ``not``;
* partition ``status`` (mode ``at_least_once``): reported at least once in the interval;
* partition ``not`` alone: never one of those statuses (inside the interval when given).

``partition: "*"`` means every partition of the group the timeline knows; a group with none fails the label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from streaming.offline.recording import TimelineEntry

__all__ = ["LabelResult", "check_labels", "status_stretches"]

FAR = 2**62


@dataclass(frozen=True, slots=True)
class LabelResult:
    label: dict
    ok: bool
    detail: str

    def describe(self, t0: int) -> str:
        lb = self.label
        what = lb.get("expect") or lb.get("status") or ("never " + ",".join(lb["never"]) if "never" in lb else
                                                        "not " + ",".join(lb.get("not", [])))
        where = lb.get("partition", "")
        span = ""
        if "from_ms" in lb:
            span = f"{(lb['from_ms'] - t0) / 1000:6.1f}-{(lb['to_ms'] - t0) / 1000:6.1f}s"
        return f"{'PASS' if self.ok else 'FAIL'} {lb['group']:<10} {where:<14} {span:<16} {what:<22} {self.detail}"


def status_stretches(timeline: Sequence[TimelineEntry], group: str, topic: str, partition: int,
                     end_ms: int) -> list[tuple[int, int, str]]:
    """``(start, end, status)`` stretches of one partition, from its first status to ``end_ms``."""
    changes = [e for e in timeline if e.scope == "partition" and e.group == group and e.topic == topic
               and e.partition == partition]
    out = []
    for a, b in zip(changes, changes[1:] + [None]):
        out.append((a.t_ms, end_ms if b is None else b.t_ms, a.verdict))
    return out


def _partitions(timeline, group: str, spec: str) -> list[tuple[str, int]]:
    if spec != "*":
        topic, _, p = spec.rpartition(":")
        return [(topic, int(p))]
    return sorted({(e.topic, e.partition) for e in timeline if e.scope == "partition" and e.group == group})


def _check_status(timeline, lb: dict, end_ms: int) -> tuple[bool, str]:
    parts = _partitions(timeline, lb["group"], lb["partition"])
    if not parts:
        return False, "no partition of this group has a status"
    lo, hi = lb.get("from_ms", -FAR), lb.get("to_ms", FAR)
    want = lb.get("status")
    allowed = set(lb.get("allowed", [])) | ({want} if want else set())
    forbidden = set(lb.get("not", []))
    transient = lb.get("allowed_transient")
    problems = []
    for topic, p in parts:
        stretches = [(max(a, lo), min(b, hi), s) for a, b, s in status_stretches(timeline, lb["group"], topic, p, end_ms)
                     if b > lo and a <= hi]
        name = f"{topic}:{p}"
        if lb.get("mode") == "at_least_once":
            if not any(s == want for _, _, s in stretches):
                problems.append(f"{name} never {want}")
            continue
        if "from_ms" in lb and lb.get("mode") == "throughout":
            first = [s for s in status_stretches(timeline, lb["group"], topic, p, end_ms) if s[0] <= lo]
            if not first:
                problems.append(f"{name} had no status yet at the interval's start")
                continue
        for a, b, s in stretches:
            if s in forbidden:
                problems.append(f"{name} {s} at {a}")
            elif allowed and s not in allowed:
                if transient and s == transient["status"] and (b - a) / 1000 <= transient["max_s"]:
                    continue
                problems.append(f"{name} {s} for {(b - a) / 1000:.1f}s from {a}")
    return not problems, "; ".join(problems[:4]) + (f" (+{len(problems) - 4})" if len(problems) > 4 else "")


def _check_group(timeline, lb: dict) -> tuple[bool, str]:
    group_events = [e for e in timeline if e.scope == "group" and e.group == lb["group"]]
    lo, hi = lb.get("from_ms", -FAR), lb.get("to_ms", FAR)
    if "expect" in lb:
        hits = [e for e in group_events if e.verdict == lb["expect"] and lo <= e.t_ms <= hi]
        if not hits:
            seen = ", ".join(f"{e.verdict}@{e.t_ms}" for e in group_events) or "nothing"
            return False, f"not reported in the interval (saw {seen})"
        deadline = lb.get("deadline_ms")
        if deadline is not None and hits[0].t_ms > deadline:
            return False, f"first reported {(hits[0].t_ms - deadline) / 1000:.1f}s after the deadline"
        return True, f"first at {hits[0].t_ms}"
    bad = [e for e in group_events if e.verdict in lb["never"] and lo <= e.t_ms <= hi]
    if bad:
        return False, ", ".join(f"{e.verdict}@{e.t_ms}" for e in bad)
    return True, ""


def check_labels(timeline: Sequence[TimelineEntry], labels: dict) -> list[LabelResult]:
    end_ms = labels["end_ms"]
    out = []
    for lb in labels["labels"]:
        if "partition" in lb:
            ok, detail = _check_status(timeline, lb, end_ms)
        else:
            ok, detail = _check_group(timeline, lb)
        out.append(LabelResult(lb, ok, detail))
    return out
