"""Topic ids of the watched topics, for the heartbeat to carry.

From Kafka 4.1 a consumer-protocol (KIP-848) group's records name the topics of its members' assignments by topic id
only: the subscription-metadata record that used to map ids to names is no longer written, and an offset commit
(value version 4) carries the id of the one topic it commits. A group assigned a topic it has never committed to
would therefore show the bare id where Kafka's tools show the name. The broker's metadata knows every id; the
heartbeat emitter asks for the ids of topics it has not seen before and announces the mapping in the heartbeat, and
the job's model learns it from there.

Ids change only when a topic is deleted and created again under the same name, so each name is looked up once, and
every known mapping is announced again every ``reannounce_s`` (a job started from the latest offsets, or a topic
recreated in between, learns it then). The lookup never holds a tick: it is started in one tick and its answers are
collected in later ones, so a broker that does not answer it costs nothing but the ids. A name the broker could not
describe (deleted meanwhile, not authorised, no answer) is asked for again ``retry_s`` later.
"""

from __future__ import annotations

import logging
import struct
from concurrent.futures import Future
from typing import Callable, Iterable, Mapping

from protocol import Uuid

log = logging.getLogger("groupscope.heartbeat")

#: Starts a lookup of some topic names: one future per name whose result has ``topic_id`` (Kafka's DescribeTopics,
#: ``KafkaAccess.describe_topics``).
StartDescribe = Callable[[list[str]], Mapping[str, Future]]


class TopicIds:
    def __init__(self, start_describe: StartDescribe, *, reannounce_s: float = 300.0, retry_s: float = 60.0,
                 batch: int = 500) -> None:
        self.start_describe = start_describe
        self.reannounce_s = reannounce_s
        self.retry_s = retry_s
        self.batch = batch
        self.known: dict[str, str] = {}
        self._pending: dict[str, Future] = {}
        self._asked_at: dict[str, float] = {}  # name -> when it was last asked for in vain
        self._announced_at: float | None = None

    def announcement(self, names: Iterable[str], now_s: float) -> list[tuple[str, str]]:
        """The ``(name, id)`` pairs this tick's heartbeat carries: those learnt since the last tick, or every known
        one when the last full announcement is ``reannounce_s`` old. Empty on most ticks."""
        learnt = self._collect()
        if not self._pending:
            wanted = [n for n in names if n not in self.known
                      and now_s - self._asked_at.get(n, float("-inf")) >= self.retry_s][: self.batch]
            if wanted:
                self._asked_at.update((n, now_s) for n in wanted)
                try:
                    self._pending = dict(self.start_describe(wanted))
                except Exception as exc:  # noqa: BLE001 - ids are a refinement: the tick goes on without them
                    log.debug("topic ids not asked for (%s); asked again later", exc)
        if self.known and (self._announced_at is None or now_s - self._announced_at >= self.reannounce_s):
            self._announced_at = now_s
            return sorted(self.known.items())
        return sorted(learnt.items())

    def _collect(self) -> dict[str, str]:
        learnt: dict[str, str] = {}
        for name, future in list(self._pending.items()):
            if not future.done():
                continue
            del self._pending[name]
            try:
                learnt[name] = kafka_text(future.result().topic_id)
            except Exception as exc:  # noqa: BLE001 - this name only
                log.debug("no topic id for %s (%s); asked again later", name, exc)
        self.known.update(learnt)
        for name in learnt:
            self._asked_at.pop(name, None)
        return learnt


def kafka_text(topic_id) -> str:
    """Kafka's text form of a client library's topic id. Built from its two 64-bit halves, not from ``str()``:
    confluent-kafka prints standard base64 (``+`` and ``/``) where Kafka prints the URL-safe alphabet (``-`` and
    ``_``), so about one id in three would not match what the records and Kafka's tools say."""
    raw = struct.pack(">qq", topic_id.get_most_significant_bits(), topic_id.get_least_significant_bits())
    return str(Uuid(raw))
