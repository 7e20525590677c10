"""The job's per-shard step (``streaming.job.step``): what a batch of source rows makes of the model and which
tables it hands on.

- When a step reports itself caught up with ``__consumer_offsets``. Statuses and every alert are gated on it, so it
  must not flap on a live cluster (a batch carrying a heartbeat newer than its own offset range) and must stay false
  while history is replayed.
- A batch's heartbeats and records meet the model in time order. After a broker outage the first batch can carry the
  heartbeat taken just before the broker stopped together with the commits written after it came back. Applied
  records first, the model would see a commit 30 s past its clock (Kafka away), then the older heartbeat (Kafka
  back, after 2 s), then the next one (a second outage): two outage reports, the first of them 2 s long and naming
  the wrong groups.
- Topic names from Kafka 4.1+ offset commits, as the record-by-record replay learns them. From Kafka 4.1 the
  coordinator no longer writes a consumer group's subscription metadata (the record that named its topic ids), and
  an offset commit value v4 carries the topic id instead. The step replays commits from its vectorized columns, not
  through the record-by-record path; without taking the id from there, a KIP-848 member's partitions kept their ids
  and no lag row named its owner (seen against a real Kafka 4.4 broker).
- Per-partition figures as fresh as the group ones: a commit shows in the per-partition rows of the batch that
  applies it, not at the shard's next full snapshot; the Delta ``lag`` table keeps its own interval.
- Aborted transactions at the end of a partition (the heartbeat's ``quiet`` rows) are not lag, and a measured time
  lag (the heartbeat's ``oldest`` rows) is preferred to an interpolated one.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from protocol import Uuid
from protocol.builders import (new_consumer_group_epoch, new_consumer_group_member, new_current_assignment,
                               new_offset_commit)
from protocol.codec import encode_record
from streaming.job.lagging import LAGGING, lagging_of
from streaming.job.step import METRICS_PARTITIONS, ShardStep, StepConfig
from streaming.kafka.oldest_probe import Lagging
from streaming.model import events as ev
from streaming.model.rules import Status
from streaming.schema.heartbeat_format import OldestRecord, encode_heartbeats
from streaming.schema.tables import SOURCE
from tests.job.step_input import (FRESHNESS_SHARD, commits_then_heartbeat, one_partition_commit_then_heartbeats,
                                  snapshot_an_hour_away)

#: The shard of the caught-up, time-order, transaction-tail and time-lag checks.
SHARD = 3
T0 = 1_767_225_600_000


# ---- caught up with __consumer_offsets ---------------------------------------------------------------------------

def _batch(commits: range, heartbeats: list[tuple[int, int]]) -> pa.Table:
    """Commit records at the given offsets of the shard's partition, then heartbeats ``(time, lso)``."""
    rows = []
    for off in commits:
        key, value = encode_record(new_offset_commit("g", "t", 0, off, commit_timestamp=T0 + off))
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD, "offset": off,
                     "timestamp": (T0 + off) * 1000})
    for i, (ts, lso) in enumerate(heartbeats):
        (value,) = encode_heartbeats(ts, "test", i, [("__consumer_offsets", SHARD, lso, lso, 0),
                                                     ("t", 0, 10_000, 10_000, 0)])
        rows.append({"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": i,
                     "timestamp": ts * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def _caught_up(step: ShardStep, rows: pa.Table) -> bool:
    _, health = step.process(rows, wall_ms=T0 + 100_000)
    return health.caught_up


def test_not_caught_up_without_a_heartbeat_then_up_to_the_lso():
    step = ShardStep(SHARD, StepConfig())
    assert not _caught_up(step, _batch(range(0, 50), []))
    assert not _caught_up(step, _batch(range(50, 60), [(T0 + 1000, 100)])), "10 of 100 records read, 40 to go"
    assert _caught_up(step, _batch(range(60, 100), []))


def test_a_heartbeat_newer_than_the_batch_does_not_make_a_live_job_look_behind():
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert _caught_up(step, _batch(range(0, 100), [(T0 + 1000, 100)]))
    # The next batch's offset range ends at 120, but it also carries a heartbeat emitted after that range was
    # planned (LSO 125). Everything written up to the previous heartbeat is applied: still caught up.
    assert _caught_up(step, _batch(range(100, 120), [(T0 + 2000, 125)]))
    # A job that falls behind the previous heartbeat is behind.
    assert not _caught_up(step, _batch(range(120, 122), [(T0 + 3000, 300)]))
    assert not _caught_up(step, _batch(range(122, 200), [(T0 + 4000, 400)])), "300 was there a heartbeat ago"
    assert _caught_up(step, _batch(range(200, 300), []))


def test_replaying_history_is_never_caught_up():
    """A job started on a long log: many heartbeats in its first batches, a little of the log read each time."""
    step = ShardStep(SHARD, StepConfig())
    hbs = [(T0 + i * 1000, 5000 + i * 10) for i in range(20)]
    for start in range(0, 1000, 100):
        assert not _caught_up(step, _batch(range(start, start + 100), hbs[:2] if start == 0 else []))


def test_the_previous_heartbeat_survives_the_state_round_trip():
    step = ShardStep(SHARD, StepConfig())
    _caught_up(step, _batch(range(0, 100), [(T0 + 1000, 100)]))
    restored = ShardStep(SHARD, StepConfig(), step.state())
    assert _caught_up(restored, _batch(range(100, 110), [(T0 + 2000, 130)]))


def test_a_loaded_live_job_stays_caught_up_for_the_grace_then_reports_behind():
    """Two heartbeats newer than a batch's records (a slow batch on a loaded machine) must not flip statuses to
    "replaying"; a job still behind once the grace has passed is behind."""
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=30_000))
    assert _caught_up(step, _batch(range(0, 100), [(T0 + 1000, 100)]))
    assert _caught_up(step, _batch(range(100, 101), [(T0 + 2000, 150), (T0 + 3000, 200)])), "within the grace"
    assert _caught_up(step, _batch(range(101, 150), [(T0 + 20_000, 250)])), "still within the grace"
    assert not _caught_up(step, _batch(range(150, 160), [(T0 + 40_000, 400)])), "behind for longer than the grace"
    assert _caught_up(step, _batch(range(160, 400), [])), "caught up again"


