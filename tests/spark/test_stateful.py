"""The query's one stateful function (``streaming.spark.stateful``), called as Spark calls it: a shard's key, its
pandas chunks (packed payloads of the groupscope source, range markers, or a row per record from Spark's own Kafka
source) and its state. A stand-in for Spark's ``GroupState``; no session is started."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.batch_sink import decode_health, decode_table
from streaming.job.packed import pack, pack_ranges
from streaming.job.step import ShardStep, StepConfig
from streaming.kafka.reader import OffsetRange
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.schema.tables import SOURCE
from streaming.spark import stateful
from streaming.spark.stateful import make_state_function

SHARD = 2
T0 = 1_767_225_600_000


class _State:
    """What the function uses of Spark's GroupState."""

    def __init__(self, stored: bytes | None = None) -> None:
        self.stored = stored
        self.timeout_ms: int | None = None

    @property
    def exists(self) -> bool:
        return self.stored is not None

    @property
    def get(self) -> tuple[bytes]:
        return (self.stored,)

    def update(self, value: tuple[bytes]) -> None:
        self.stored = value[0]

    def setTimeoutDuration(self, ms: int) -> None:  # noqa: N802 (Spark's name)
        self.timeout_ms = ms


def _source(commits: list[tuple[int, int]], heartbeat_ms: int | None = None) -> pa.Table:
    """Commits ``(offset, committed offset)`` of group g on t-0 in the shard's partition, then maybe a heartbeat."""
    rows = []
    for offset, committed in commits:
        key, value = encode_record(new_offset_commit("g", "t", 0, committed, commit_timestamp=T0 + offset))
        rows.append({"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD, "offset": offset,
                     "timestamp": (T0 + offset) * 1000})
    if heartbeat_ms is not None:
        (value,) = encode_heartbeats(heartbeat_ms, "e", 0, [("t", 0, 1000, 1000, 0)])
        rows.append({"key": None, "value": value, "topic": "groupscope-heartbeat", "partition": 0, "offset": 0,
                     "timestamp": heartbeat_ms * 1000})
    return pa.Table.from_pylist(rows, schema=SOURCE)


def _packed(table: pa.Table) -> pd.DataFrame:
    return pa.Table.from_batches(list(pack(table.combine_chunks().to_batches()[0]))).to_pandas()


def _outputs(frames) -> dict[str, list]:
    (frame,) = list(frames)
    assert list(frame.columns) == ["shard", "kind", "payload"] and set(frame["shard"]) == {SHARD}
    out: dict[str, list] = {}
    for kind, payload in zip(frame["kind"], frame["payload"]):
        out.setdefault(kind, []).append(decode_health(payload) if kind == "health" else decode_table(payload))
    return out


@pytest.fixture(autouse=True)
def _no_cached_steps(monkeypatch):
    monkeypatch.setattr(stateful, "_CACHE", {})


def test_packed_chunks_reach_the_step_and_its_state_and_timeout_are_stored():
    run = make_state_function(StepConfig(), timeout_ms=10_000)
    state = _State()
    out = _outputs(run((SHARD,), iter([_packed(_source([(0, 5), (1, 7)], T0 + 500))]), state))
    assert out["commits"][0].column("committed_offset").to_pylist() == [5, 7]
    (health,) = out["health"]
    assert (health.shard, health.records, health.state_bytes) == (SHARD, 2, len(state.stored))
    assert state.timeout_ms == 10_000
    restored = ShardStep(SHARD, StepConfig(), state.stored)
    assert restored.model.group_ids() == ["g"], "the stored state is the step's"


def test_a_backfill_sets_no_timeout():
    state = _State()
    _outputs(make_state_function(StepConfig(), timeout_ms=None)((SHARD,), iter([_packed(_source([(0, 1)]))]), state))
    assert state.timeout_ms is None and state.stored is not None


