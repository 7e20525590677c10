"""``groupscope decode``: segment files to JSON lines, in groupscope's form or exactly as Kafka's dump tool.

Each problem (a missing path, a corrupt batch, an undecodable record) is one line on stderr and the run goes on
with the next path or batch; the exit status tells at the end what was wrong, as ``describe`` does: 2 when a path
could not be used (missing, unreadable, or holding no segment files: a bad argument, like click's usage errors),
else 1 when some data did not decode, else 0. A reader that goes away (``| head``) ends the run quietly with 0.

The partition is not stored in segment files; it comes from the folder a segment lies in (``__consumer_offsets-N``,
Kafka's layout). The lines of a segment outside such a folder have no ``partition`` field.

``--format kafka`` renders with :class:`protocol.kafka_dump.KafkaDump` (whole runs of batches at once); the
per-record path it is checked against stays callable as ``decode_paths(..., exact=True)``.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from dataclasses import dataclass, field
from typing import IO, Callable, Iterable

import click

from protocol.batch import CorruptBatch, RecordBatch
from protocol.codec import decode_record
from protocol.errors import CodecError
from protocol.kafka_dump import KafkaDump, KafkaLineRenderer, RecordProblem, kafka_batch_items
from protocol.plain import record_to_plain

from streaming.offline.segments import (Segment, SegmentPathError, find_segments, open_segment, read_segment,
                                        segment_size, segments_size)
from streaming.progress import Progress

FORMATS = ("groupscope", "kafka")

EXIT_OK = 0
EXIT_BAD_DATA = 1  # a corrupt batch or an undecodable record
EXIT_BAD_PATH = 2  # a path given that is missing, unreadable or holds no segment files


@dataclass
class DecodeReport:
    records: int = 0
    problems: list[str] = field(default_factory=list)
    bad_paths: int = 0

    @property
    def exit_code(self) -> int:
        if self.bad_paths:
            return EXIT_BAD_PATH
        return EXIT_BAD_DATA if self.problems else EXIT_OK


def _dumps(obj: object) -> str:
    # Compact separators and raw UTF-8 like Jackson, so output diffs cleanly against Kafka's tool.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def decode_paths(paths: Iterable[str], fmt: str, out: IO[str], err: IO[str], *, verify_crc: bool = True,
                 exact: bool = False, progress: Progress | None = None) -> DecodeReport:
    """Decodes every segment under ``paths`` to ``out``; problems go to ``err``, one line each.

    ``exact`` renders ``--format kafka`` record by record (the reference the fast renderer must match).
    ``progress``: told the records and bytes done as batches are read.
    """
    report = DecodeReport()
    read_before = 0  # bytes of the segments already done

    def tick(position: int) -> None:
        """A batch read at ``position`` of the current segment."""
        if progress is not None:
            progress.update(records=dump.records if dump is not None else report.records, bytes=read_before + position)

    def problem(text: str) -> None:
        report.problems.append(text)
        print(text, file=err)

    dump = KafkaDump(verify_crc=verify_crc) if fmt == "kafka" and not exact else None
    write_bytes = _bytes_writer(out) if dump is not None else None
    renderer = KafkaLineRenderer()
    for path in paths:
        try:
            segments = find_segments(path)
        except BrokenPipeError:
            raise
        except (SegmentPathError, OSError) as exc:
            report.bad_paths += 1
            problem(f"groupscope decode: {exc}")
            continue
        for segment in segments:
            try:
                if dump is not None:
                    _dump_segment(segment, dump, write_bytes, problem, tick)  # type: ignore[arg-type]
                else:
                    _decode_segment(segment, fmt, out, problem, report, verify_crc, renderer, tick)
            except BrokenPipeError:
                raise
            except OSError as exc:
                report.bad_paths += 1
                problem(f"groupscope decode: {segment.path}: {exc.strerror or exc}")
            read_before += segment_size(segment)
            tick(0)
    if dump is not None:
        report.records = dump.records
    return report


def _bytes_writer(out: IO[str]) -> Callable[[bytes | memoryview], object]:
    """Writes UTF-8 text chunks to ``out``: straight to its byte buffer when it has one that expects UTF-8 (a
    dump is gigabytes; decoding it to ``str`` only to encode it again would cost as much as rendering it)."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is None or not encoding or codecs.lookup(encoding).name != "utf-8":
        return lambda chunk: out.write(str(chunk, "utf-8"))
    out.flush()

    def write(chunk: bytes | memoryview) -> None:
        # A buffered write of a chunk larger than the buffer can return early with part of it written (it does
        # when the reader of a pipe has gone: the error only comes with the next write), so write until done.
        rest = memoryview(chunk)
        while rest:
            rest = rest[buffer.write(rest) :]

    return write


