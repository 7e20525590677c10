"""Where a starting job stands, in the lines an operator reads: where it resumes and when it has caught up.

* :func:`checkpoint_position`: the last micro-batch the Spark checkpoint says was completed, and the
  ``__consumer_offsets`` offsets it ended at (Spark's offset log: ``offsets/<batch>``, a version line, a metadata
  line, then one JSON line per source; ``commits/<batch>`` marks a completed batch).
* :func:`resume_line`: "resumed from checkpoint at batch N, R records behind" (or where a first start begins).
* :class:`CatchUpWatch`: "caught up after S s" once, when every ``__consumer_offsets`` partition has been read up
  to its last stable offset for the first time since the start.
* :class:`BatchStallWatch`: one warning when no micro-batch has completed for as long as ``/ready`` allows (with
  what Spark says the query is doing), and one line when batches come again.
* :func:`query_error_line`: the one line of a failed query's error that says what failed.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

__all__ = ["BatchStallWatch", "CatchUpWatch", "checkpoint_position", "query_error_line", "resume_line"]


def checkpoint_position(checkpoint: str, offsets_topic: str) -> tuple[int, dict[int, int]] | None:
    """``(batch id, {partition: next offset})`` of the last completed batch in a local checkpoint; None when there
    is none (a first start) or the checkpoint is not a local folder groupscope can read."""
    root = Path(checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint)
    if "://" in checkpoint or not (root / "commits").is_dir():
        return None
    done = sorted((int(p.name) for p in (root / "commits").iterdir() if p.name.isdigit()), reverse=True)
    for batch in done:
        try:
            lines = (root / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines[2:]:
            try:
                offsets = json.loads(line)
            except ValueError:
                continue
            if isinstance(offsets, dict) and offsets_topic in offsets:
                return batch, {int(p): int(o) for p, o in offsets[offsets_topic].items()}
        return batch, {}
    return None


def resume_line(position: tuple[int, dict[int, int]] | None, stable_ends: Mapping[int, int],
                low_watermarks: Mapping[int, int], *, starting_offsets: str, offsets_topic: str) -> str:
    """The line that says where the job starts reading, with how many records lie ahead of it.

    ``stable_ends``: the last stable offset of each ``__consumer_offsets`` partition now; ``low_watermarks``: the
    first offset still in the log."""
    if position is not None:
        batch, at = position
        behind = sum(max(0, end - max(at.get(p, 0), low_watermarks.get(p, 0))) for p, end in stable_ends.items())
        return f"resumed from checkpoint at batch {batch}, {_records(behind)} behind"
    if starting_offsets == "latest":
        return f"no checkpoint yet: reading {offsets_topic} from its latest offsets"
    behind = sum(max(0, end - low_watermarks.get(p, 0)) for p, end in stable_ends.items())
    return f"no checkpoint yet: reading {offsets_topic} from its earliest offsets, {_records(behind)} behind"


def _records(n: int) -> str:
    return f"{n:,} record" + ("" if n == 1 else "s")


class CatchUpWatch:
    """Follows the shards' reports and says "caught up after S s" once per start."""

    def __init__(self, shards: int, logger: logging.Logger, *, started: float | None = None) -> None:
        self.shards = shards
        self.logger = logger
        self.started = time.monotonic() if started is None else started
        self._caught_up: dict[int, bool] = {}
        self.done = False

    def after_batch(self, health: Iterable) -> bool:
        """Takes one batch's shard reports (objects with ``shard`` and ``caught_up``); True when this batch
        completed the catch-up (and the line was logged)."""
        if self.done:
            return False
        for h in health:
            self._caught_up[h.shard] = bool(h.caught_up)
        if len(self._caught_up) >= self.shards and all(self._caught_up.values()):
            self.done = True
            self.logger.info("caught up after %.0f s: all %d partitions of __consumer_offsets read to their last "
                             "stable offset", time.monotonic() - self.started, self.shards)
            return True
        return False


class BatchStallWatch:
    """Says, once, when a running query has completed no micro-batch for ``limit_s``, and once when one completes
    again.

    A query that hangs (a task or a call into Kafka that never returns) does not fail, so nothing else would be
    logged while every metric silently stops moving; ``/ready`` already turns 503 after the same time
    (``metrics.ready_max_batch_age_seconds``), and this line is what a person reading the log needs beside it:
    how long, what Spark says the query is doing, and what to do. The supervisor calls :meth:`look` every poll
    and :meth:`batch_completed` after each batch; both take the monotonic clock's ``now``."""

    def __init__(self, limit_s: float, logger: logging.Logger | logging.LoggerAdapter, *,
                 started: float | None = None) -> None:
        self.limit_s = limit_s
        self.logger = logger
        self.last_batch = time.monotonic() if started is None else started
        self.stalled = False  # the warning was said and no batch has completed since

    def batch_completed(self, now: float) -> None:
        if self.stalled:
            self.logger.info("micro-batches complete again after %.0f s without one", now - self.last_batch)
            self.stalled = False
        self.last_batch = now

    def look(self, now: float, doing: Callable[[], str | None]) -> bool:
        """``doing``: asked only when the warning is due, Spark's status message for the query
        (``StreamingQuery.status["message"]``). True when this look logged the warning."""
        if self.stalled or now - self.last_batch < self.limit_s:
            return False
        self.stalled = True
        try:
            message = doing()
        except Exception as exc:  # noqa: BLE001 - the warning matters more than the detail
            message = f"status unavailable: {exc}"
        self.logger.warning("no micro-batch completed for %.0f s (Spark: %s); /ready says 503. If this lasts, "
                            "restart the job (the checkpoint resumes where the last batch ended); a JVM thread dump "
                            "(jcmd <pid> Thread.print) shows where it waits", now - self.last_batch,
                            message or "no status")
        return True


def query_error_line(error: str, limit: int = 300) -> str:
    """The line of a Spark query error an operator needs: the innermost exception's own line where the error
    carries a Python or Java trace, else its first line (Spark appends the query's plan; callers log the whole
    error at DEBUG)."""
    text = error.split("=== Streaming Query ===")[0]
    # A Java trace names its inner causes on "Caused by: ..." lines, the innermost last.
    lines = [line.strip().removeprefix("Caused by: ") for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[\w.$]*(Error|Exception|Timeout)\b:?", line)]
    line = raised[-1] if raised else (lines[0] if lines else "unknown error")
    return line if len(line) <= limit else line[:limit - 1] + "…"
