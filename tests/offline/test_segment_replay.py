"""Replaying segment files into the group model (``streaming.offline.segment_replay``): Kafka's own transactional
replay (a transactional commit waits for its producer's COMMIT or ABORT marker, as the broker's loader does), an
exclusive end offset per partition, and damage counted and reported, never fatal."""

from __future__ import annotations

import struct

import pytest

from protocol.batch import encode_batch
from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.offline.segment_replay import replay_segments
from streaming.offline.segments import SegmentPathError
from tests.offline.logs import ABORT, COMMIT, T, marker, write_log


def _commit(offset: int, group: str, committed: int, *, pid: int = -1) -> bytes:
    """One offset commit of ``group`` on orders-0 as a batch at ``offset`` (transactional when ``pid`` is given)."""
    key, value = encode_record(new_offset_commit(group, "orders", 0, committed, commit_timestamp=T + offset))
    txn = {} if pid < 0 else {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0, "transactional": True}
    return encode_batch([(key, value)], base_offset=offset, base_timestamp=T + offset, **txn)


def _committed(model) -> dict[str, int]:
    return {g.group_id: p.committed for s in model.snapshot() for g in s.groups for p in g.partitions}


def test_a_committed_transaction_applies_and_an_aborted_one_does_not(tmp_path):
    write_log(tmp_path, [[_commit(0, "plain", 10), _commit(1, "won", 20, pid=7), _commit(2, "lost", 30, pid=8),
                          marker(3, 7, COMMIT), marker(4, 8, ABORT)]])
    model, report = replay_segments(tmp_path)
    assert _committed(model) == {"plain": 10, "won": 20}
    assert (report.records, report.markers, report.problems) == (3, 2, [])
    assert report.last_timestamp == T + 2, "markers are not records"


def test_a_transaction_without_its_marker_yet_is_not_applied(tmp_path):
    write_log(tmp_path, [[_commit(0, "open", 5, pid=9)]])
    model, _ = replay_segments(tmp_path)
    assert "open" not in _committed(model)


def test_the_replay_stops_before_the_end_offset_of_its_partition(tmp_path):
    write_log(tmp_path, [[_commit(0, "g", 1)], [_commit(1, "g", 2), _commit(2, "g", 3)]])
    write_log(tmp_path, [[_commit(0, "h", 7)]], partition=4)
    model, report = replay_segments(tmp_path, until={3: 2})
    assert _committed(model) == {"g": 2, "h": 7}, "partition 4 is not in until: replayed to its end"
    assert report.records == 3


def test_an_end_offset_inside_a_batch_stops_at_that_record(tmp_path):
    key = lambda n: encode_record(new_offset_commit("g", "orders", 0, n, commit_timestamp=T))  # noqa: E731
    write_log(tmp_path, [[encode_batch([key(100), key(200), key(300)], base_offset=0, base_timestamp=T)]])
    model, report = replay_segments(tmp_path, until={3: 2})
    assert _committed(model) == {"g": 200} and report.records == 2


def test_a_damaged_batch_and_an_undecodable_record_are_reported_and_the_rest_is_replayed(tmp_path):
    damaged = bytearray(_commit(1, "x", 99))
    damaged[-2] ^= 0x55  # inside the record: the CRC-32C no longer matches
    # an OffsetCommit key (type 1) cut short inside its group name
    bad_key = encode_batch([(struct.pack(">h", 1) + b"\x00", b"\x00\x00")], base_offset=2, base_timestamp=T)
    write_log(tmp_path, [[_commit(0, "g", 5), bytes(damaged), bad_key, _commit(3, "g", 6)]])
    said: list[str] = []
    model, report = replay_segments(tmp_path, on_problem=said.append)
    assert _committed(model) == {"g": 6}
    assert said == report.problems and len(said) == 2, said
    assert said[0].startswith(f"{tmp_path / '__consumer_offsets-3' / f'{0:020d}.log'}: batch at byte ")
    assert "partition 3 offset 2: truncated string length" in said[1], said[1]


def test_progress_is_told_the_records_and_bytes_done(tmp_path):
    (segment,) = write_log(tmp_path, [[_commit(0, "g", 1), _commit(1, "g", 2)]])
    seen: list[tuple[int, int]] = []

    class Watch:
        """Keeps what a Progress would be told (a real one draws a bar on a thread of its own)."""

        def update(self, *, records: int, bytes: int) -> None:  # noqa: A002 - Progress's own name
            seen.append((records, bytes))

    replay_segments(tmp_path, progress=Watch())
    first_batch = len(_commit(0, "g", 1))
    assert seen == [(0, 0), (1, first_batch)], "told before each batch: what was done up to it"
    assert segment.path.stat().st_size == 2 * first_batch


def test_a_path_without_segments_is_the_segment_error(tmp_path):
    with pytest.raises(SegmentPathError):
        replay_segments(tmp_path)
