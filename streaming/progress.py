"""How far long work has come, said the way its reader expects: a backfill of a big log directory, ``decode`` or
``describe`` over a whole broker's data, the cold catch-up of ``run``.

* On a terminal: a progress bar (rich's, on stderr: stdout may be the data) with records and bytes done of their
  totals, the rate and the time left; it disappears when the work ends, leaving the command's own summary.
* In logs and under a pipe: one line every ``every_s`` seconds (15 by default) with the same figures, written to a
  logger or a stream.
* Nothing at all for work that ends within ``quiet_s`` (the first line or the bar come only after it).

The work reports what it has done with :meth:`Progress.update` (absolute figures, a few attribute writes: cheap
enough per record batch); a daemon thread does all the showing, so work that waits (a Spark batch in flight) is
still reported on time. Totals may be unknown (None): the figures then say what is done, without a share or time
left. Use it as a context manager, or call :meth:`close`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, Mapping

__all__ = ["Figures", "OffsetsRead", "Progress", "describe_figures", "short_figures"]

DEFAULT_EVERY_S = 15.0
DEFAULT_QUIET_S = 3.0


@dataclass(frozen=True)
class Figures:
    """One reading of a piece of work: what is done, of which totals (None: not known), after how long."""

    records: int
    bytes: int
    total_records: int | None
    total_bytes: int | None
    seconds: float

    @property
    def share(self) -> float | None:
        """The part done, from bytes where their total is known, else from records."""
        for done, total in ((self.bytes, self.total_bytes), (self.records, self.total_records)):
            if total:
                return min(1.0, done / total)
        return None

    @property
    def seconds_left(self) -> float | None:
        share = self.share
        if share is None or share <= 0 or self.seconds <= 0:
            return None
        return self.seconds * (1 - share) / share


class OffsetsRead:
    """The records of a catch-up, counted in offsets: ``ranges`` maps each partition to ``(first offset to read,
    end)``; :meth:`read_to` takes where each partition's reading has got to (the next offset) and returns the
    offsets read so far (markers and aborted records included, as they are in the total)."""

    def __init__(self, ranges: Mapping[int, tuple[int, int]]) -> None:
        self.ranges = dict(ranges)
        self.total = sum(max(0, end - start) for start, end in self.ranges.values())
        self._next: dict[int, int] = {}

    def read_to(self, next_offsets: Mapping[int, int]) -> int:
        self._next.update({p: o for p, o in next_offsets.items() if p in self.ranges})
        return sum(max(0, min(self._next.get(p, start), end) - start) for p, (start, end) in self.ranges.items())


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} TB"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def describe_figures(f: Figures) -> str:
    """``1,234,567 of 5,000,000 records, 120.3 MB of 500.0 MB (24%), 45,000 records/s, 2.4 MB/s, about 3 min 10 s
    left``: the line of the log and pipe form."""
    parts = [f"{f.records:,} of {f.total_records:,} records" if f.total_records else f"{f.records:,} records"]
    if f.bytes or f.total_bytes:
        parts.append(f"{_size(f.bytes)} of {_size(f.total_bytes)}" if f.total_bytes else _size(f.bytes))
    if f.share is not None:  # after the figure it is the share of: bytes where their total is known
        parts[-1 if f.total_bytes else 0] += f" ({f.share:.0%})"
    if f.seconds > 0 and f.records:  # no rate before the first records are done (a first batch in flight)
        parts.append(f"{f.records / f.seconds:,.0f} records/s")
        if f.bytes:
            parts.append(f"{_size(f.bytes / f.seconds)}/s")
    left = f.seconds_left
    if left is not None:
        parts.append(f"about {_duration(left)} left")
    return ", ".join(parts)


def _count(n: float) -> str:
    """740k, 1.2M: a count short enough for a bar's line."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}" if n < 10 * scale else f"{n / scale:.0f}{unit}"
    return f"{n:.0f}"


def short_figures(f: Figures) -> str:
    """``74%  740k/1.0M records  37.0/50.0 MB  508k rec/s  3 s left``: the figures beside a bar, short enough for
    an 80-column terminal."""
    parts = [] if f.share is None else [f"{f.share:.0%}"]
    parts.append(f"{_count(f.records)}/{_count(f.total_records)} records" if f.total_records
                 else f"{_count(f.records)} records")
    if f.bytes or f.total_bytes:
        parts.append(f"{_size(f.bytes).split()[0]}/{_size(f.total_bytes)}" if f.total_bytes else _size(f.bytes))
    if f.seconds > 0 and f.records:
        parts.append(f"{_count(f.records / f.seconds)} rec/s")
    left = f.seconds_left
    if left is not None:
        parts.append(f"{_duration(left)} left")
    return "  ".join(parts)


