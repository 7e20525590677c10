"""The vectorized ``--format kafka`` renderer (``KafkaDump``) against the exact, record-by-record one.

Both must produce the same bytes and the same problems, in the same order, for anything a segment can hold: the
real Kafka captures, the common case in every shape that changes how it is walked (batch sizes, key lengths,
varint widths, run boundaries), every uncommon record and batch kind, and damaged bytes.
"""

from __future__ import annotations

import random
import struct

import pytest

import protocol.kafka_dump as kd
from protocol.batch import (ControlType, CorruptBatch, LogRecord, TimestampType, encode_batch, encode_control_batch,
                            encode_legacy_message_set, iter_batches)
from protocol._compression import CompressionType
from protocol.builders import new_empty_group_metadata, new_offset_commit, new_offset_commit_tombstone
from protocol.codec import encode_record
from protocol.kafka_dump import KafkaDump, KafkaLineRenderer, RecordProblem, kafka_batch_items, line_prefix
from tests.protocol.conformance import rebuild_segments, scenarios


def exact_items(data: bytes, partition: int | None, verify_crc: bool = True) -> tuple[list[object], int]:
    """The reference: iter_batches and the per-record renderer, merged into (text, problems...) in log order."""
    view = memoryview(data)
    renderer = KafkaLineRenderer()
    out: list[object] = []
    records = 0
    for batch in iter_batches(view, verify_crc=verify_crc):
        if isinstance(batch, CorruptBatch):
            out.append(("corrupt", batch.position, batch.reason, batch.base_offset, batch.truncated))
            continue
        records += len(batch.records)
        for item in kafka_batch_items(batch, partition, renderer):
            out.append(item.encode() if isinstance(item, str) else ("record", item.offset, item.reason))
    return _merge(out), records


def fast_items(data: bytes, partition: int | None, verify_crc: bool = True) -> tuple[list[object], int]:
    dump = KafkaDump(verify_crc=verify_crc)
    out: list[object] = []
    for item in dump.segment(memoryview(data), partition):
        if isinstance(item, CorruptBatch):
            out.append(("corrupt", item.position, item.reason, item.base_offset, item.truncated))
        elif isinstance(item, RecordProblem):
            out.append(("record", item.offset, item.reason))
        else:
            out.append(bytes(item))
    return _merge(out), dump.records


def _merge(items: list[object]) -> list[object]:
    """Adjacent text chunks joined into one (the two renderers cut their text differently)."""
    merged: list[object] = []
    text: list[bytes] = []
    for item in items:
        if isinstance(item, bytes):
            text.append(item)
            continue
        if text:
            merged.append(b"".join(text))
            text = []
        merged.append(item)
    if text:
        merged.append(b"".join(text))
    return [m for m in merged if m != b""]


def assert_same(data: bytes, partition: int | None = 7, verify_crc: bool = True) -> list[object]:
    expected = exact_items(data, partition, verify_crc)
    got = fast_items(data, partition, verify_crc)
    if got != expected:  # show the first difference, not two megabytes
        exp_text = b"".join(i for i in expected[0] if isinstance(i, bytes)).splitlines()
        got_text = b"".join(i for i in got[0] if isinstance(i, bytes)).splitlines()
        for n, (a, b) in enumerate(zip(exp_text, got_text)):
            assert a == b, f"line {n}"
        assert [i for i in got[0] if not isinstance(i, bytes)] == [i for i in expected[0] if not isinstance(i, bytes)]
        assert got == expected
    return expected[0]


# ---- builders --------------------------------------------------------------------------------------------------


def commit_key(group: str, topic: str, partition: int, key_version: int = 1) -> bytes:
    g, t = group.encode(), topic.encode()
    return struct.pack(">hh", key_version, len(g)) + g + struct.pack(">h", len(t)) + t + struct.pack(">i", partition)


def v3_value(offset: int, leader_epoch: int = -1, commit_ts: int = 1_700_000_000_000, metadata: str = "") -> bytes:
    m = metadata.encode()
    return struct.pack(">hqih", 3, offset, leader_epoch, len(m)) + m + struct.pack(">q", commit_ts)


def commits(n: int, *, group: str = "orders", topic: str = "payments", partitions: int = 12, start: int = 0,
            epoch: int | None = -1, ts: int | None = 1_700_000_000_000) -> list[tuple[bytes, bytes | None]]:
    out = []
    for i in range(n):
        value = v3_value(start + i, i % 5 if epoch is None else epoch, ts if ts is not None else 1_700_000_000_000 + i)
        out.append((commit_key(group, topic, i % partitions), value))
    return out


