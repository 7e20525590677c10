"""Recordings written from client behaviour, for shapes the real recordings do not cover.

The real recordings (``tests/data``) are the truth; these are synthetic: built with groupscope's own record
builders, written by the simulator's recording writer in the same layout (``records.jsonl`` and
``end_offsets.jsonl``), and replayed through the job's own step like a real one. Each shape is written from a
documented client behaviour (named in the test that uses it), with the record order a Kafka 4.0 broker writes:
an empty classic generation before the first one with members, every commit a record of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from protocol import builders as b
from protocol.codec import encode_record
from streaming.offline.recording import load_recording, replay_recording
from streaming.simulator.recording import RecordingSink
from streaming.simulator.sinks import Append

T0 = 1_795_000_000_000
SHARD = 10


class SyntheticRecording:
    """Records of one ``__consumer_offsets`` partition, written out in the recordings' layout."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, object]] = []  # (timestamp ms, record)

    def add(self, t_s: float, record: object) -> None:
        self.rows.append((T0 + int(t_s * 1000), record))

    def commit(self, t_s: float, group: str, topic: str, partition: int, offset: int) -> None:
        self.add(t_s, b.new_offset_commit(group, topic, partition, offset, commit_timestamp=T0 + int(t_s * 1000)))

    def classic_generation(self, t_s: float, group: str, generation: int,
                           members: dict[str, tuple[str, dict[str, list[int]]]], host: str = "/127.0.0.1") -> None:
        """A classic consumer group's generation: ``members`` maps member id to (client id, assignment)."""
        stamp = T0 + int(t_s * 1000)
        if not members:
            self.add(t_s, b.new_empty_group_metadata(group, generation=generation, protocol_type="consumer",
                                                     current_state_timestamp=stamp))
            return
        views = [b.new_classic_member(mid, client_id=client, client_host=host, session_timeout=45_000,
                                      rebalance_timeout=300_000,
                                      subscription=b.new_consumer_subscription(sorted(assignment)),
                                      assignment=b.new_consumer_assignment(assignment))
                 for mid, (client, assignment) in members.items()]
        self.add(t_s, b.new_group_metadata(group, generation=generation, protocol_type="consumer", protocol="range",
                                           leader=views[0].member_id, members=views, current_state_timestamp=stamp))

    def replay(self, directory: Path, until_s: float, ends: Callable[[float], dict[tuple[str, int], int]]) -> list:
        """Writes the recording (the simulator's recording writer) with one end-offset sample a second (``ends(t)``:
        ``(topic, partition)`` -> end) and replays it; returns the verdict timeline."""
        rows = sorted(self.rows, key=lambda r: r[0])
        sink = RecordingSink(directory, segments=False)
        sink.open({}, SHARD + 1)
        try:
            offset, t = 0, 0.0
            while t <= until_s:
                stamp = T0 + int(t * 1000)
                while offset < len(rows) and rows[offset][0] <= stamp:
                    ts, record = rows[offset]
                    sink.append(Append(SHARD, offset, ts, [encode_record(record)]))
                    offset += 1
                sink.advance_topics(ends(t), stamp)
                t += 1.0
        finally:
            sink.close()
        return replay_recording(load_recording(directory))


def stretches(timeline: list, group: str, topic_partition: str, until_s: float) -> list[tuple[float, float, str]]:
    """A partition's statuses as ``(from s, to s, status)`` stretches."""
    changes = [e for e in timeline
               if e.scope == "partition" and e.group == group and f"{e.topic}:{e.partition}" == topic_partition]
    return [((a.t_ms - T0) / 1000, until_s if c is None else (c.t_ms - T0) / 1000, a.verdict)
            for a, c in zip(changes, changes[1:] + [None])]


def group_verdicts(timeline: list, group: str) -> list[tuple[float, str]]:
    return [((e.t_ms - T0) / 1000, e.verdict) for e in timeline if e.scope == "group" and e.group == group]
