"""What the Spark JVM (and the Python workers it starts) write to their stderr, as groupscope log records.

The JVM is started with its stderr on a pipe that a driver thread reads. Start-up chatter an operator cannot act on
is dropped: the Java launcher's "WARNING: Using incubator modules: jdk.incubator.vector" (Spark's launcher always
adds that module, and the JVM has no option to silence the warning) and Spark's "Setting default log level" banner.
Everything else becomes a record of the ``groupscope.jvm`` logger, so it follows ``--log-level`` and
``--log-format``: one record per event, at ERROR when log4j says ERROR, else WARNING. A Java or Python stack trace
is folded into the record of the line that starts it (a bare Python traceback into the record of its last line,
the exception); its lines are shown with ``--log-level debug`` and counted otherwise.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading

__all__ = ["JVM_LOGGER", "JvmOutput", "is_noise"]

JVM_LOGGER = "groupscope.jvm"
_NOISE = (
    "WARNING: Using incubator modules:",
    'Setting default log level to "',
    "To adjust logging level use sc.setLogLevel(",
)
# Lines that continue the event above them: indented stack frames, "Caused by:", "... 12 more", Python frames
# and the exception line itself ("java.io.IOException: ...", "ValueError: ...": one word, then a colon).
_CONTINUATION = re.compile(r"^(\s|Caused by:|Suppressed:|\.\.\. \d+ more|Traceback \(most recent call last\)"
                           r"|[A-Za-z_][\w.$]*(: |$))")
_FOLD_WAIT_S = 0.2  # a stack trace arrives in one burst; a quiet pipe for this long ends the event


def is_noise(line: str) -> bool:
    return line.startswith(_NOISE)


class JvmOutput:
    """Owns a pipe: give :attr:`write_fd` to the JVM as its stderr, then :meth:`start` and :meth:`close_writer`.
    The reader thread ends by itself when every process holding the write end has exited."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(JVM_LOGGER)
        # Set once the job is stopping: a stop signal sent to the whole process group also ends Spark's Python
        # workers, and the JVM then reports failed tasks and a terminated query. That is the stop, not news: debug.
        self.stopping = threading.Event()
        self._read_fd, self.write_fd = os.pipe()
        self._thread = threading.Thread(target=self._run, name="groupscope-jvm-output", daemon=True)

    def start(self) -> "JvmOutput":
        self._thread.start()
        return self

    def close_writer(self) -> None:
        """Closes this process's copy of the write end (the JVM keeps its own)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    def _run(self) -> None:
        buffered = b""
        event: list[str] = []
        try:
            while True:
                ready, _, _ = select.select([self._read_fd], [], [], _FOLD_WAIT_S if event else None)
                if not ready:
                    self._emit(event)
                    event = []
                    continue
                chunk = os.read(self._read_fd, 65536)
                if not chunk:
                    break
                *lines, buffered = (buffered + chunk).split(b"\n")
                for raw in lines:
                    event = self._take(event, raw)
            self._emit(self._take(event, buffered))
        finally:
            os.close(self._read_fd)

    def _take(self, event: list[str], raw: bytes) -> list[str]:
        """Adds a line to the event in progress, or emits that event and starts the next one with it."""
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if event and _CONTINUATION.match(line):
            event.append(line)
            return event
        self._emit(event)
        return [line] if line.strip() else []

    def _emit(self, event: list[str]) -> None:
        if not event or is_noise(event[0]):
            return
        first, more = event[0], event[1:]
        if first.startswith("Traceback") and more and not more[-1][:1].isspace():
            first, more = more[-1], event[:-1]  # a bare Python traceback: its last line says what was raised
        level = logging.ERROR if re.search(r"\b(ERROR|FATAL)\b", first) else logging.WARNING
        if self.stopping.is_set():
            level = logging.DEBUG
        if not more:
            self.logger.log(level, "%s", first)
        elif self.logger.isEnabledFor(logging.DEBUG):
            self.logger.log(level, "%s", "\n".join(event))
        else:
            self.logger.log(level, "%s (%d more line%s of trace; --log-level debug shows them)", first, len(more),
                            "" if len(more) == 1 else "s")
