"""``groupscope decode`` end to end: the real command on segment files rebuilt from the Kafka 4.0 captures must
print, for every record and marker, exactly what Kafka's ``kafka-dump-log.sh --offsets-decoder`` printed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.cli_helpers import REPO, run_cli
from tests.protocol.conformance import dumplog_reference


def test_kafka_format_matches_dump_log_for_every_record(captures, segment_dirs):
    reference = dumplog_reference(captures)
    seen = set()
    for scenario, directory in segment_dirs.items():
        result = run_cli("decode", "--format", "kafka", str(directory))
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        for line in result.stdout.splitlines():
            obj = json.loads(line)
            key = (scenario, obj["partition"], obj["offset"])
            expected = reference[key]
            if "endTxnMarker" in obj:
                assert expected == ("marker", (obj["endTxnMarker"], obj["coordinatorEpoch"]))
            else:
                assert list(obj) == ["partition", "offset", "key", "payload"]
                assert json.dumps([obj["key"], obj["payload"]]) == json.dumps(list(expected)), key
            seen.add(key)
    assert seen == set(reference), "every record of Kafka's dump must be printed exactly once"


def test_groupscope_format_is_complete_and_typed(segment_dirs):
    result = run_cli("decode", str(segment_dirs["d_transactions"]))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    markers = [r for r in rows if "control" in r]
    assert {m["control"] for m in markers} == {"COMMIT", "ABORT"}
    assert all(m["producer_id"] >= 0 for m in markers)
    commits = [r for r in rows if r.get("type") == "OFFSET_COMMIT"]
    assert commits and all({"partition", "offset", "timestamp", "key", "value", "version"} <= set(r) for r in commits)
    assert any(r.get("transactional") for r in commits)


def test_corrupt_batch_is_reported_and_decoding_continues(segment_dirs, tmp_path):
    source = next((segment_dirs["a_classic"]).glob("__consumer_offsets-*/*.log"))
    data = bytearray(source.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    target = tmp_path / source.parent.name / source.name
    target.parent.mkdir()
    target.write_bytes(bytes(data))
    good = run_cli("decode", "--format", "kafka", str(source))
    bad = run_cli("decode", "--format", "kafka", str(target))
    assert bad.returncode == 1
    problems = [line for line in bad.stderr.splitlines() if "batch at byte 0" in line]
    assert len(problems) == 1 and "crc" in problems[0].lower()
    good_lines = good.stdout.splitlines()
    bad_lines = bad.stdout.splitlines()
    assert 0 < len(bad_lines) < len(good_lines)
    assert good_lines[-len(bad_lines):] == bad_lines  # everything after the corrupt batch still decoded
    # Without the CRC check the batch is read; its damaged record is then reported on its own, by offset.
    forced = run_cli("decode", "--format", "kafka", "--no-verify-crc", str(target))
    assert forced.returncode == 1
    assert len(forced.stdout.splitlines()) == len(good_lines) - 1
    assert "offset 0: invalid UTF-8" in forced.stderr


def test_missing_path_is_one_line_and_others_still_decode(segment_dirs):
    # A path that cannot be used is a bad argument: exit status 2, as for describe and click's usage errors.
    result = run_cli("decode", "/no/such/dir", str(segment_dirs["d_transactions"]))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == "groupscope decode: /no/such/dir: no such file or directory"
    assert len(result.stdout.splitlines()) == 38


def test_exit_status_tells_bad_paths_from_bad_data(segment_dirs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("decode", str(empty))
    assert result.returncode == 2 and "no .log segment files found" in result.stderr
    source = next(segment_dirs["a_classic"].glob("__consumer_offsets-*/*.log"))
    damaged = tmp_path / source.parent.name / source.name
    damaged.parent.mkdir()
    data = bytearray(source.read_bytes())
    data[70] ^= 0xFF
    damaged.write_bytes(bytes(data))
    assert run_cli("decode", "--format", "kafka", str(damaged)).returncode == 1
    assert run_cli("decode", "--format", "kafka", str(damaged), "/no/such/dir").returncode == 2
    assert run_cli("decode", "--format", "kafka", str(source)).returncode == 0


def test_a_file_that_is_not_a_segment_is_named_so(segment_dirs, tmp_path):
    """A JSON export handed to decode is not read as a batch whose length is its first bytes ("declares 975207214
    bytes"): one line saying what it is not and where segments are, exit 2. A segment copied under another name
    still decodes."""
    export = tmp_path / "records.jsonl"
    export.write_text('{"partition": 0, "offset": 0, "timestamp": 1795311810000}\n' * 50)
    result = run_cli("decode", str(export))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[0] == (f"groupscope decode: {export}: not a Kafka log segment (no record batch "
                                             "at its start); segments are the *.log files in __consumer_offsets-N "
                                             "folders")
    source = next(segment_dirs["d_transactions"].glob("__consumer_offsets-*/*.log"))
    renamed = tmp_path / "copy.bin"
    shutil.copy(source, renamed)
    copied = run_cli("decode", "--format", "kafka", str(renamed))
    assert copied.returncode == 0 and copied.stdout.count("\n") > 0, copied.stderr


@pytest.mark.parametrize("fmt", ["kafka", "groupscope"])
def test_partition_comes_from_the_folder_or_is_left_out(segment_dirs, tmp_path, fmt):
    source = next(segment_dirs["d_transactions"].glob("__consumer_offsets-*/*.log"))
    partition = int(source.parent.name.rsplit("-", 1)[1])
    in_folder = [json.loads(line) for line in run_cli("decode", "--format", fmt, str(source)).stdout.splitlines()]
    assert in_folder and all(row["partition"] == partition for row in in_folder)
    # Named relative to its own folder: the partition is still known.
    relative = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "decode", "--format", fmt, source.name],
                              cwd=source.parent, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    assert relative.returncode == 0, relative.stderr
    assert [json.loads(line) for line in relative.stdout.splitlines()] == in_folder
    # Outside a __consumer_offsets-N folder it is not known: the field is left out, everything else the same.
    bare = tmp_path / "copied.log"
    shutil.copyfile(source, bare)
    result = run_cli("decode", "--format", fmt, str(bare))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert all("partition" not in row for row in rows)
    assert rows == [{k: v for k, v in row.items() if k != "partition"} for row in in_folder]


def test_a_reader_that_goes_away_ends_the_dump_quietly(tmp_path):
    # ``groupscope decode ... | head -1``: the pipe closes mid-dump (megabytes of output, far more than a pipe
    # buffers); no traceback, exit status 0.
    from protocol.batch import encode_batch
    from protocol.builders import new_offset_commit
    from protocol.codec import encode_record

    folder = tmp_path / "__consumer_offsets-3"
    folder.mkdir()
    records = [encode_record(new_offset_commit("g", "t", i % 50, i, commit_timestamp=1_700_000_000_000))
               for i in range(1000)]
    (folder / "00000000000000000000.log").write_bytes(
        b"".join(encode_batch(records, base_offset=1000 * k, base_timestamp=0) for k in range(40)))
    proc = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "decode", "--format", "kafka",
                             str(folder)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b'{"partition":')
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    assert "Traceback" not in stderr


def test_bad_option_is_one_clear_error():
    result = run_cli("decode", "--format", "xml", "x")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Invalid value for '--format'" in result.stderr


def test_shipped_examples_decode(tmp_path):
    result = run_cli("decode", "--format", "kafka", str(REPO / "examples" / "consumer-offsets"))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert sum(1 for r in rows if r.get("endTxnMarker") == "COMMIT") == 1
    assert sum(1 for r in rows if r.get("payload") == "<DELETE>") == 1
    groups = {r["key"]["data"].get("group") or r["key"]["data"].get("groupId") for r in rows if "key" in r}
    assert groups == {"orders-classic", "orders-kip848", "payments-eos"}


def test_output_chunks_are_written_whole():
    # A buffered writer may take part of a large chunk and return the count; the rest must still be written.
    from streaming.commands.decode import _bytes_writer

    class Buffer:
        def __init__(self) -> None:
            self.data = bytearray()

        def write(self, chunk) -> int:
            taken = bytes(chunk[:1000])
            self.data += taken
            return len(taken)

    class Out:
        encoding = "UTF-8"
        buffer = Buffer()

        def flush(self) -> None:
            pass

    out = Out()
    write = _bytes_writer(out)  # type: ignore[arg-type]
    text = "é".join(str(i) for i in range(3000)).encode()
    write(text)
    write(memoryview(text)[5:4321])
    assert bytes(out.buffer.data) == text + text[5:4321]
