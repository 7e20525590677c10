"""Offset bookkeeping of the Spark source as plain functions: where to start, how far to read under a rate limit,
how to split a batch into read tasks. Kept free of Spark and Kafka so the rules are unit-tested directly."""

from __future__ import annotations

from typing import Mapping

from .reader import OffsetRange

__all__ = ["Offsets", "to_json_offsets", "from_json_offsets", "limit_offsets", "plan_ranges", "split_tasks"]

Offsets = dict[tuple[str, int], int]


def to_json_offsets(offsets: Offsets) -> dict[str, dict[str, int]]:
    """Spark checkpoints offsets as a JSON-able dict: ``{topic: {"partition": offset}}``."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_json_offsets(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(topic, int(p)): int(o) for topic, parts in data.items() for p, o in parts.items()}


def limit_offsets(start: Offsets, end: Offsets, max_rows: int | None, *, unlimited_topics: frozenset[str] = frozenset()) -> Offsets:
    """The end offsets of the next batch: everything available, or at most ``max_rows`` records shared across
    partitions in proportion to what each has waiting (Spark's Kafka source rule). Topics in ``unlimited_topics``
    (the small heartbeat topic) are always read in full so the model's clock never falls behind its data."""
    target = {tp: max(end[tp], start.get(tp, 0)) for tp in end}
    if max_rows is None:
        return target
    waiting = {tp: target[tp] - start.get(tp, 0) for tp in target if tp[0] not in unlimited_topics}
    total = sum(waiting.values())
    if total <= max_rows:
        return target
    out = dict(target)
    budget = max_rows
    for tp, n in sorted(waiting.items()):
        share = min(n, max(1, int(max_rows * n / total))) if n else 0
        share = min(share, budget)
        budget -= share
        out[tp] = start.get(tp, 0) + share
    return out


def plan_ranges(start: Offsets, end: Offsets) -> list[OffsetRange]:
    return [OffsetRange(t, p, start.get((t, p), 0), e) for (t, p), e in sorted(end.items()) if e > start.get((t, p), 0)]


def split_tasks(ranges: list[OffsetRange], tasks: int,
                named: frozenset[str] = frozenset()) -> list[list[OffsetRange]]:
    """Groups ranges into at most ``tasks`` read tasks of similar size (largest first onto the lightest task).

    About as many tasks as cores: one task per partition made batches several times slower (task overhead).
    Ranges of the ``named`` topics are only named by the read tasks (the shard steps read them), so they ride with
    the first task and weigh nothing in the split: a task of their own would cost a Python worker's start and stop
    for a few markers (a live batch's read stage took 134–137 ms of task time with two, 61–62 ms with one:
    ``benchmarks/bench_latency.py``)."""
    read = [r for r in ranges if r.topic not in named]
    tasks = max(1, tasks)
    bins: list[list[OffsetRange]] = [[] for _ in range(min(tasks, len(read)) or 1)]
    loads = [0] * len(bins)
    for r in sorted(read, key=lambda r: (-r.size, r.topic, r.partition)):
        i = loads.index(min(loads))
        bins[i].append(r)
        loads[i] += r.size
    bins[0][:0] = [r for r in ranges if r.topic in named]
    return [b for b in bins if b]