def batch(records, base_offset: int, **kw) -> bytes:
    return encode_batch(records, base_offset=base_offset, base_timestamp=1_700_000_000_000, base_sequence=0, **kw)


def segment_of(*batches_records, start: int = 0, **kw) -> bytes:
    out, offset = [], start
    for records in batches_records:
        out.append(batch(records, offset, **kw))
        offset += len(records)
    return b"".join(out)


# ---- the real captures -----------------------------------------------------------------------------------------


def test_identical_on_every_kafka_capture(captures, tmp_path):
    checked = 0
    for scenario in scenarios(captures):
        rebuild_segments(captures, scenario.name, tmp_path / scenario.name)
        for path in sorted((tmp_path / scenario.name).glob("__consumer_offsets-*/*.log")):
            partition = int(path.parent.name.rsplit("-", 1)[1])
            data = path.read_bytes()
            for part in (partition, None):
                items = assert_same(data, part)
                checked += sum(bytes(i).count(b"\n") for i in items if isinstance(i, bytes))
    assert checked > 100


def test_identical_on_the_benchmark_corpus():
    # Real offset commits from a Kafka 4.0 broker, 250,000 per segment (benchmarks/data/README.md): two segments.
    import io
    import tarfile

    import cramjam

    from tests.conftest import REPO

    archive = REPO / "benchmarks" / "data" / "consumer-offsets-5M.tar.zst"
    tar = tarfile.open(fileobj=io.BytesIO(bytes(cramjam.zstd.decompress(archive.read_bytes()))), mode="r:")
    segments = [m for m in tar if m.name.endswith(".log") and m.size][:2]
    assert len(segments) == 2
    for member in segments:
        data = tar.extractfile(member).read()  # type: ignore[union-attr]
        items = assert_same(data, int(member.name.split("/")[-2].rsplit("-", 1)[1]))
        assert len(items) == 1 and bytes(items[0]).count(b"\n") == 250_000


# ---- the common case, in every shape ---------------------------------------------------------------------------


def test_identical_and_every_line_fast_for_plain_commits():
    data = segment_of(*(commits(n, start=k * 1000) for k, n in enumerate([1, 2, 100, 64, 65, 1, 300, 7])))
    items = assert_same(data)
    assert len(items) == 1  # one chunk: nothing went the exact way
    line = bytes(items[0]).splitlines()[0].decode()
    assert line == ('{"partition":7,"offset":0,"key":{"type":"1","data":{"group":"orders","topic":"payments",'
                    '"partition":0}},"payload":{"version":"3","data":{"offset":0,"leaderEpoch":-1,"metadata":"",'
                    '"commitTimestamp":1700000000000}}}')


@pytest.mark.parametrize("partition", [0, 49, None])
def test_partition_prefix(partition):
    items = assert_same(segment_of(commits(3)), partition)
    first = bytes(items[0]).split(b"\n")[0]
    assert first.startswith(line_prefix(partition).encode())
    assert (b'"partition":' in first.split(b',"key"')[0]) == (partition is not None)


def test_many_single_record_batches_and_one_long_batch():
    # Hundreds of batches walk in lockstep; the long one is finished alone, past two-byte offset deltas.
    data = segment_of(*([commits(1, start=i) for i in range(500)] + [commits(9000, start=10_000)]))
    assert_same(data)


def test_varied_numbers_and_keys():
    rng = random.Random(5)
    groups = ["g", "gg", "a-much-longer-consumer-group-name-" * 3, "ünïcødé-grüppe", 'quote"back\\slash',
              "tab\there", "\u2028line-sep", "emoji-\U0001F600"]
    batches = []
    offset = 0
    for _ in range(60):
        records = []
        for _ in range(rng.randint(1, 40)):
            key = commit_key(rng.choice(groups), rng.choice(["t", "topic-x", "ü"]), rng.randint(-1, 2**31 - 1),
                             rng.choice([0, 1]))
            value = v3_value(rng.choice([0, -1, 2**63 - 1, -(2**63), rng.randint(0, 10**12)]),
                             rng.choice([-1, 0, 7, 2**31 - 1, -(2**31)]),
                             rng.choice([-1, 0, 2**63 - 1, 1_700_000_000_000 + rng.randint(0, 10**6)]))
            records.append((key, value))
        batches.append(records)
        offset += len(records)
    assert_same(segment_of(*batches, start=2**40))


