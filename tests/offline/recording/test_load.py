"""Reading a recording folder (``streaming/offline/recording/load.py``): the records a ``read_committed`` consumer
receives, from ``records.jsonl`` or from broker segment files alike, the end-offset samples in time order, the paths
that name a recording, and a :class:`RecordingError` that says what is wrong with a folder that is not one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from protocol.batch import encode_batch
from streaming.offline.recording.load import (EndOffsetSample, OffsetsRecord, RecordingError, clock_samples,
                                              load_recording, recording_folder)
from tests.conftest import captures_dir
from tests.protocol.conformance import rebuild_segments

VERDICTS = sorted(p.name for p in (captures_dir() / "conformance" / "verdicts").iterdir()
                  if (p / "records.jsonl").is_file())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _as_read(row: dict) -> OffsetsRecord:
    return OffsetsRecord(row["partition"], row["offset"], row["timestamp"],
                         None if row["key_hex"] is None else bytes.fromhex(row["key_hex"]),
                         None if row["value_hex"] is None else bytes.fromhex(row["value_hex"]))


def test_a_recordings_records_are_what_a_read_committed_consumer_saw():
    """The Kafka 4.0 capture of committed, aborted and open transactions marks each record with whether Kafka's
    own read_committed consumer received it: the loader keeps exactly those, in (partition, offset) order."""
    folder = captures_dir() / "conformance" / "kafka-4.0" / "d_transactions"
    rows = _lines(folder / "records.jsonl")
    assert {r["txn_outcome"] for r in rows} >= {"committed", "aborted"}, "the capture should hold both outcomes"
    seen = sorted((_as_read(r) for r in rows if r["visible_read_committed"]), key=lambda r: (r.partition, r.offset))
    rec = load_recording(folder, end_offsets_required=False)
    assert rec.records == tuple(seen)
    assert rec.samples == () and rec.name == "d_transactions"


@pytest.mark.parametrize("scenario", ["a_classic", "c_consumer_protocol", "d_transactions"])
def test_segment_files_give_the_same_records_as_the_jsonl(scenario, tmp_path):
    captures = captures_dir()
    rebuild_segments(captures, scenario, tmp_path / scenario / "segments")
    from_segments = load_recording(tmp_path / scenario, end_offsets_required=False)
    from_jsonl = load_recording(captures / "conformance" / "kafka-4.0" / scenario, end_offsets_required=False)
    assert from_segments.records == from_jsonl.records and from_segments.records


@pytest.mark.parametrize("name", VERDICTS)
def test_every_verdict_recording_loads_alike_from_its_jsonl_and_its_segments(name, tmp_path):
    source = captures_dir() / "conformance" / "verdicts" / name
    rec = load_recording(source)
    copy = tmp_path / name
    shutil.copytree(source / "segments", copy / "segments")
    shutil.copy(source / "end_offsets.jsonl", copy)
    assert load_recording(copy).records == rec.records
    keys = [(r.partition, r.offset) for r in rec.records]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert rec.partitions == sorted({r["partition"] for r in _lines(source / "records.jsonl")})
    times = [s.t_ms for s in rec.samples]
    assert times == sorted(times) and len(times) == len(_lines(source / "end_offsets.jsonl"))


def _record(partition: int, offset: int, *, pid: int = -1, txn: bool = False, control: str | None = None) -> dict:
    """One line of ``records.jsonl`` as the recorder writes it (the batch header carries the flags)."""
    return {"partition": partition, "offset": offset, "timestamp": 1_000 + offset, "key_hex": "00", "value_hex":
            None if control else f"{offset:02x}", "control": {"type": control} if control else None,
            "batch": {"is_control": control is not None, "is_transactional": txn, "producer_id": pid}}


def _folder(tmp_path: Path, rows: list[dict], samples: list[dict] | None = None) -> Path:
    folder = tmp_path / "rec"
    folder.mkdir(exist_ok=True)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "end_offsets.jsonl").write_text("".join(json.dumps(s) + "\n" for s in (samples or [])))
    return folder


def test_each_producers_marker_decides_its_own_records_only(tmp_path):
    """KIP-98: a COMMIT marker makes visible the transactional records its producer wrote to that partition since
    its previous marker; an ABORT drops them; a transaction still open at the end is not read; other producers'
    records and non-transactional ones are untouched."""
    rows = [_record(0, 0, pid=7, txn=True), _record(0, 1, pid=8, txn=True), _record(0, 2),
            _record(0, 3, pid=7, control="COMMIT"), _record(0, 4, pid=8, control="ABORT"),
            _record(0, 5, pid=7, txn=True), _record(0, 6, pid=7, control="ABORT"),
            _record(0, 7, pid=8, txn=True), _record(1, 0, pid=8, txn=True), _record(1, 1, pid=8, control="COMMIT"),
            _record(0, 8, pid=9, txn=True)]  # pid 8's commit on partition 1 does not touch partition 0
    rec = load_recording(_folder(tmp_path, rows[::-1]))  # in any order in the file
    assert [(r.partition, r.offset) for r in rec.records] == [(0, 0), (0, 2), (1, 0)]
    assert rec.records[0] == OffsetsRecord(0, 0, 1_000, b"\x00", b"\x00")


def test_samples_are_read_per_topic_partition_in_time_order(tmp_path):
    folder = _folder(tmp_path, [_record(0, 0)], [
        {"t_ms": 2_000, "offsets": {"orders:v2:3": {"high": 40, "stable": 38, "low": 5}}},
        {"t_ms": 1_000, "offsets": {"orders:v2:3": {"high": 30}}}])
    assert load_recording(folder).samples == (
        EndOffsetSample(1_000, {("orders:v2", 3): (30, -1, -1)}),  # no stable or low offset known: -1
        EndOffsetSample(2_000, {("orders:v2", 3): (40, 38, 5)}))  # a topic name may hold colons


def test_a_path_inside_a_recording_names_the_recording(tmp_path):
    folder = _folder(tmp_path, [_record(0, 0)])
    (folder / "segments").mkdir()
    assert recording_folder(folder / "records.jsonl") == folder
    assert recording_folder(folder / "end_offsets.jsonl") == folder
    assert recording_folder(folder / "segments") == folder
    assert recording_folder(folder) == folder
    assert load_recording(folder / "records.jsonl").name == "rec"
    plain = tmp_path / "segments"  # a folder named segments with no recording around it is itself
    plain.mkdir()
    assert recording_folder(plain) == plain


def test_a_missing_path_is_not_a_folder(tmp_path):
    with pytest.raises(RecordingError, match=r"not a folder \(a recording is a folder with records.jsonl"):
        load_recording(tmp_path / "nowhere")


def test_end_offsets_are_required_unless_said_otherwise(tmp_path):
    folder = _folder(tmp_path, [_record(0, 0)])
    (folder / "end_offsets.jsonl").unlink()
    with pytest.raises(RecordingError, match="no end_offsets.jsonl"):
        load_recording(folder)
    assert load_recording(folder, end_offsets_required=False).samples == ()


def test_a_folder_without_records_says_what_it_looked_for(tmp_path):
    (tmp_path / "end_offsets.jsonl").write_text("")
    with pytest.raises(RecordingError, match="neither records.jsonl nor segments/ found"):
        load_recording(tmp_path)
    (tmp_path / "segments").mkdir()
    with pytest.raises(RecordingError, match="no .log segment files found"):
        load_recording(tmp_path)


@pytest.mark.parametrize("line", ['{"partition": 0, "offset": 1}', "not json", '{"partition": "x", "offset": 1, '
                                  '"timestamp": 0}', '{"partition": 0, "offset": 1, "timestamp": 0, "key_hex": "zz"}'])
def test_a_bad_record_line_is_named_by_file_and_line(tmp_path, line):
    folder = _folder(tmp_path, [_record(0, 0)])
    with open(folder / "records.jsonl", "a", encoding="utf-8") as fh:
        fh.write("\n" + line + "\n")  # the blank line is skipped, and still counted
    with pytest.raises(RecordingError, match=r"records.jsonl:3: not a record line"):
        load_recording(folder)


@pytest.mark.parametrize("line", ['{"t_ms": 1}', '{"t_ms": 1, "offsets": {"t:0": {"low": 0}}}',
                                  '{"t_ms": 1, "offsets": {"t:zero": {"high": 0}}}', '{"t_ms": 1, "offsets": []}'])
def test_a_bad_sample_line_is_named_by_file_and_line(tmp_path, line):
    folder = _folder(tmp_path, [_record(0, 0)], [{"t_ms": 0, "offsets": {}}])
    with open(folder / "end_offsets.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    with pytest.raises(RecordingError, match=r"end_offsets.jsonl:2: not an end-offset sample"):
        load_recording(folder)


def test_a_corrupt_segment_names_the_file_and_the_batchs_position(tmp_path):
    partition = tmp_path / "rec" / "segments" / "__consumer_offsets-4"
    partition.mkdir(parents=True)
    good = encode_batch([(b"k", b"v")], base_offset=0, base_timestamp=1_000)
    bad = bytearray(encode_batch([(b"k", b"w")], base_offset=1, base_timestamp=1_001))
    bad[-1] ^= 0xFF  # the CRC covers the records: a flipped byte no longer matches it
    (partition / "00000000000000000000.log").write_bytes(good + bytes(bad))
    (tmp_path / "rec" / "end_offsets.jsonl").write_text("")
    with pytest.raises(RecordingError, match=rf"00000000000000000000.log: batch at byte {len(good)}: "):
        load_recording(tmp_path / "rec")


def test_clock_samples_run_from_the_first_record_past_the_last_by_the_tail():
    records = (OffsetsRecord(0, 0, 3_500, None, None), OffsetsRecord(1, 0, 1_000, None, None))
    samples = clock_samples(records, step_ms=1_000, tail_ms=2_000)
    assert [s.t_ms for s in samples] == [1_000, 2_000, 3_000, 4_000, 5_000]  # up to 3,500 + 2,000
    assert all(s.ends == {} for s in samples)
    assert clock_samples(()) == ()