def _record_where(segment: Segment, offset: int) -> str:
    part = "" if segment.partition is None else f"partition {segment.partition} "
    return f"groupscope decode: {segment.path}: {part}offset {offset}"


def _dump_segment(segment: Segment, dump: KafkaDump, write: Callable[[bytes | memoryview], object],
                  problem: Callable[[str], None], tick: Callable[[int], None]) -> None:
    with open_segment(segment) as view:
        for item in dump.segment(view, segment.partition):
            tick(0)  # the records so far; the segment's bytes count once it is done
            if isinstance(item, CorruptBatch):
                problem(f"groupscope decode: {segment.path}: batch at byte {item.position}: {item.reason}")
            elif isinstance(item, RecordProblem):
                problem(f"{_record_where(segment, item.offset)}: {item.reason}")
            else:
                write(item)
            del item  # no chunk of the mapped file may outlive the mapping


def _decode_segment(segment: Segment, fmt: str, out: IO[str], problem, report: DecodeReport, verify_crc: bool,
                    renderer: KafkaLineRenderer, tick: Callable[[int], None]) -> None:
    part = segment.partition
    write = out.write
    for batch in read_segment(segment, verify_crc=verify_crc):
        tick(batch.header.position if isinstance(batch, RecordBatch) else batch.position)
        if isinstance(batch, CorruptBatch):
            problem(f"groupscope decode: {segment.path}: batch at byte {batch.position}: {batch.reason}")
            continue
        report.records += len(batch.records)
        if fmt == "kafka":
            for item in kafka_batch_items(batch, part, renderer):
                if isinstance(item, str):
                    write(item)
                else:
                    problem(f"{_record_where(segment, item.offset)}: {item.reason}")
            continue
        header = batch.header
        base: dict[str, object] = {} if part is None else {"partition": part}
        if header.is_control:
            marker = batch.control
            for rec in batch.records:
                if marker is None:
                    obj = dict(base, offset=rec.offset, controlType="UNKNOWN")
                else:
                    obj = dict(base, offset=rec.offset, timestamp=rec.timestamp, control=marker.control_type.name,
                               coordinator_epoch=marker.coordinator_epoch, producer_id=header.producer_id,
                               producer_epoch=header.producer_epoch)
                write(_dumps(obj) + "\n")
            continue
        for rec in batch.records:
            try:
                decoded = decode_record(rec.key, rec.value)
            except CodecError as exc:
                problem(f"{_record_where(segment, rec.offset)}: {exc}")
                continue
            obj = dict(base, offset=rec.offset, timestamp=rec.timestamp)
            if header.is_transactional:
                obj["producer_id"] = header.producer_id
                obj["transactional"] = True
            obj.update(record_to_plain(decoded))
            write(_dumps(obj) + "\n")


def run_decode(paths: tuple[str, ...], fmt: str, verify_crc: bool) -> int:
    try:
        with Progress("groupscope decode", total_bytes=segments_size(paths)) as progress:
            report = decode_paths(paths, fmt, sys.stdout, sys.stderr, verify_crc=verify_crc, progress=progress)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly with status 0, and keep Python's final flush of stdout
        # from failing again on the closed pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_OK
    if report.problems:
        print(f"groupscope decode: {len(report.problems)} problem(s), {report.records} record(s) read", file=sys.stderr)
    return report.exit_code


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="groupscope", show_default=True,
              help="groupscope: rich JSON; kafka: the objects kafka-dump-log.sh --offsets-decoder prints.")
@click.option("--no-verify-crc", is_flag=True, help="Decode batches even when their CRC does not match.")
def decode(paths: tuple[str, ...], fmt: str, no_verify_crc: bool) -> None:
    """Decode __consumer_offsets segment files (or partition / log directories) to JSON lines.

    Each line's "partition" comes from the segment's __consumer_offsets-N folder; segments outside one print lines
    without it. Exit status: 0 all decoded, 1 some data did not decode, 2 a path is missing or holds no segments.
    """
    sys.exit(run_decode(paths, fmt, not no_verify_crc))
