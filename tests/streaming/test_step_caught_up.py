"""When a shard step reports itself caught up with ``__consumer_offsets``.

Statuses and every alert are gated on it, so it must not flap on a live cluster (a batch carrying a heartbeat newer
than its own offset range) and must stay false while history is replayed.
"""

from __future__ import annotations

import pyarrow as pa

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.job.step import ShardStep, StepConfig
from streaming.schema.tables import SOURCE

SHARD = 3
T0 = 1_767_225_600_000


def _rows(commits: range, heartbeats: list[tuple[int, int]]) -> pa.Table:
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
    assert not _caught_up(step, _rows(range(0, 50), []))
    assert not _caught_up(step, _rows(range(50, 60), [(T0 + 1000, 100)])), "10 of 100 records read, 40 to go"
    assert _caught_up(step, _rows(range(60, 100), []))


def test_a_heartbeat_newer_than_the_batch_does_not_make_a_live_job_look_behind():
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert _caught_up(step, _rows(range(0, 100), [(T0 + 1000, 100)]))
    # The next batch's offset range ends at 120, but it also carries a heartbeat emitted after that range was
    # planned (LSO 125). Everything written up to the previous heartbeat is applied: still caught up.
    assert _caught_up(step, _rows(range(100, 120), [(T0 + 2000, 125)]))
    # A job that falls behind the previous heartbeat is behind.
    assert not _caught_up(step, _rows(range(120, 122), [(T0 + 3000, 300)]))
    assert not _caught_up(step, _rows(range(122, 200), [(T0 + 4000, 400)])), "300 was there a heartbeat ago"
    assert _caught_up(step, _rows(range(200, 300), []))


def test_replaying_history_is_never_caught_up():
    """A job started on a long log: many heartbeats in its first batches, a little of the log read each time."""
    step = ShardStep(SHARD, StepConfig())
    hbs = [(T0 + i * 1000, 5000 + i * 10) for i in range(20)]
    for start in range(0, 1000, 100):
        assert not _caught_up(step, _rows(range(start, start + 100), hbs[:2] if start == 0 else []))


def test_the_previous_heartbeat_survives_the_state_round_trip():
    step = ShardStep(SHARD, StepConfig())
    _caught_up(step, _rows(range(0, 100), [(T0 + 1000, 100)]))
    restored = ShardStep(SHARD, StepConfig(), step.state())
    assert _caught_up(restored, _rows(range(100, 110), [(T0 + 2000, 130)]))


def test_a_loaded_live_job_stays_caught_up_for_the_grace_then_reports_behind():
    """Two heartbeats newer than a batch's records (a slow batch on a loaded machine) must not flip statuses to
    "replaying"; a job still behind once the grace has passed is behind."""
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=30_000))
    assert _caught_up(step, _rows(range(0, 100), [(T0 + 1000, 100)]))
    assert _caught_up(step, _rows(range(100, 101), [(T0 + 2000, 150), (T0 + 3000, 200)])), "within the grace"
    assert _caught_up(step, _rows(range(101, 150), [(T0 + 20_000, 250)])), "still within the grace"
    assert not _caught_up(step, _rows(range(150, 160), [(T0 + 40_000, 400)])), "behind for longer than the grace"
    assert _caught_up(step, _rows(range(160, 400), [])), "caught up again"


def test_a_restart_after_a_long_stop_is_not_caught_up_from_the_old_state():
    step = ShardStep(SHARD, StepConfig())
    assert _caught_up(step, _rows(range(0, 100), [(T0 + 1000, 100)]))
    restored = ShardStep(SHARD, StepConfig(), step.state())
    assert not _caught_up(restored, _rows(range(100, 110), [(T0 + 3_600_000, 5000), (T0 + 3_601_000, 5100)]))


def test_a_log_that_ends_in_a_transaction_marker_is_caught_up_from_its_quiet_tail():
    # Records 0..98, then a COMMIT marker at 99 (a transactional offset commit): the LSO is 100 and offset 99 never
    # arrives. Without the tail probe's word the shard stays one offset behind for as long as nothing is written.
    step = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert not _caught_up(step, _rows(range(0, 99), [(T0 + 1000, 100)]))

    def heartbeat(ts: int, seq: int, quiet_from: int) -> pa.Table:
        (value,) = encode_heartbeats(ts, "test", seq, [("__consumer_offsets", SHARD, 100, 100, 0)],
                                     quiet=[("__consumer_offsets", SHARD, 100, quiet_from)])
        return pa.Table.from_pylist([{"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0,
                                      "offset": seq, "timestamp": ts * 1000}], schema=SOURCE)

    # Nothing is delivered from 99 to the end: everything there is has been read.
    assert _caught_up(step, heartbeat(T0 + 2000, 1, 99))
    # A quiet tail that starts after the last record read does not cover the records before it.
    behind = ShardStep(SHARD, StepConfig(caught_up_grace_ms=0))
    assert not _caught_up(behind, _rows(range(0, 90), [(T0 + 1000, 100)]))
    assert not _caught_up(behind, heartbeat(T0 + 2000, 1, 99))