def test_key_lengths_around_the_inline_limit():
    # A binary view keeps keys of up to 12 bytes inline and points at longer ones: 10 to 14 bytes here.
    records = [(commit_key(g, t, 3), v3_value(1)) for g in ("", "a", "ab", "abc") for t in ("", "b", "bc")]
    records += [(commit_key("ab", "bc", 3), v3_value(2))] * 3
    assert_same(segment_of(records))


def test_constant_and_varying_columns():
    assert_same(segment_of(commits(50, epoch=None, ts=None), commits(50, start=50)))


def test_run_boundaries(monkeypatch):
    monkeypatch.setattr(kd, "_RUN_RECORDS", 7)
    monkeypatch.setattr(kd, "_LOCKSTEP_MIN", 2)
    data = segment_of(*(commits(n, start=100 * k) for k, n in enumerate([3, 5, 1, 8, 2, 2, 30, 1])))
    assert_same(data)
    monkeypatch.setattr(kd, "_RUN_BYTES", 1)
    assert_same(data)


# ---- everything that is not the common case --------------------------------------------------------------------


def _record(record) -> tuple[bytes, bytes | None]:
    return encode_record(record)


def mixed_records() -> list[tuple[bytes | None, bytes | None]]:
    ts = 1_700_000_000_000
    return [
        (commit_key("g", "t", 0), v3_value(5)),
        _record(new_offset_commit("g", "t", 0, 6, commit_timestamp=ts, metadata="meta {\"x\": 1}")),
        _record(new_offset_commit("g", "t", 1, 7, commit_timestamp=ts, expire_timestamp=ts + 1)),  # v1
        _record(new_offset_commit("g", "t", 2, 8, commit_timestamp=ts, broker_version=(4, 1))),  # v4
        _record(new_offset_commit("g", "t", 2, 8, commit_timestamp=ts, broker_version=(2, 0))),
        _record(new_offset_commit_tombstone("g", "t", 0)),
        _record(new_offset_commit_tombstone("never-seen", "t", 9)),
        _record(new_empty_group_metadata("g", generation=3, protocol_type="consumer", current_state_timestamp=ts)),
        (commit_key("g", "t", 0), struct.pack(">hq", 0, 5) + struct.pack(">h", 0) + struct.pack(">q", ts)),  # v0
        (commit_key("g", "t", 0), struct.pack(">hq", 2, 5) + struct.pack(">h", 0) + struct.pack(">q", ts)),  # v2
        (commit_key("g", "t", 0), v3_value(5)[:-1]),  # truncated value: a record problem
        (commit_key("g", "t", 0), v3_value(5) + b"\x00"),  # trailing byte
        (commit_key("g", "t", 0), struct.pack(">h", 9) + b"\x00" * 22),  # unknown value version
        (commit_key("g", "t", 0), b"\x00"),  # value too short for a version
        (commit_key("g", "t", 0), b""),
        (struct.pack(">h", 99) + b"\x00\x01x", v3_value(1)),  # unknown record type
        (b"\x00\x01\x00\x02\xff\xfe\x00\x01t\x00\x00\x00\x01", v3_value(1)),  # group not UTF-8
        (commit_key("g", "t", 0)[:-1], v3_value(1)),  # key truncated
        (commit_key("g", "t", 0) + b"\x00", v3_value(1)),  # key with a trailing byte
        (None, v3_value(1)),  # null key
        (b"\x00", v3_value(1)),
        (b"", None),
        (commit_key("g", "t", 0, key_version=2), v3_value(1)),  # type 2 key, offset-commit-shaped
        (commit_key("g", "t", 0), v3_value(9, metadata="x" * 20)),
        (commit_key("g", "t", 0), v3_value(10)),
    ]


def test_uncommon_records_at_their_place():
    records = mixed_records()
    items = assert_same(segment_of(commits(5), records, commits(5, start=100), records[::-1]))
    assert any(isinstance(i, tuple) and i[0] == "record" for i in items)


def test_a_record_problem_as_the_first_record_of_a_key():
    assert_same(segment_of([(commit_key("fresh", "t", 0), v3_value(5)[:-1]), (commit_key("fresh", "t", 0),
                                                                              v3_value(5))]))


