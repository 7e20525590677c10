"""Log records kept for a test to read (see the ``keep`` fixture in ``tests/conftest.py``)."""

from __future__ import annotations

import logging


class Keep(logging.Handler):
    """Keeps every record it is given, at any level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, level: int = logging.DEBUG) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= level]
