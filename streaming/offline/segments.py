"""Finding and reading broker log segment files of ``__consumer_offsets`` (offline forensics).

Accepts what a person points at: a segment file, a ``__consumer_offsets-N`` partition directory, or a broker log
directory holding many of them. The partition number comes from the directory name, as in Kafka's own layout.
This is the file-reading edge; decoding stays in ``protocol``.
"""

from __future__ import annotations

import mmap
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from protocol.batch import CorruptBatch, RecordBatch, iter_batches

__all__ = ["Segment", "SegmentPathError", "find_segments", "open_segment", "read_segment", "segment_size",
           "segments_size"]

_PARTITION_DIR = re.compile(r"^__consumer_offsets-(\d+)$")


class SegmentPathError(ValueError):
    """A path given by the user that holds no segment files."""


@dataclass(frozen=True, slots=True)
class Segment:
    path: Path
    partition: int | None  # None when the file is not inside a ``__consumer_offsets-N`` directory
    base_offset: int | None  # from the file name (``00000000000000000042.log``)


def _segment(path: Path) -> Segment:
    # The absolute path, so that a file named relative to its own folder (``cd __consumer_offsets-7; ... x.log``)
    # still gets its partition.
    match = _PARTITION_DIR.match(path.absolute().parent.name)
    try:
        base = int(path.stem)
    except ValueError:
        base = None
    return Segment(path, int(match.group(1)) if match else None, base)


def _segments_in_partition_dir(directory: Path) -> list[Segment]:
    files = [p for p in directory.iterdir() if p.suffix == ".log" and p.is_file()]
    return sorted((_segment(p) for p in files), key=lambda s: (s.base_offset is None, s.base_offset or 0, s.path.name))


def find_segments(path: str | os.PathLike[str]) -> list[Segment]:
    """Segments under ``path`` ordered by partition, then base offset. Raises :class:`SegmentPathError`."""
    p = Path(path)
    if not p.exists():
        raise SegmentPathError(f"{p}: no such file or directory")
    if p.is_file():
        if p.suffix != ".log" and not _starts_with_a_batch(p):
            raise SegmentPathError(f"{p}: not a Kafka log segment (no record batch at its start); segments are the "
                                   "*.log files in __consumer_offsets-N folders")
        return [_segment(p)]
    if _PARTITION_DIR.match(p.name):
        found = _segments_in_partition_dir(p)
    else:
        found = []
        partition_dirs = [d for d in p.iterdir() if d.is_dir() and _PARTITION_DIR.match(d.name)]
        for d in sorted(partition_dirs, key=lambda d: int(_PARTITION_DIR.match(d.name).group(1))):  # type: ignore
            found.extend(_segments_in_partition_dir(d))
        if not found:
            found = _segments_in_partition_dir(p)
    if not found:
        raise SegmentPathError(f"{p}: no .log segment files found (expected a segment, a __consumer_offsets-N "
                               "directory or a broker log directory)")
    return found


def segment_size(segment: Segment) -> int:
    """The segment file's size in bytes (0 when it cannot be read: the reader reports that itself)."""
    try:
        return segment.path.stat().st_size
    except OSError:
        return 0


def segments_size(paths: Iterable[str | os.PathLike[str]]) -> int:
    """The bytes of every segment under ``paths``: the total that progress is measured against (paths without
    segments count 0; the work reports them)."""
    total = 0
    for path in paths:
        try:
            total += sum(segment_size(s) for s in find_segments(path))
        except (SegmentPathError, OSError):
            continue
    return total


def _starts_with_a_batch(path: Path) -> bool:
    """Whether a file begins like a segment: a batch header (base offset, length, leader epoch, magic 0-2) whose
    length fits the file. A file named otherwise (a JSON export, a copy of an index) is told apart before its
    first bytes are read as a batch length."""
    with open(path, "rb") as fh:
        head = fh.read(17)
        size = os.fstat(fh.fileno()).st_size
    if len(head) < 17:
        return False
    length = int.from_bytes(head[8:12], "big", signed=True)
    return head[16] <= 2 and 0 < length <= size - 12


@contextmanager
def open_segment(segment: Segment) -> Iterator[memoryview]:
    """The bytes of one segment file, memory-mapped so a 1 GiB segment is not copied into the heap.

    The view is valid inside the ``with`` block only; nothing made from it (numpy or Arrow arrays over it) may
    outlive the block.
    """
    with open(segment.path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            yield memoryview(b"")
            return
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        view = memoryview(mapped)
        try:
            yield view
        except BaseException:
            # While an exception propagates, its traceback may still hold arrays made from the view (a reader
            # gone away mid-dump): then the mapping is left to the garbage collector rather than the exception
            # replaced by "cannot close exported pointers".
            try:
                view.release()
                mapped.close()
            except BufferError:
                pass
            raise
        view.release()
        mapped.close()


def read_segment(segment: Segment, *, verify_crc: bool = True) -> Iterator[RecordBatch | CorruptBatch]:
    """Batches of one segment file (memory-mapped, see :func:`open_segment`)."""
    with open_segment(segment) as view:
        if len(view):
            yield from iter_batches(view, verify_crc=verify_crc)