def test_batch_kinds_that_take_the_exact_path():
    ts = 1_700_000_000_000
    parts = [
        batch(commits(3), 0),
        encode_control_batch(ControlType.COMMIT, coordinator_epoch=4, base_offset=3, producer_id=9, producer_epoch=0,
                             timestamp=ts),
        batch(commits(3, start=4), 4, transactional=True, producer_id=9, producer_epoch=0),
        encode_control_batch(ControlType.ABORT, coordinator_epoch=4, base_offset=7, producer_id=9, producer_epoch=0,
                             timestamp=ts),
        batch(commits(4, start=8), 8, compression=CompressionType.GZIP),
        batch(commits(4, start=12), 12, compression=CompressionType.ZSTD),
        batch([LogRecord(16, ts, commit_key("g", "t", 1), v3_value(1), (("h", b"v"),))], 16),  # a header
        batch([(commit_key("g" * 9000, "t", 1), v3_value(1))], 17),  # a record longer than 8 KiB
        encode_legacy_message_set(commits(2, start=18), magic=0, base_offset=18),
        encode_legacy_message_set(commits(2, start=20), magic=1, base_offset=20, timestamp=ts),
        encode_legacy_message_set(commits(3, start=22), magic=1, base_offset=22, timestamp=ts,
                                  compression=CompressionType.SNAPPY),
        batch([], 25, last_offset_delta=3),  # emptied by compaction
        batch(commits(3, start=29), 29, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=ts + 5),
        batch(commits(2, start=2**62 - 1), 2**62 - 1),  # offsets near the top of int64
    ]
    assert_same(b"".join(parts))
    assert_same(b"".join(parts), None)


def test_control_batches_of_other_types():
    # Control types other than COMMIT/ABORT (KRaft's) print as controlType UNKNOWN; a marker of a type this codec
    # does not know at all too.
    parts = [batch(commits(2), 0)]
    for offset, control_type in ((2, 2), (3, 77)):
        parts.append(batch([(struct.pack(">hh", 0, control_type), b"\x00\x00")], offset, is_control=True,
                           transactional=True, producer_id=3, producer_epoch=0))
    parts.append(batch(commits(2, start=4), 4))
    items = assert_same(b"".join(parts))
    assert b'"controlType":"UNKNOWN"' in b"".join(i for i in items if isinstance(i, bytes))


# ---- damaged bytes ---------------------------------------------------------------------------------------------


def sample_segment() -> bytes:
    return segment_of(commits(3), commits(1, start=3), commits(70, start=4), mixed_records()[:8], commits(2, start=90))


@pytest.mark.parametrize("tail", [b"", b"\x00" * 5, b"\x00" * 30, b"\x00" * 12 + b"\x00\x00\x00\x05" + b"\x00" * 9])
def test_tails_that_cannot_be_framed(tail):
    data = sample_segment()
    assert_same(data + tail)
    assert_same(data[:-10])  # a truncated last batch
    assert_same(data + data[:40])


def test_crc_mismatch_with_and_without_verification():
    data = bytearray(sample_segment())
    data[80] ^= 0x01
    items = assert_same(bytes(data))
    assert items[0][0] == "corrupt" and "CRC" in items[0][2]
    assert_same(bytes(data), verify_crc=False)


def test_random_damage_without_crc_checks():
    # With the CRC check off, damaged bytes reach the record walk: whatever the vectorized walk makes of a
    # batch must be what the exact decoder makes of it (the same lines, or the same CorruptBatch).
    rng = random.Random(1234)
    clean = sample_segment()
    for _ in range(400):
        data = bytearray(clean)
        for _ in range(rng.choice([1, 1, 2, 3])):
            at = rng.randrange(len(data))
            data[at] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rng.randrange(256),
                                   data[at] ^ (1 << rng.randrange(8))])
        assert_same(bytes(data), verify_crc=False)
        assert_same(bytes(data), verify_crc=True)


def test_python_fallback_for_keys_matches(monkeypatch):
    # The key dictionary is built with Arrow binary views; without them (older pyarrow) a dict does it.
    monkeypatch.setattr(kd, "_dictionary_encode", kd._dictionary_encode_py)
    data = segment_of(*(commits(n, start=k * 100) for k, n in enumerate([1, 5, 80])))
    assert_same(data + segment_of(mixed_records(), start=500))


# ---- hand-made record bytes: every check of the record walk ----------------------------------------------------


def zz(n: int) -> bytes:
    """Minimal zig-zag varint/varlong bytes of ``n``."""
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def raw_record(key: bytes | None, value: bytes | None, *, ts: bytes = b"\x00", delta: bytes = b"\x00",
               klen: bytes | None = None, vlen: bytes | None = None, headers: bytes = b"\x00",
               size: bytes | None = None) -> bytes:
    body = (b"\x00" + ts + delta + (klen if klen is not None else zz(-1 if key is None else len(key))) + (key or b"")
            + (vlen if vlen is not None else zz(-1 if value is None else len(value))) + (value or b"") + headers)
    return (size if size is not None else zz(len(body))) + body


