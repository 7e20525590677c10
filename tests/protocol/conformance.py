"""Loaders for the real Kafka 4.0 captures under ``tests/data/conformance/kafka-4.0``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from protocol.batch import LogRecord, encode_batch

_DUMP_LINE = re.compile(r"^\| offset: (\d+) .*? key: (\{.*?\}) payload: (.*)$")
_MARKER_LINE = re.compile(r"^\| offset: (\d+) .*? endTxnMarker: (\w+) coordinatorEpoch: (\d+)$")


@dataclass(frozen=True)
class CapturedRecord:
    scenario: str
    partition: int
    offset: int
    raw: dict[str, Any]

    @property
    def key(self) -> bytes:
        return bytes.fromhex(self.raw["key_hex"])

    @property
    def value(self) -> bytes | None:
        v = self.raw["value_hex"]
        return None if v is None else bytes.fromhex(v)

    @property
    def is_control(self) -> bool:
        return bool(self.raw["batch"]["is_control"])


def scenarios(captures: Path) -> list[Path]:
    found = sorted(p for p in (captures / "conformance" / "kafka-4.0").iterdir() if (p / "records.jsonl").exists())
    assert found, "no kafka-4.0 scenarios found"
    return found


def captured_records(captures: Path) -> Iterator[CapturedRecord]:
    for scenario in scenarios(captures):
        with open(scenario / "records.jsonl", encoding="utf-8") as fh:
            for line in fh:
                raw = json.loads(line)
                yield CapturedRecord(scenario.name, raw["partition"], raw["offset"], raw)


def dumplog_reference(captures: Path) -> dict[tuple[str, int, int], tuple[Any, Any]]:
    """``(scenario, partition, offset) -> (key object, payload object or "<DELETE>")`` from Kafka's own tool,
    and ``("marker", type, epoch)`` tuples for transaction markers."""
    ref: dict[tuple[str, int, int], tuple[Any, Any]] = {}
    for scenario in scenarios(captures):
        for path in sorted((scenario / "dumplog").glob("*.txt")):
            partition = int(re.search(r"__consumer_offsets-(\d+)\.", path.name).group(1))  # type: ignore[union-attr]
            for line in path.read_text(encoding="utf-8").splitlines():
                parsed = parse_dump_line(line)
                if parsed is not None:
                    ref[(scenario.name, partition, parsed[0])] = parsed[1]
    return ref


def parse_dump_line(line: str) -> tuple[int, tuple[Any, Any]] | None:
    """One record line of ``kafka-dump-log --offsets-decoder``: ``(offset, (key object, payload object or
    "<DELETE>"))``, or ``(offset, ("marker", (type, coordinator epoch)))`` for a transaction marker; None for the
    tool's other lines (batch headers, file names)."""
    m = _DUMP_LINE.match(line)
    if m:
        payload = m.group(3)
        return int(m.group(1)), (json.loads(m.group(2)), payload if payload == "<DELETE>" else json.loads(payload))
    m = _MARKER_LINE.match(line)
    if m:
        return int(m.group(1)), ("marker", (m.group(2), int(m.group(3))))
    return None


def rebuild_segments(captures: Path, scenario: str, out_dir: Path) -> list[Path]:
    """Writes the scenario's records back into ``__consumer_offsets-N/00000000000000000000.log`` files, batch by
    batch as the broker wrote them (same offsets, timestamps, producer ids, transactional and control flags)."""
    from protocol.batch import ControlType, LogRecord, encode_batch, encode_control_batch

    batches: dict[tuple[int, int], list[dict[str, Any]]] = {}
    with open(captures / "conformance" / "kafka-4.0" / scenario / "records.jsonl", encoding="utf-8") as fh:
        for line in fh:
            raw = json.loads(line)
            batches.setdefault((raw["partition"], raw["batch"]["base_offset"]), []).append(raw)
    logs: dict[int, list[bytes]] = {}
    for (partition, _base), rows in sorted(batches.items()):
        header = rows[0]["batch"]
        if header["is_control"]:
            (row,) = rows
            chunk = encode_control_batch(
                ControlType.COMMIT if row["control"]["type"].upper() == "COMMIT" else ControlType.ABORT,
                coordinator_epoch=row["control"]["coordinator_epoch"],
                base_offset=row["offset"],
                producer_id=header["producer_id"],
                producer_epoch=header["producer_epoch"],
                timestamp=row["timestamp"],
                partition_leader_epoch=header["partition_leader_epoch"],
            )
        else:
            chunk = encode_batch(
                [
                    LogRecord(
                        offset=r["offset"],
                        timestamp=r["timestamp"],
                        key=bytes.fromhex(r["key_hex"]),
                        value=None if r["value_hex"] is None else bytes.fromhex(r["value_hex"]),
                    )
                    for r in rows
                ],
                partition_leader_epoch=header["partition_leader_epoch"],
                producer_id=header["producer_id"],
                producer_epoch=header["producer_epoch"],
                base_sequence=header["base_sequence"],
                transactional=header["is_transactional"],
            )
        logs.setdefault(partition, []).append(chunk)
    written = []
    for partition, chunks in logs.items():
        directory = out_dir / f"__consumer_offsets-{partition}"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "00000000000000000000.log"
        path.write_bytes(b"".join(chunks))
        written.append(path)
    return written


def transaction_batches(captures: Path) -> dict[int, list[tuple[dict[str, Any], list[tuple[LogRecord, bool]]]]]:
    """The ``d_transactions`` recording (a real broker's transactional commits, committed and aborted) as its
    batches per partition, in log order: each batch's fields and its records with whether the broker showed them
    to ``read_committed`` consumers."""
    recording = captures / "conformance" / "kafka-4.0" / "d_transactions" / "records.jsonl"
    batches: dict[tuple[int, int], tuple[dict[str, Any], list[tuple[LogRecord, bool]]]] = {}
    for line in recording.read_text().splitlines():
        r = json.loads(line)
        b = r["batch"]
        record = LogRecord(r["offset"], r["timestamp"], bytes.fromhex(r["key_hex"]),
                           None if r["value_hex"] is None else bytes.fromhex(r["value_hex"]))
        batches.setdefault((r["partition"], b["base_offset"]), (b, []))[1].append((record, r["visible_read_committed"]))
    by_partition: dict[int, list[tuple[dict[str, Any], list[tuple[LogRecord, bool]]]]] = {}
    for (partition, _), item in sorted(batches.items()):
        by_partition.setdefault(partition, []).append(item)
    return by_partition


def encode_recorded_batch(b: dict[str, Any], records: list[tuple[LogRecord, bool]]) -> bytes:
    """A recorded batch encoded again; for uncompressed batches these are the broker's own bytes."""
    return encode_batch([rec for rec, _ in records], base_offset=b["base_offset"], max_timestamp=b["max_timestamp"],
                        producer_id=b["producer_id"], producer_epoch=b["producer_epoch"],
                        base_sequence=b["base_sequence"], transactional=b["is_transactional"],
                        is_control=b["is_control"], partition_leader_epoch=b["partition_leader_epoch"])
