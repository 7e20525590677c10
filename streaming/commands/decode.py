"""``groupscope decode``: segment files to JSON lines, in groupscope's form or exactly as Kafka's dump tool.

Each problem (a missing path, a corrupt batch, an undecodable record) is one line on stderr and the run goes on
with the next batch; the exit status tells at the end whether anything was wrong.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import IO, Iterable

from protocol.batch import ControlType, CorruptBatch
from protocol.codec import decode_record
from protocol.errors import CodecError
from protocol._offsets import parse_offset_commit_value
from protocol.kafka_json import kafka_key_json, kafka_offset_commit_payload_text, kafka_payload_json
from protocol.plain import record_to_plain
from protocol.records import UnknownRecord

from streaming.offline.segments import Segment, SegmentPathError, find_segments, read_segment

FORMATS = ("groupscope", "kafka")


@dataclass
class DecodeReport:
    records: int = 0
    problems: list[str] = field(default_factory=list)


def _dumps(obj: object) -> str:
    # Compact separators and raw UTF-8 like Jackson, so output diffs cleanly against Kafka's tool.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def decode_paths(paths: Iterable[str], fmt: str, out: IO[str], err: IO[str], *, verify_crc: bool = True) -> DecodeReport:
    report = DecodeReport()

    def problem(text: str) -> None:
        report.problems.append(text)
        print(text, file=err)

    for path in paths:
        try:
            segments = find_segments(path)
        except BrokenPipeError:
            raise
        except (SegmentPathError, OSError) as exc:
            problem(f"groupscope decode: {exc}")
            continue
        for segment in segments:
            try:
                _decode_segment(segment, fmt, out, problem, report, verify_crc)
            except BrokenPipeError:
                raise
            except OSError as exc:
                problem(f"groupscope decode: {segment.path}: {exc.strerror or exc}")
    return report


class KafkaLineRenderer:
    """Renders data records as ``--format kafka`` lines.

    Hand-tuned because a dump is millions of lines: keys repeat (one per group, topic and partition), so their JSON
    is cached by key bytes, and offset-commit values are formatted straight to text. Raises CodecError like
    ``decode_record``.
    """

    _LIMIT = 100_000

    def __init__(self) -> None:
        self._keys: dict[bytes, str] = {}

    def line(self, partition: int | None, offset: int, key: bytes | None, value: bytes | None) -> str:
        head = f'{{"partition":{"null" if partition is None else partition},"offset":{offset},'
        key_text = self._keys.get(key) if key is not None else None
        if (key_text is not None and value is not None and key[1] <= 1 and len(value) >= 2 and value[0] == 0
                and value[1] <= 3):
            fields = parse_offset_commit_value(value, value[1])
            return f'{head}"key":{key_text},"payload":{kafka_offset_commit_payload_text(value[1], *fields)}}}'
        decoded = decode_record(key, value)
        if isinstance(decoded, UnknownRecord):
            return head + f'"unknown":{_dumps(decoded.reason)}}}'
        if key_text is None:
            key_text = _dumps(kafka_key_json(decoded))
            if len(self._keys) >= self._LIMIT:
                self._keys.clear()
            self._keys[bytes(key)] = key_text  # type: ignore[arg-type]
        return f'{head}"key":{key_text},"payload":{_dumps(kafka_payload_json(decoded))}}}'


def _decode_segment(segment: Segment, fmt: str, out: IO[str], problem, report: DecodeReport, verify_crc: bool) -> None:
    part = segment.partition
    write = out.write
    renderer = KafkaLineRenderer()
    for batch in read_segment(segment, verify_crc=verify_crc):
        if isinstance(batch, CorruptBatch):
            problem(f"groupscope decode: {segment.path}: batch at byte {batch.position}: {batch.reason}")
            continue
        header = batch.header
        if header.is_control:
            marker = batch.control
            for rec in batch.records:
                report.records += 1
                if marker is None:
                    ctype = ControlType.UNKNOWN.name
                    obj = {"partition": part, "offset": rec.offset, "controlType": ctype}
                elif fmt == "kafka":
                    obj = {"partition": part, "offset": rec.offset, "endTxnMarker": marker.control_type.name,
                           "coordinatorEpoch": marker.coordinator_epoch}
                else:
                    obj = {"partition": part, "offset": rec.offset, "timestamp": rec.timestamp,
                           "control": marker.control_type.name, "coordinator_epoch": marker.coordinator_epoch,
                           "producer_id": header.producer_id, "producer_epoch": header.producer_epoch}
                write(_dumps(obj) + "\n")
            continue
        for rec in batch.records:
            report.records += 1
            try:
                if fmt == "kafka":
                    write(renderer.line(part, rec.offset, rec.key, rec.value) + "\n")
                    continue
                decoded = decode_record(rec.key, rec.value)
            except CodecError as exc:
                problem(f"groupscope decode: {segment.path}: partition {part} offset {rec.offset}: {exc}")
                continue
            obj = {"partition": part, "offset": rec.offset, "timestamp": rec.timestamp}
            if header.is_transactional:
                obj["producer_id"] = header.producer_id
                obj["transactional"] = True
            obj.update(record_to_plain(decoded))
            write(_dumps(obj) + "\n")


def run_decode(paths: tuple[str, ...], fmt: str, verify_crc: bool) -> int:
    report = decode_paths(paths, fmt, sys.stdout, sys.stderr, verify_crc=verify_crc)
    if report.problems:
        print(f"groupscope decode: {len(report.problems)} problem(s), {report.records} record(s) read", file=sys.stderr)
        return 1
    return 0