def raw_batch(records: bytes, count: int, base_offset: int) -> bytes:
    """A v2 batch around ready-made record bytes, with a correct CRC (docs/kafka-formats.md#batch-v2)."""
    from protocol._crc import crc32c

    tail = struct.pack(">hiqqqhii", 0, max(count - 1, 0), 1_700_000_000_000, 1_700_000_000_000, -1, -1, 0, count)
    tail += records
    return struct.pack(">qiib", base_offset, 49 + len(records), 0, 2) + struct.pack(">I", crc32c(tail)) + tail


K, V = commit_key("grp", "tp", 1), v3_value(42)
GOOD = raw_record(K, V)
BROKEN_RECORDS = {
    "trailing bytes after the records": (GOOD * 3 + b"\x00\x00", 3),
    "fewer records declared": (GOOD * 3, 2),
    "more records declared": (GOOD * 3, 4),
    "negative record length": (GOOD + raw_record(K, V, size=zz(-3)) + GOOD, 3),
    "record length past the batch": (GOOD + raw_record(K, V, size=zz(200)), 2),
    "record length shorter than its fields": (GOOD + raw_record(K, V, size=zz(len(GOOD) - 3)) + GOOD, 3),
    "record length longer than its fields": (raw_record(K, V, size=zz(len(GOOD))) + b"\x00", 1),
    "six-byte key length": (GOOD + raw_record(K, V, klen=b"\x80\x80\x80\x80\x80\x00"), 2),
    "key length -2": (GOOD + raw_record(K, V, klen=zz(-2)), 2),
    "value length -2": (GOOD + raw_record(K, V, vlen=zz(-2)), 2),
    "key length -2, no key bytes": (GOOD + raw_record(b"", V, klen=zz(-2)), 2),
    "value length -2, no value bytes": (GOOD + raw_record(K, b"", vlen=zz(-2)), 2),
    "records count far above what fits": (GOOD * 2, 2**31 - 1),
    "key past the record": (GOOD + raw_record(K, V, klen=zz(len(K) + 40)), 2),
    "eleven-byte timestamp delta": (GOOD + raw_record(K, V, ts=b"\x80" * 10 + b"\x00"), 2),
    "header count byte missing": (GOOD + raw_record(K, V, headers=b""), 2),
}
ODD_BUT_VALID = {
    "ten-byte timestamp delta": (GOOD + raw_record(K, V, ts=b"\xff" * 9 + b"\x01"), 2),
    "five-byte offset delta with bits past 32": (GOOD + raw_record(K, V, delta=b"\x84\x80\x80\x80\x10"), 2),
    "overlong one-byte numbers": (raw_record(K, V, delta=b"\x82\x00", klen=bytes([zz(len(K))[0] | 0x80, 0])), 1),
    "two-byte record length": (raw_record(commit_key("g" * 70, "t", 0), V), 1),
    "negative offset delta": (GOOD + raw_record(K, V, delta=zz(-5)), 2),
    "null key and empty key": (GOOD + raw_record(None, V) + raw_record(b"", V), 3),
    "a header": (GOOD + raw_record(K, V, headers=zz(1) + zz(1) + b"h" + zz(1) + b"v"), 2),
}


@pytest.mark.parametrize("lockstep_min", [1, 48, 10**9])
@pytest.mark.parametrize("case", sorted(BROKEN_RECORDS) + sorted(ODD_BUT_VALID))
def test_record_walk(case, lockstep_min, monkeypatch):
    monkeypatch.setattr(kd, "_LOCKSTEP_MIN", lockstep_min)
    records, count = BROKEN_RECORDS.get(case) or ODD_BUT_VALID[case]
    neighbours = [raw_batch(GOOD * n, n, 1000 * (i + 1)) for i, n in enumerate([1, 2, 1, 3])]
    data = b"".join(neighbours[:2]) + raw_batch(records, count, 100) + b"".join(neighbours[2:])
    items = assert_same(data)
    corrupt = [i for i in items if isinstance(i, tuple) and i[0] == "corrupt"]
    assert bool(corrupt) == (case in BROKEN_RECORDS), items


def test_offsets_past_int64():
    # Python ints do not overflow; numpy's int64 would wrap, so such batches take the exact path.
    top = 2**63 - 2
    data = raw_batch(GOOD + raw_record(K, V, delta=zz(5)), 2, top) + raw_batch(GOOD, 1, 5)
    items = assert_same(data)
    assert str(top + 5).encode() in items[0]
