"""A simulation written as a recording folder (``RecordingSink``, ``write_recording``, ``simulate --recording``): the
real recordings' layout, readable by ``load_recording`` and ``groupscope replay``, consistent with the simulated log."""

from __future__ import annotations

import json
from collections import Counter

from click.testing import CliRunner

from streaming.model.describe import describe
from streaming.model.shard import CoordinatorModel
from streaming.offline.recording import load_recording
from streaming.commands.simulate import simulate
from streaming.simulator import MemorySink, RecordingSink, Simulation, project, write_recording
from streaming.simulator.sinks import Append, Marker
from tests.conftest import captures_dir


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_records_have_the_real_recordings_fields(tmp_path):
    folder = write_recording(Simulation(["steady", "transactional"], seed=2), tmp_path / "rec", 30_000)
    ours = _lines(folder / "records.jsonl")
    real = json.loads(open(captures_dir() / "conformance" / "verdicts" / "storm_crashloop" / "records.jsonl").readline())
    # every field the loader reads, with the real recordings' names and nesting
    for r in ours:
        assert {"partition", "offset", "timestamp", "key_hex", "value_hex", "control", "batch"} <= set(r)
        assert {"is_transactional", "is_control", "producer_id"} <= set(r["batch"])
    assert set(ours[0]) <= set(real) and set(ours[0]["batch"]) <= set(real["batch"])
    markers = [r for r in ours if r["batch"]["is_control"]]
    assert {r["control"]["type"] for r in markers} == {"COMMIT", "ABORT"}
    assert all(r["key_hex"] in ("00000000", "00000001") for r in markers)
    # (partition, offset) is unique and dense per partition
    per = Counter(r["partition"] for r in ours)
    for p, n in per.items():
        assert sorted(r["offset"] for r in ours if r["partition"] == p) == list(range(n))


def test_end_offsets_every_simulated_second_with_every_partition(tmp_path):
    sim = Simulation(["stopped", "transactional"], seed=1)
    folder = write_recording(sim, tmp_path / "rec", 20_500)
    samples = _lines(folder / "end_offsets.jsonl")
    t0 = sim.sched.start_ms
    assert [s["t_ms"] - t0 for s in samples] == list(range(0, 20_001, 1000))  # no off-grid sample at 20.5 s
    keys = {f"__consumer_offsets:{p}" for p in range(50)} | {f"stopped-logs:{p}" for p in range(4)} | \
        {f"txn-in:{p}" for p in range(3)}
    assert all(set(s["offsets"]) == keys for s in samples)
    records = _lines(folder / "records.jsonl")
    for s in samples:
        for p in range(50):
            mine = [r for r in records if r["partition"] == p]
            o = s["offsets"][f"__consumer_offsets:{p}"]
            # the high watermark counts exactly the records a replay feeds with this sample
            assert o["high"] == sum(1 for r in mine if r["timestamp"] <= s["t_ms"]) and o["low"] == 0
            assert o["stable"] <= o["high"]
        end = sim.topics["stopped-logs"].end_offset(0, s["t_ms"])
        assert s["offsets"]["stopped-logs:0"] == {"high": end, "stable": end, "low": 0}


def test_an_open_transaction_holds_the_last_stable_offset(tmp_path):
    sink = RecordingSink(tmp_path / "rec", segments=False)
    sink.open({"t": 1}, 3)
    commit = (b"\x00\x01", b"\x00\x03")
    sink.advance_topics({("t", 0): 5}, 0)
    sink.append(Append(1, 0, 500, [commit]))
    sink.append(Append(1, 1, 900, [commit, commit], producer_id=7, producer_epoch=0, transactional=True))
    sink.advance_topics({("t", 0): 9}, 1000)
    sink.append(Append(1, 3, 1000, [commit]))  # same millisecond as the sample, appended after it: counted
    sink.marker(Marker(1, 4, 1500, 7, 0, True))
    sink.advance_topics({("t", 0): 12}, 2000)
    sink.close()
    got = [(s["t_ms"], s["offsets"]["__consumer_offsets:1"], s["offsets"]["t:0"])
           for s in _lines(tmp_path / "rec" / "end_offsets.jsonl")]
    assert got == [(0, {"high": 0, "stable": 0, "low": 0}, {"high": 5, "stable": 5, "low": 0}),
                   (1000, {"high": 4, "stable": 1, "low": 0}, {"high": 9, "stable": 9, "low": 0}),
                   (2000, {"high": 5, "stable": 5, "low": 0}, {"high": 12, "stable": 12, "low": 0})]


def test_loads_into_the_simulated_groups_from_jsonl_and_from_segments(tmp_path):
    sim = Simulation(["storm", "kip848", "transactional"], seed=4)
    mem = MemorySink()
    sim.run_until(60_000, mem)
    folder = write_recording(Simulation(["storm", "kip848", "transactional"], seed=4), tmp_path / "rec", 60_000)
    from_jsonl = load_recording(folder)
    (folder / "records.jsonl").unlink()
    from_segments = load_recording(folder)
    assert from_jsonl.records == from_segments.records  # aborted transactional commits dropped by both
    model = CoordinatorModel()
    for r in from_jsonl.records:
        from protocol.codec import decode_record

        model.shard(r.partition).replay(r.offset, r.timestamp, decode_record(r.key, r.value))
    assert project(describe(model)) == sim.expected()


def test_simulate_command_writes_the_same_recording(tmp_path):
    res = CliRunner().invoke(simulate, ["--scenario", "rolling-restart,storm", "--seed", "5", "--speed", "0",
                                        "--duration", "45", "--recording", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    write_recording(Simulation(["rolling-restart", "storm"], seed=5), tmp_path / "api", 45_000)
    for name in ("records.jsonl", "end_offsets.jsonl", "client_events.jsonl"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes(), name
    info = json.loads((tmp_path / "cli" / "simulation.json").read_text())
    assert info["scenarios"] == ["rolling-restart", "storm"] and info["end_ms"] - info["t0_ms"] == 45_000
    assert load_recording(tmp_path / "cli").samples[-1].t_ms == info["end_ms"]


def test_recording_option_is_one_output_among_others(tmp_path):
    for args, text in [(["--recording", str(tmp_path), "--segments", str(tmp_path)], "not both"),
                       (["--recording", str(tmp_path), "--bootstrap", "x:1"], "not both"),
                       (["--scenario", "steady"], "--recording DIR")]:
        res = CliRunner().invoke(simulate, args)
        assert res.exit_code == 2 and text in res.output, (args, res.output)
