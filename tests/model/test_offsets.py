"""The shard's offset store against the replay rules of Kafka's OffsetMetadataManager: plain commits apply at
once, transactional ones wait for their producer's marker (COMMIT applies only what is newer in the log, ABORT
drops), tombstones remove the offset and matching pending entries; plus the per-partition commit window."""

from __future__ import annotations

import pytest

from streaming.model.offsets import NO_STATUS, OffsetStore


def _commit(store: OffsetStore, offset: int, *, ts: int, rec: int, group: str = "g", topic: str = "t",
            partition: int = 0, metadata: str = "") -> bool:
    return store.commit(group, topic, partition, offset, 3, metadata, ts, rec)


def test_plain_commit_applies_and_reports_new_partitions():
    s = OffsetStore()
    assert _commit(s, 10, ts=1_000, rec=5) is True
    assert _commit(s, 11, ts=2_000, rec=6) is False
    assert s.get("g", "t", 0) == (11, 3, "", 2_000)
    assert s.record_offset_of("g", "t", 0) == 6
    assert s.get("g", "t", 1) is None and s.get("g", "other", 0) is None and s.get("x", "t", 0) is None
    assert s.partition_count() == 1 and s.has_group("g")


def test_partitions_grow_on_demand_and_iterate_in_order():
    s = OffsetStore()
    _commit(s, 7, ts=1, rec=1, partition=5, metadata="m5")
    _commit(s, 1, ts=1, rec=2, partition=0, topic="b")
    _commit(s, 2, ts=1, rec=3, partition=2)
    assert list(s.iter_group("g")) == [("b", 0, 1, 3, "", 1), ("t", 2, 2, 3, "", 1), ("t", 5, 7, 3, "m5", 1)]
    assert s.partition_count() == 3
    assert list(s.iter_group("nobody")) == []


def test_metadata_is_cleared_by_a_later_empty_commit():
    s = OffsetStore()
    _commit(s, 1, ts=1, rec=1, metadata="note")
    _commit(s, 2, ts=2, rec=2)
    assert s.get("g", "t", 0)[2] == ""


def test_transactional_commit_waits_for_commit_marker():
    s = OffsetStore()
    s.commit_pending(77, "g", "t", 0, 50, 3, "", 1_000, 10)
    assert s.get("g", "t", 0) is None and s.has_pending("g")
    assert s.end_transaction(77, commit=True) == (1, 0, {"g"})
    assert s.get("g", "t", 0) == (50, 3, "", 1_000) and not s.has_pending("g")


def test_abort_drops_pending_offsets():
    s = OffsetStore()
    _commit(s, 5, ts=1, rec=1)
    s.commit_pending(77, "g", "t", 0, 50, 3, "", 1_000, 10)
    assert s.end_transaction(77, commit=False) == (0, 0, {"g"})
    assert s.get("g", "t", 0)[0] == 5 and not s.has_pending("g")


def test_commit_marker_does_not_overwrite_a_newer_plain_commit():
    """The pending offset's record is at log offset 10; a plain commit at log offset 12 is newer and stays."""
    s = OffsetStore()
    s.commit_pending(77, "g", "t", 0, 50, 3, "", 1_000, 10)
    _commit(s, 60, ts=2_000, rec=12)
    assert s.end_transaction(77, commit=True) == (0, 1, {"g"})
    assert s.get("g", "t", 0)[0] == 60


def test_marker_of_an_unknown_producer_is_a_no_op():
    assert OffsetStore().end_transaction(1, commit=True) == (0, 0, set())


def test_tombstone_removes_offset_and_matching_pending_entries():
    s = OffsetStore()
    _commit(s, 5, ts=1, rec=1)
    _commit(s, 6, ts=1, rec=2, partition=1)
    s.commit_pending(77, "g", "t", 0, 50, 3, "", 1_000, 10)
    s.commit_pending(77, "g", "t", 1, 51, 3, "", 1_000, 10)
    assert s.delete("g", "t", 0) is True
    assert s.get("g", "t", 0) is None and s.status_of("g", "t", 0) == NO_STATUS
    assert s.end_transaction(77, commit=True) == (1, 0, {"g"})  # only partition 1's pending offset was left
    assert s.get("g", "t", 0) is None and s.get("g", "t", 1)[0] == 51
    assert s.delete("g", "t", 0) is False and s.delete("g", "t", 9) is False


def test_deleting_the_last_offset_forgets_the_group():
    s = OffsetStore()
    _commit(s, 5, ts=1, rec=1)
    s.delete("g", "t", 0)
    assert not s.has_group("g") and s.partition_count() == 0


