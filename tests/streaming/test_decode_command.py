"""``groupscope decode`` end to end: the real command on segment files rebuilt from the Kafka 4.0 captures must
print, for every record and marker, exactly what Kafka's ``kafka-dump-log.sh --offsets-decoder`` printed."""

from __future__ import annotations

import json


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
    result = run_cli("decode", "/no/such/dir", str(segment_dirs["d_transactions"]))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == "groupscope decode: /no/such/dir: no such file or directory"
    assert len(result.stdout.splitlines()) == 38


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