def _own_copy(stream: IO[str]) -> tuple[IO[str], bool]:
    """A stream of our own on ``stream``'s file descriptor, and whether it is ours to close. While Spark's JVM
    starts, the process's fd 2 points at the pipe that turns the JVM's output into log records
    (``streaming.spark.jvm_output``): a bar drawn through fd 2 then would come out as JVM log lines."""
    try:
        fd = os.dup(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured, a StringIO)
        return stream, False
    return open(fd, "w", buffering=1, encoding="utf-8", errors="replace"), True


class Progress:
    """Shows the progress of one piece of work named ``what`` (see the module's description).

    ``stream``: where the bar or the lines go (default stderr); ``logger``: lines go to it instead (logs, never a
    bar). ``terminal``: force the bar (True) or the lines (False); default: the bar when ``stream`` is a terminal
    and no ``logger`` is given."""

    def __init__(self, what: str, *, total_records: int | None = None, total_bytes: int | None = None,
                 stream: IO[str] | None = None, logger: logging.Logger | None = None, terminal: bool | None = None,
                 every_s: float = DEFAULT_EVERY_S, quiet_s: float = DEFAULT_QUIET_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.total_records = total_records
        self.total_bytes = total_bytes
        self.records = 0
        self.bytes = 0
        self.stream, self._own_stream = _own_copy(stream if stream is not None else sys.stderr)
        self.logger = logger
        if terminal is None:
            terminal = logger is None and bool(getattr(self.stream, "isatty", lambda: False)())
        self.terminal = terminal
        self.every_s = every_s
        self.quiet_s = quiet_s
        self.clock = clock
        self.started = clock()
        self.lines = 0  # lines written so far (the log and pipe form)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._show, name=f"groupscope-progress-{what}", daemon=True)
        self._thread.start()

    def update(self, *, records: int | None = None, bytes: int | None = None,  # noqa: A002 - the figure's name
               total_records: int | None = None, total_bytes: int | None = None) -> None:
        """Sets what is done so far (absolute figures), and totals found out along the way."""
        if records is not None:
            self.records = records
        if bytes is not None:
            self.bytes = bytes
        if total_records is not None:
            self.total_records = total_records
        if total_bytes is not None:
            self.total_bytes = total_bytes

    def figures(self) -> Figures:
        return Figures(self.records, self.bytes, self.total_records, self.total_bytes, self.clock() - self.started)

    def close(self) -> None:
        """Ends the showing (the bar disappears); waits for the thread, so nothing is written after this returns."""
        self._done.set()
        self._thread.join()
        if self._own_stream:
            self.stream.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the showing thread ----------------------------------------------------------------------------------

    def _show(self) -> None:
        if self._done.wait(self.quiet_s):
            return  # short work: nothing said
        try:
            if self.terminal:
                self._bar()
            else:
                self._lines()
        except Exception:  # noqa: BLE001 - progress must never fail the work it reports on
            logging.getLogger("groupscope.progress").debug("progress display failed", exc_info=True)

    def _lines(self) -> None:
        # The first line comes every_s after the start: work shorter than that says nothing.
        while not self._done.wait(max(0.0, self.every_s * (self.lines + 1) - (self.clock() - self.started))):
            line = f"{self.what}: {describe_figures(self.figures())}"
            if self.logger is not None:
                self.logger.info("%s", line)
            else:
                print(line, file=self.stream, flush=True)
            self.lines += 1

    def _bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn
        from rich.progress import Progress as Bar

        bar = Bar(TextColumn("{task.description}"), BarColumn(bar_width=10), TextColumn("{task.fields[figures]}"),
                  console=Console(file=self.stream), transient=True, redirect_stdout=False, redirect_stderr=False)
        with bar:  # the command's name is on the terminal already: the bar says what it does
            task = bar.add_task(self.what.removeprefix("groupscope "), total=None, figures="")
            while True:
                f = self.figures()
                share = f.share
                bar.update(task, total=None if share is None else 1.0, completed=share or 0.0,
                           figures=short_figures(f))
                if self._done.wait(0.5):
                    break