def test_a_restart_after_a_long_stop_is_not_caught_up_from_the_old_state():
    step = ShardStep(SHARD, StepConfig())
    assert _caught_up(step, _batch(range(0, 100), [(T0 + 1000, 100)]))
    restored = ShardStep(SHARD, StepConfig(), step.state())
    assert not _caught_up(restored, _batch(range(100, 110), [(T0 + 3_600_000, 5000), (T0 + 3_601_000, 5100)]))


def test_a_log_that_ends_in_a_transaction_marker_is_caught_up_from_its_quiet_tail():
    # Records 0..98, then a COMMIT marker at 99 (a transactional offset commit): the LSO is 100 and offset 99 never
    # arrives. Without the tail probe's word the shard stays one offset behind for as long as nothing is written.
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert not _caught_up(step, _batch(range(0, 99), [(T0 + 1000, 100)]))

    def heartbeat(ts: int, seq: int, quiet_from: int) -> pa.Table:
        (value,) = encode_heartbeats(ts, "test", seq, [("__consumer_offsets", SHARD, 100, 100, 0)],
                                     quiet=[("__consumer_offsets", SHARD, 100, quiet_from)])
        return pa.Table.from_pylist([{"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0,
                                      "offset": seq, "timestamp": ts * 1000}], schema=SOURCE)

    # Nothing is delivered from 99 to the end: everything there is has been read.
    assert _caught_up(step, heartbeat(T0 + 2000, 1, 99))
    # A quiet tail that starts after the last record read does not cover the records before it.
    behind = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert not _caught_up(behind, _batch(range(0, 90), [(T0 + 1000, 100)]))
    assert not _caught_up(behind, heartbeat(T0 + 2000, 1, 99))


# ---- heartbeats and records in time order ------------------------------------------------------------------------

HEARTBEAT_TOPIC = "groupscope-heartbeat"


