"""Topics this monitor may not read: said once each, left alone a while, and what is done instead.

The heartbeat emitter reads records of the watched topics in two places (the transactional tails,
``streaming.kafka.tail_probe``, and the oldest unconsumed records, ``streaming.kafka.oldest_probe``). A monitor that
may only describe topics (no Read ACL) fails there; neither read is needed for offsets or lag, so each falls back
to what end offsets alone say. Saying so at every tick would fill the log, and asking again at every tick would cost
a round trip per topic: each topic is said once, and asked again only after ``retry_after_s``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import KafkaError

__all__ = ["UnreadableTopics", "NOT_READABLE"]

# A monitor that may not read a topic learns it from these at once, not after a timeout.
NOT_READABLE = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART})


class UnreadableTopics:
    """Remembers topics whose read failed. ``message`` is the log line's format, with ``%s`` for the topic and then
    for the reason: it says what could not be done and what is shown instead."""

    def __init__(self, message: str, *, retry_after_s: float = 600.0, clock: Callable[[], float] = time.monotonic,
                 log: logging.Logger = logging.getLogger("groupscope.heartbeat")) -> None:
        self.message = message
        self.retry_after_s = retry_after_s
        self.clock = clock
        self.log = log
        self._until: dict[str, float] = {}  # topic -> when to try again
        self._said: set[str] = set()

    def skipped(self, topic: str) -> bool:
        """Whether ``topic`` failed lately: not asked again before its retry time."""
        return self._until.get(topic, 0.0) > self.clock()

    def failed(self, topic: str, reason: BaseException | str) -> None:
        """Notes a failed read of ``topic``; the first for that topic is said (at INFO: the fallback works)."""
        self._until[topic] = self.clock() + self.retry_after_s
        if topic not in self._said:
            self._said.add(topic)
            text = reason if isinstance(reason, str) else (str(reason).splitlines() or [type(reason).__name__])[0]
            self.log.info(self.message, topic, text)