def test_rows_of_sparks_own_kafka_source_are_read_as_well():
    frame = _source([(0, 3), (1, 4)]).to_pandas()
    frame["extra"] = 1  # Spark's kafka source has more columns (timestampType, headers): only the source's are used
    half = len(frame) // 2
    out = _outputs(make_state_function(StepConfig(), 1000)((SHARD,), iter([frame[:half], frame[half:]]), _State()))
    assert out["commits"][0].column("committed_offset").to_pylist() == [3, 4]


def test_a_timeout_without_rows_still_runs_the_step():
    out = _outputs(make_state_function(StepConfig(), 1000)((SHARD,), iter([pd.DataFrame()]), _State()))
    assert out["health"][0].records == 0


def test_the_state_continues_from_batch_to_batch():
    run = make_state_function(StepConfig(), 1000)
    state = _State()
    _outputs(run((SHARD,), iter([_packed(_source([(0, 5)], T0 + 500))]), state))
    out = _outputs(run((SHARD,), iter([_packed(_source([(1, 9)], T0 + 1500))]), state))
    assert out["health"][0].last_offset == 1


def _steps_built(monkeypatch) -> list[bytes | None]:
    """The state bytes each step the function builds is restored from, in order (None: a new shard)."""
    built: list[bytes | None] = []
    real = stateful.ShardStep

    def counting(shard, config, stored=None):
        built.append(stored)
        return real(shard, config, stored)

    monkeypatch.setattr(stateful, "ShardStep", counting)
    return built


def test_the_last_step_is_reused_only_for_exactly_the_state_it_produced(monkeypatch):
    built = _steps_built(monkeypatch)
    run = make_state_function(StepConfig(), 1000)
    state = _State()
    list(run((SHARD,), iter([_packed(_source([(0, 5)]))]), state))
    list(run((SHARD,), iter([_packed(_source([(1, 6)]))]), state))
    assert built == [None], "Spark handed back the bytes the cached step wrote: no restore"
    older = _State(ShardStep(SHARD, StepConfig()).state())
    list(run((SHARD,), iter([_packed(_source([(2, 7)]))]), older))
    assert len(built) == 2, "other bytes (a retried task, another executor's batch): restored from them"


def test_range_markers_are_read_with_the_ranges_reader_and_applied_after_the_packed_rows():
    records = _source([(10, 50), (11, 60)])

    class Ranges:
        def __init__(self) -> None:
            self.asked: list[OffsetRange] = []

        def rows(self, ranges):
            self.asked += ranges
            return records.to_batches()

    reader = Ranges()
    marker = pa.Table.from_batches([pack_ranges([OffsetRange("__consumer_offsets", SHARD, 10, 12)])]).to_pandas()
    run = make_state_function(StepConfig(), 1000, ranges=reader)
    out = _outputs(run((SHARD,), iter([_packed(_source([(0, 5)])), marker]), _State()))
    assert reader.asked == [OffsetRange("__consumer_offsets", SHARD, 10, 12)]
    assert out["commits"][0].column("committed_offset").to_pylist() == [5, 50, 60]


def test_range_markers_without_a_reader_are_an_error_not_a_silent_gap():
    marker = pa.Table.from_batches([pack_ranges([OffsetRange("__consumer_offsets", SHARD, 0, 5)])]).to_pandas()
    with pytest.raises(RuntimeError, match="range markers reached a step that was not given how to read them"):
        list(make_state_function(StepConfig(), 1000)((SHARD,), iter([marker]), _State()))


def test_without_reused_workers_no_step_is_kept(monkeypatch):
    built = _steps_built(monkeypatch)
    run = make_state_function(StepConfig(), 1000, keep_steps=False)
    state = _State()
    list(run((SHARD,), iter([_packed(_source([(0, 5)]))]), state))
    first = state.stored
    list(run((SHARD,), iter([_packed(_source([(1, 6)]))]), state))
    assert built == [None, first] and stateful._CACHE == {}