class _Source:
    """Source rows of one shard's partition and the heartbeat topic, with offsets counted per partition."""

    def __init__(self) -> None:
        self.offset = 0
        self.seq = 0

    def commit(self, ts: int, committed: int, partition: int = 0) -> dict:
        key, value = encode_record(new_offset_commit("g", "t", partition, committed, commit_timestamp=ts))
        self.offset += 1
        return {"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD,
                "offset": self.offset - 1, "timestamp": ts * 1000}

    def heartbeat(self, ts: int) -> dict:
        (value,) = encode_heartbeats(ts, "test", self.seq, [("t", 0, 10_000, 10_000, 0),
                                                            ("__consumer_offsets", SHARD, self.offset, self.offset, 0)])
        self.seq += 1
        return {"key": None, "value": value, "topic": HEARTBEAT_TOPIC, "partition": 0, "offset": self.seq - 1,
                "timestamp": ts * 1000}


def _outages(step: ShardStep, batches: list[list[dict]]) -> list[ev.KafkaUnavailable]:
    found = []
    for rows in batches:
        tables, _ = step.process(pa.Table.from_pylist(rows, schema=SOURCE), wall_ms=T0)
        found += [r for r in (tables["group_events"].to_pylist() if "group_events" in tables else ())
                  if r["kind"] == "KafkaUnavailable"]
    return found


def test_the_heartbeat_before_an_outage_and_the_commits_after_it_in_one_batch_make_one_outage():
    src = _Source()
    before = [row for s in range(0, 12_000, 2_000) for row in (src.commit(T0 + s + 500, s), src.heartbeat(T0 + s))]
    # One batch: the last heartbeat before the broker stopped, then (30 s later) a commit and a heartbeat.
    across = [src.heartbeat(T0 + 12_000), src.commit(T0 + 42_000, 20_000), src.heartbeat(T0 + 43_000)]
    after = [row for s in range(45_000, 110_000, 2_000) for row in (src.commit(T0 + s + 500, s), src.heartbeat(T0 + s))]
    outages = _outages(ShardStep(SHARD, StepConfig()), [before, across, after])
    assert len(outages) == 1, outages
    assert outages[0]["event_time"].timestamp() * 1000 == T0 + 43_000 + 60_000  # reported when its window ended
    assert '"since_ms":%d' % (T0 + 12_000) in outages[0]["detail"].replace(" ", ""), outages[0]["detail"]
    assert '"back_ms":%d' % (T0 + 43_000) in outages[0]["detail"].replace(" ", ""), outages[0]["detail"]


def test_heartbeats_stay_in_order_when_records_are_not(monkeypatch):
    """A heartbeat goes before the first record stamped at or after it, even when a record's stamp runs back."""
    src = _Source()
    # Different partitions: a catch-up batch replays only the last commit of each partition.
    rows = [src.heartbeat(T0), src.commit(T0 + 1_000, 1, 0), src.commit(T0 + 3_000, 2, 1),
            src.commit(T0 + 2_500, 3, 2), src.heartbeat(T0 + 2_000), src.heartbeat(T0 + 4_000),
            src.commit(T0 + 5_000, 4, 3)]
    step = ShardStep(SHARD, StepConfig())
    seen: list[tuple[str, int]] = []
    shard = type(step.model)
    apply_heartbeat, replay_commit = shard.apply_heartbeat, shard.replay_offset_commit
    monkeypatch.setattr(shard, "apply_heartbeat",
                        lambda self, now, *a: (seen.append(("hb", now)), apply_heartbeat(self, now, *a))[1])
    monkeypatch.setattr(shard, "replay_offset_commit",
                        lambda self, *a: (seen.append(("rec", a[8])), replay_commit(self, *a))[1])
    step.process(pa.Table.from_pylist(rows, schema=SOURCE), wall_ms=T0)
    assert seen == [("hb", T0), ("rec", T0 + 1_000), ("hb", T0 + 2_000), ("rec", T0 + 3_000), ("rec", T0 + 2_500),
                    ("hb", T0 + 4_000), ("rec", T0 + 5_000)], seen


# ---- topic names from offset commits v4 and heartbeats -----------------------------------------------------------

TOPIC_IDS_SHARD = 7
TOPIC_ID = Uuid(bytes(range(16)))


