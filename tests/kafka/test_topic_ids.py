"""The heartbeat emitter's topic ids: looked up once per name without holding a tick, announced when learnt and
again every few minutes, retried later when the broker did not describe them; carried in the heartbeat's first
message."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

from confluent_kafka import Uuid as ClientUuid

from protocol import Uuid
from streaming.kafka.topic_ids import TopicIds, kafka_text
from streaming.schema.heartbeat_format import decode_heartbeat, encode_heartbeats


class Lookups:
    """Records each lookup started and lets the test answer its futures when it chooses (a broker's answers
    arriving between ticks)."""

    def __init__(self) -> None:
        self.started: list[dict[str, Future]] = []

    def start(self, names: list[str]) -> dict[str, Future]:
        futures = {n: Future() for n in names}
        self.started.append(futures)
        return futures

    def answer(self, ids: dict[str, str]) -> None:
        for name, future in self.started[-1].items():
            if name in ids:
                future.set_result(SimpleNamespace(topic_id=client_uuid(ids[name])))
            else:
                future.set_exception(RuntimeError("UNKNOWN_TOPIC_OR_PARTITION"))


def client_uuid(text: str) -> ClientUuid:
    """The client library's id object for Kafka's text form ``text``."""
    raw = bytes(Uuid.parse(text))
    return ClientUuid(int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True))


A, B = "XuMxlfAoToyPp6uhLLiU4w", "OIbB_qPFRO6JNY2uny724A"


def test_ids_are_written_in_kafkas_url_safe_alphabet_not_the_client_librarys():
    assert str(client_uuid(B)) == "OIbB/qPFRO6JNY2uny724A"  # what str() of the client's object gives
    assert kafka_text(client_uuid(B)) == B
    assert kafka_text(client_uuid(A)) == A


def test_names_are_looked_up_once_announced_when_answered_and_all_again_after_the_period():
    lookups = Lookups()
    ids = TopicIds(lookups.start, reannounce_s=300)
    assert ids.announcement(["a"], 0) == []  # asked; the answer comes later
    lookups.answer({"a": A})
    assert ids.announcement(["a"], 1) == [("a", A)]
    assert ids.announcement(["a", "b"], 2) == []
    lookups.answer({"b": B})
    assert ids.announcement(["a", "b"], 3) == [("b", B)]
    assert ids.announcement(["a", "b"], 299) == []
    assert ids.announcement(["a", "b"], 301) == [("a", A), ("b", B)]
    assert [list(f) for f in lookups.started] == [["a"], ["b"]]


def test_an_unanswered_lookup_never_holds_a_tick_nor_starts_another():
    lookups = Lookups()
    ids = TopicIds(lookups.start)
    for t in range(100):
        assert ids.announcement(["a", "b"], t) == []
    assert len(lookups.started) == 1


def test_a_name_the_broker_did_not_describe_is_asked_again_after_the_retry_period():
    lookups = Lookups()
    ids = TopicIds(lookups.start, retry_s=60)
    ids.announcement(["a", "gone"], 0)
    lookups.answer({"a": A})
    assert ids.announcement(["a", "gone"], 1) == [("a", A)]
    assert ids.announcement(["a", "gone"], 59) == []
    assert len(lookups.started) == 1
    ids.announcement(["a", "gone"], 60)
    assert [list(f) for f in lookups.started] == [["a", "gone"], ["gone"]]


def test_topic_ids_travel_in_the_first_message_only_and_old_readers_ignore_them():
    ends = [("t", p, 1, 1, 0) for p in range(5)]
    first, second = encode_heartbeats(1, "e", 1, ends, chunk_size=3, topic_ids=[("t", "XuMxlfAoToyPp6uhLLiU4w")])
    assert decode_heartbeat(first).topic_ids == (("t", "XuMxlfAoToyPp6uhLLiU4w"),)
    assert decode_heartbeat(second).topic_ids == ()
    assert b"topic_ids" not in encode_heartbeats(1, "e", 1, ends)[0]