def test_commit_window_keeps_the_last_commits_and_merges_close_ones():
    s = OffsetStore(window=3, min_distance_ms=1_000)
    for i, ts in enumerate([0, 2_000, 2_500, 4_000, 6_000]):
        _commit(s, 10 * (i + 1), ts=ts, rec=i)
    # 2_500 is within 1 s of 2_000: it overwrote that slot's offset and kept the older time. The window holds
    # three slots, so (0, 10) fell out; the newest slot carries the latest commit's time and offset.
    assert s.window_of("g", "t", 0) == [(2_000, 30), (4_000, 40), (6_000, 50)]
    assert s.window_of("g", "t", 1) == [] and s.window_of("x", "t", 0) == []


def test_window_bounds_are_checked():
    for window in (0, 256):
        with pytest.raises(ValueError, match="window"):
            OffsetStore(window=window)


def test_status_is_stored_per_partition():
    s = OffsetStore()
    _commit(s, 5, ts=1, rec=1)
    assert s.status_of("g", "t", 0) == NO_STATUS
    s.set_status("g", "t", 0, 2)
    s.set_status("g", "t", 7, 2)  # beyond the known partitions: ignored
    assert s.status_of("g", "t", 0) == 2 and s.status_of("g", "t", 7) == NO_STATUS


def test_state_round_trip():
    s = OffsetStore(window=4, min_distance_ms=10)
    _commit(s, 5, ts=100, rec=1, metadata="m")
    _commit(s, 6, ts=200, rec=2, partition=3, topic="u")
    s.commit_pending(9, "g", "t", 0, 50, 3, "", 1_000, 10)
    back = OffsetStore.from_state(s.to_state())
    assert list(back.iter_group("g")) == list(s.iter_group("g"))
    assert back.window_of("g", "u", 3) == s.window_of("g", "u", 3)
    assert back.has_pending("g") and back.end_transaction(9, commit=True) == (1, 0, {"g"})


def test_a_restored_topic_nothing_touched_is_saved_as_it_was_read():
    s = OffsetStore(window=4)
    _commit(s, 5, ts=100, rec=1)
    _commit(s, 6, ts=200, rec=2, partition=2, topic="u", metadata="m")
    saved = s.to_state()
    back = OffsetStore.from_state(saved)
    topic = back.groups["g"]["t"]
    assert topic.count == 1 and topic._packed is not None  # counted without unpacking its columns
    again = back.to_state()
    assert again == saved and again["groups"]["g"]["t"][0] is saved["groups"]["g"]["t"][0]  # the same buffer
    assert back.partition_count() == 2 and back.groups["g"]["t"]._packed is not None


def test_a_restored_topic_unpacks_on_first_use_and_saves_what_changed():
    s = OffsetStore(window=4)
    _commit(s, 5, ts=100, rec=1)
    back = OffsetStore.from_state(s.to_state())
    assert back.get("g", "t", 0) == (5, 3, "", 100)  # a read unpacks
    assert back.groups["g"]["t"]._packed is None
    _commit(back, 7, ts=1_300, rec=2, partition=3)  # grows the topic
    back.set_status("g", "t", 3, 1)
    again = OffsetStore.from_state(back.to_state())
    assert list(again.iter_group("g")) == [("t", 0, 5, 3, "", 100), ("t", 3, 7, 3, "", 1_300)]
    assert again.window_of("g", "t", 0) == [(100, 5)] and again.status_of("g", "t", 3) == 1
    with pytest.raises(AttributeError):
        again.groups["g"]["t"].no_such_column


def test_version_2_columns_by_name_are_read():
    s = OffsetStore(window=4)
    _commit(s, 5, ts=100, rec=1, metadata="m")
    _commit(s, 9, ts=1_200, rec=3, partition=1)
    t = s.groups["g"]["t"]
    v2 = {"offset": t.offset.tobytes(), "epoch": t.epoch.tobytes(), "commit_ts": t.commit_ts.tobytes(),
          "record_offset": t.record_offset.tobytes(), "hist_ts": t.hist_ts.tobytes(), "hist_off": t.hist_off.tobytes(),
          "hist_head": bytes(t.hist_head), "hist_len": bytes(t.hist_len), "status": bytes(t.status),
          "metadata": tuple(t.metadata), "count": t.count}
    state = s.to_state()
    state["groups"]["g"]["t"] = v2
    back = OffsetStore.from_state(state)
    assert list(back.iter_group("g")) == list(s.iter_group("g"))
    assert back.window_of("g", "t", 1) == s.window_of("g", "t", 1)
    assert back.to_state() == s.to_state()  # written again in the packed form