def _offsets_rows(records) -> pa.Table:
    """The records as the source hands them to the step: ``__consumer_offsets`` rows of one shard."""
    rows = []
    for offset, record in enumerate(records):
        key, value = encode_record(record)
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": TOPIC_IDS_SHARD,
                     "offset": offset, "timestamp": (T0 + offset) * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def test_a_v4_commit_names_the_topic_of_a_consumer_group_member_assignment():
    records = [
        new_consumer_group_member("g", "m1", client_id="c1", subscribed_topic_names=["orders"]),
        new_consumer_group_epoch("g", 1),
        new_current_assignment("g", "m1", member_epoch=1, previous_member_epoch=0, assigned={TOPIC_ID: [0, 1]}),
        new_offset_commit("g", "orders", 0, 5, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
        new_offset_commit("g", "orders", 1, 6, commit_timestamp=T0, topic_id=TOPIC_ID, broker_version=(4, 4)),
    ]
    step = ShardStep(TOPIC_IDS_SHARD, StepConfig())
    step.process(_offsets_rows(records), wall_ms=T0 + 10_000)
    (member,) = step.model.member_views("g")
    assert member.assignment == (("orders", 0), ("orders", 1))
    snapshot = step.model.snapshot_groups(["g"], T0 + 10_000)[0]
    assert {(p.topic, p.partition): p.owner for p in snapshot.partitions} == {("orders", 0): "m1", ("orders", 1): "m1"}


def test_a_heartbeat_names_the_topic_a_member_was_assigned_but_never_committed_to():
    """Without a commit nothing in ``__consumer_offsets`` names the topic: the heartbeat's ``topic_ids`` does, as
    the broker's metadata (and so Kafka's tools) would."""
    records = [
        new_consumer_group_member("g", "m1", client_id="c1", subscribed_topic_names=["orders"]),
        new_consumer_group_epoch("g", 1),
        new_current_assignment("g", "m1", member_epoch=1, previous_member_epoch=0, assigned={TOPIC_ID: [0, 1]}),
    ]
    step = ShardStep(TOPIC_IDS_SHARD, StepConfig())
    step.process(_offsets_rows(records), wall_ms=T0 + 1_000)
    (member,) = step.model.member_views("g")
    assert member.assignment != (("orders", 0), ("orders", 1))  # only the id is known so far
    ends = [("orders", 0, 10, 10, 0), ("orders", 1, 12, 12, 0)]
    (value,) = encode_heartbeats(T0 + 2_000, "e", 1, ends, topic_ids=[("orders", str(TOPIC_ID)), ("x", "bad")])
    heartbeat = {"key": b"e", "value": value, "topic": StepConfig().heartbeat_topic, "partition": 0, "offset": 0,
                 "timestamp": (T0 + 2_000) * 1000}
    step.process(pa.Table.from_pylist([heartbeat], schema=SOURCE), wall_ms=T0 + 2_000)
    (member,) = step.model.member_views("g")
    assert member.assignment == (("orders", 0), ("orders", 1))


# ---- per-partition rows as fresh as the group ones ---------------------------------------------------------------

def _committed(table: pa.Table) -> dict[tuple[str, str, int], int]:
    return {(r["group_id"], r["topic"], r["partition"]): r["committed_offset"] for r in table.to_pylist()}


def test_a_commit_reaches_the_partition_rows_of_the_batch_that_applies_it():
    step = ShardStep(FRESHNESS_SHARD, snapshot_an_hour_away(partition_metrics=True))
    first, _ = step.process(commits_then_heartbeat([("g", "t", 0, 100), ("g", "t", 1, 50), ("h", "u", 0, 10)],
                                                   T0 + 1000, 0, 0))
    assert "lag" in first  # the first batch is the shard's full snapshot, due for the lag table
    assert _committed(first["lag"]) == {("g", "t", 0): 100, ("g", "t", 1): 50, ("h", "u", 0): 10}

    second, _ = step.process(commits_then_heartbeat([("g", "t", 0, 150)], T0 + 2000, 1, 3))
    assert "lag" not in second, "the Delta lag table keeps its interval"
    # Every partition of the touched group (so the metrics can replace the group's set), nothing of the others.
    assert _committed(second[METRICS_PARTITIONS]) == {("g", "t", 0): 150, ("g", "t", 1): 50}
    row = next(r for r in second[METRICS_PARTITIONS].to_pylist() if r["partition"] == 0)
    assert row["lag"] == 850 and row["log_end_offset"] == 1000

    idle, _ = step.process(commits_then_heartbeat([], T0 + 3000, 2, 4))
    assert METRICS_PARTITIONS not in idle and "lag" not in idle


def test_without_partition_metrics_no_partition_rows_between_snapshots():
    step = ShardStep(FRESHNESS_SHARD, snapshot_an_hour_away(partition_metrics=False))
    step.process(commits_then_heartbeat([("g", "t", 0, 100)], T0 + 1000, 0, 0))
    second, _ = step.process(commits_then_heartbeat([("g", "t", 0, 150)], T0 + 2000, 1, 1))
    assert METRICS_PARTITIONS not in second and "lag" not in second
    assert "groups" in second  # the group-level figures are fresh either way


# ---- the end of a partition: quiet tails and measured time lag ---------------------------------------------------

@pytest.mark.parametrize("quiet, status, lag", [(True, Status.OK, 0), (False, Status.STOP, 12)])
def test_a_consumer_that_read_up_to_an_aborted_transaction_is_not_stopped(quiet, status, lag):
    """Ten minutes of heartbeats after the consumer's last commit at 6; the partition ends at 18 (11 aborted
    records and the ABORT marker). With the probe's answer in the heartbeats it is caught up; without, it is what
    every end-offset monitor says: stopped, 12 behind."""
    beats = [encode_heartbeats(T0 + i * 5_000, "e", i, [("__consumer_offsets", 3, 1, 1, 0), ("payments", 0, 18, 18, 0)],
                               quiet=[("payments", 0, 18, 6)] if quiet else ())[0] for i in range(1, 121)]
    step = ShardStep(3, StepConfig())
    tables, _ = step.process(one_partition_commit_then_heartbeats(6, beats, T0), wall_ms=T0 + 600_000)
    snap = step.model.snapshot(T0 + 600_000)
    (group,) = snap.groups
    (part,) = group.partitions
    assert (part.lag, part.status) == (lag, status), part


def _beats(count: int, oldest_from: int = -1) -> list[bytes]:
    """Heartbeats every 5 s from T0 + 5 s; the partition's end stays at 100 throughout (the group fell behind
    before the first one); the last ``oldest_from`` ones carry the record at offset 40, written 30 min before T0."""
    ends = [("__consumer_offsets", 3, 1, 1, 0), ("payments", 0, 100, 100, 0)]
    record = OldestRecord("payments", 0, 40, 40, T0 - 1_800_000)
    return [encode_heartbeats(T0 + i * 5_000, "e", i, ends, oldest=[record] if i > count - oldest_from else ())[0]
            for i in range(1, count + 1)]


@pytest.mark.parametrize("measured", [True, False])
def test_the_model_prefers_the_measured_time_lag_and_says_which_it_is(measured):
    step = ShardStep(3, StepConfig())
    now = T0 + 60_000
    tables, health = step.process(one_partition_commit_then_heartbeats(40, _beats(12, 1 if measured else 0), T0),
                                  wall_ms=now)
    (group,) = step.model.snapshot(now).groups
    (part,) = group.partitions
    if measured:
        assert (part.lag_seconds, part.lag_seconds_lower_bound, part.lag_seconds_method) == (1_860.0, False, "measured")
    else:
        assert (part.lag_seconds, part.lag_seconds_lower_bound, part.lag_seconds_method) == (55.0, True, "interpolated")
    assert tables["lag"].column("lag_seconds_method").to_pylist() == [part.lag_seconds_method]
    assert tables["groups"].column("max_lag_seconds_method").to_pylist() == [part.lag_seconds_method]
    # the step lists the lagging offset for the emitter, with the figure it has
    assert health.full_snapshot and health.caught_up
    assert lagging_of(tables[LAGGING], [3]) == {3: [Lagging("payments", 0, 40, 60, part.lag_seconds)]}
