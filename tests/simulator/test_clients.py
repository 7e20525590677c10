"""The simulated clients commit as the real ones do (librdkafka and Kafka's client rules): ``changed`` commits only
partitions that moved, with their leader epoch; ``sync`` re-commits every partition with epoch -1 and its metadata;
``none`` never commits; a crashed classic member commits nothing, sends no LeaveGroup and is removed only when its
session times out. Checked on the records the coordinator wrote, decoded."""

from __future__ import annotations

import pytest

from protocol.codec import decode_record
from protocol.records import RecordType
from streaming.simulator import ConsumerConfig, MemorySink, SimConsumer, SimpleConsumer, Simulation

TOPIC = "steady-payments"  # 3 partitions at 10 messages per second each in the ``steady`` scenario


def _run(config: ConsumerConfig, until_ms: int, actions: dict[int, str] | None = None) -> tuple[Simulation, list]:
    """``steady`` plus one consumer of ``config``; ``actions``: ms -> "pause-topic" | "crash". Returns the records
    (elapsed ms, decoded record) of the consumer's group."""
    sim, sink = Simulation(["steady"], seed=1), MemorySink()
    sim.bind(sink)
    client = sim.start_client(SimConsumer(sim, config))
    for at_ms, action in (actions or {}).items():
        sim.at(at_ms / 1000, {"pause-topic": lambda: sim.set_rate(TOPIC, 0), "crash": client.crash}[action])
    sim.run_until(until_ms)
    out = []
    for e in sink.entries:
        for key, value in getattr(e, "records", ()):
            record = decode_record(key, value)
            if getattr(record.key, "group", None) == config.group:
                out.append((e.timestamp - sim.sched.start_ms, record))
    return sim, out


def _commits(records: list) -> list[tuple[int, int, int, int, str]]:
    """(ms, partition, offset, leader epoch, metadata) of each OffsetCommit."""
    return [(t, r.key.partition, r.value.offset, r.value.leader_epoch, r.value.metadata) for t, r in records
            if r.type == RecordType.OFFSET_COMMIT]


@pytest.mark.parametrize("bad,message", [
    (dict(protocol="share"), "protocol must be classic or consumer"),
    (dict(commit="sometimes"), "commit must be one of auto, changed, sync, async, none"),
    (dict(auto_offset_reset="middle"), "auto_offset_reset must be latest or earliest"),
])
def test_a_config_kafka_would_not_accept_is_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        ConsumerConfig("g", "c", (TOPIC,), **bad)


def test_changed_commits_moved_partitions_every_second_and_nothing_when_idle():
    _, records = _run(ConsumerConfig("solo", "solo-1", (TOPIC,), commit="changed"), 20_000, {10_500: "pause-topic"})
    commits = _commits(records)
    assert commits, "the member committed while the topic moved"
    assert {epoch for _, _, _, epoch, _ in commits} == {0}, "librdkafka commits the fetched leader epoch"
    times = sorted({t for t, *_ in commits})
    assert all(b - a == 1000 for a, b in zip(times, times[1:])), times
    # Keeping up with 10 messages per second from an empty start: each commit is the partition's end then, 10 per
    # elapsed second; paused at 10.5 s, the end stays at 105, reached by the 11 s commit, and nothing moves after.
    assert {p for _, p, *_ in commits} == {0, 1, 2}
    assert all(offset == min(t, 10_500) // 100 for t, _, offset, _, _ in commits), commits
    assert max(times) == 11_000


def test_sync_recommits_every_partition_with_no_epoch_even_when_idle():
    config = ConsumerConfig("solo", "solo-1", (TOPIC,), commit="sync", metadata="app-v2")
    _, records = _run(config, 20_000, {10_500: "pause-topic"})
    commits = _commits(records)
    late = [c for c in commits if c[0] > 12_000]
    assert late and {(p, offset) for _, p, offset, _, _ in late} == {(p, 105) for p in range(3)}, \
        "the same offsets again: 10.5 s at 10 messages per second"
    assert {(epoch, metadata) for *_, epoch, metadata in commits} == {(-1, "app-v2")}


def test_a_member_that_never_commits_writes_no_offsets():
    _, records = _run(ConsumerConfig("solo", "solo-1", (TOPIC,), commit="none"), 15_000)
    assert not _commits(records)
    assert any(r.type == RecordType.GROUP_METADATA for _, r in records), "it is in the group all the same"


def test_a_crashed_member_commits_nothing_and_leaves_only_when_its_session_expires():
    config = ConsumerConfig("solo", "solo-1", (TOPIC,), commit="changed", session_timeout_ms=10_000)
    _, records = _run(config, 40_000, {8_500: "crash"})
    assert max(t for t, *_ in _commits(records)) <= 8_500
    metadata = [(t, r.value) for t, r in records if r.type == RecordType.GROUP_METADATA]
    with_member = [t for t, v in metadata if v is not None and v.members]
    assert with_member and max(with_member) < 8_500
    empty = [t for t, v in metadata if v is not None and not v.members and t > max(with_member)]
    # No LeaveGroup: the group empties only once 10 s pass without a heartbeat (the last one came at most one
    # heartbeat interval, 3 s, before the crash).
    assert empty and 8_500 + 10_000 - 3_000 <= min(empty) <= 8_500 + 10_000


def test_a_simple_consumer_commits_with_generation_less_membership():
    sim, sink = Simulation(["steady"], seed=1), MemorySink()
    sim.bind(sink)
    sim.start_client(SimpleConsumer(sim, "solo", ((TOPIC, 1),), interval_ms=5000))
    sim.run_until(21_000)
    records = [(e.timestamp - sim.sched.start_ms, r) for e in sink.entries
               for r in (decode_record(k, v) for k, v in getattr(e, "records", ()))
               if getattr(r.key, "group", None) == "solo"]
    assert [r.type for _, r in records] == [RecordType.OFFSET_COMMIT] * 4, "no group metadata: it never joins"
    assert [(t, r.key.partition, r.value.offset) for t, r in records] == [
        (t, 1, t // 100) for t in (5_000, 10_000, 15_000, 20_000)]
