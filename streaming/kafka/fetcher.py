"""Reads offset ranges with Kafka's Fetch request directly (the executor side of the source, when the cluster is
reached in plaintext).

Why not a consumer: a read task's cost was one Python message object per record (~1 µs in librdkafka and
confluent-kafka) plus turning those objects into Arrow columns (~0.6 µs). A fetch response already holds the
partition's record batches as the broker stores them; :func:`protocol.columns.read_regions` turns them into columns
at ~0.2 µs a record (all partitions of a response in one pass), applying what ``read_committed`` means (control
batches and aborted transactions left out).

What it does, per read task: asks librdkafka's admin client which broker leads each partition (so bootstrap,
metadata and their errors stay with the library), opens one plain TCP connection per leader, checks with
ApiVersions which Fetch version the broker speaks, and then sends sessionless Fetch requests for every
unfinished range of that leader until each range is read, one request in flight per connection: the next is sent
as soon as a response's batch headers are walked, before its records are read. Retriable trouble (a moved leader, a dropped
connection, a broker restarting) means a fresh leader lookup and a retry; no progress for ``timeout_s`` raises
:class:`~streaming.kafka.reader.ReadTimeout`, after which Spark retries the task.

Only for ``security.protocol`` plaintext (the default): TLS and SASL stay with librdkafka's consumer
(:func:`streaming.kafka.reader.read_ranges`); :func:`direct_fetch_refusal` says why a configuration cannot use it.
"""

from __future__ import annotations

import atexit
import logging
import socket
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from protocol import fetch as wire
from protocol.columns import Columns, Region, fill_regions, frame_regions
from protocol.errors import CodecError
from streaming.schema.tables import SOURCE

from .reader import OffsetRange, ReadTimeout

__all__ = ["direct_fetch_refusal", "fetch_ranges", "shared_leaders", "UnsupportedBroker"]

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
# Kafka error codes after which the leader is looked up again (the partition moved, or its broker is not ready).
_RELOOK = {3, 5, 6, 9, 14, 15, 56, 74, 75, 78}  # UNKNOWN_TOPIC_OR_PARTITION ... OFFSET_NOT_AVAILABLE
_OFFSET_OUT_OF_RANGE = 1
_TIMESTAMP_TYPE = SOURCE.field("timestamp").type


class UnsupportedBroker(RuntimeError):
    """The broker speaks no Fetch version this reader knows (v4 to v11): the caller reads with the consumer."""


def direct_fetch_refusal(kafka: Mapping[str, str]) -> str | None:
    """Why this configuration must be read with librdkafka's consumer instead (None: it can be fetched directly)."""
    protocol = str(kafka.get("security.protocol", "plaintext")).lower()
    if protocol != "plaintext":
        return f"security.protocol={protocol}"
    return None


@dataclass
class _Range:
    topic: str
    partition: int
    next: int
    end: int
    max_bytes: int
    pending: list[Columns] = field(default_factory=list)
    pending_rows: int = 0


class _Connection:
    """One plain TCP connection to a broker: a request out, its response in (size-prefixed frames)."""

    def __init__(self, host: str, port: int, timeout_s: float, client_id: str) -> None:
        self.address = f"{host}:{port}"
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._correlation = 0
        self._sent: list[int] = []  # correlation ids of the requests awaiting their response, oldest first
        self.fetch_version = self._negotiate()

    def _negotiate(self) -> int:
        supported = wire.decode_api_versions_response(self.call(wire.encode_api_versions_request(self._next(),
                                                                                                 self.client_id)))
        version = wire.pick_version(supported)
        if version is None:
            low, high = supported.get(wire.FETCH, (None, None))
            raise UnsupportedBroker(f"broker {self.address} speaks Fetch v{low}-v{high}, this reader v4-v11")
        return version

    def _next(self) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self._correlation

    def call(self, request: bytes) -> memoryview:
        self.send(request)
        return self.receive()

    def send(self, request: bytes) -> None:
        """Sends a request; its response comes from :meth:`receive` (a broker answers a connection's requests in
        the order they were sent)."""
        self.sock.sendall(request)
        self._sent.append(_SIZE.unpack_from(request, 8)[0])

    def receive(self) -> memoryview:
        (size,) = _SIZE.unpack(self._exactly(4))
        response = self._exactly(size)
        if wire.response_correlation_id(response) != self._sent.pop(0):
            raise ConnectionError(f"broker {self.address} answered another request")
        return response

    def send_fetch(self, partitions: list[wire.FetchPartitionRequest], isolation_level: int) -> None:
        self.send(wire.encode_fetch_request(self.fetch_version, self._next(), self.client_id, partitions,
                                           isolation_level=isolation_level, max_wait_ms=500,
                                           max_bytes=_RESPONSE_MAX_BYTES))

    def receive_fetch(self) -> tuple[memoryview, wire.FetchResponse]:
        buf = self.receive()
        return buf, wire.decode_fetch_response(self.fetch_version, buf)

    def _exactly(self, n: int) -> memoryview:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionError(f"broker {self.address} closed the connection")
            got += k
        return view

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# A response holds at most this much; a partition at most _PARTITION_MAX_BYTES unless one batch is larger (then
# its limit doubles until the batch fits). Together they bound a task's buffers like the consumer's fetch queue.
_RESPONSE_MAX_BYTES = 32 << 20
_PARTITION_MAX_BYTES = 4 << 20


def fetch_ranges(
    kafka: Mapping[str, str],
    ranges: Sequence[OffsetRange],
    *,
    batch_rows: int = 50_000,
    timeout_s: float = 300.0,
    isolation: str = "read_committed",
    leaders: "_Leaders | None" = None,
) -> Iterator[tuple[str, int, pa.RecordBatch]]:
    """Yields ``(topic, partition, SOURCE rows)`` chunks covering ``ranges``, each in offset order, at most
    ``batch_rows`` rows (the last chunk of a range may be smaller). Raises :class:`ReadTimeout` after
    ``timeout_s`` without progress, :class:`UnsupportedBroker` before yielding anything when a broker speaks no
    usable Fetch version. ``leaders``: connections kept open across calls (:func:`shared_leaders`), else this
    call opens its own and closes them."""
    todo = {(r.topic, r.partition): _Range(r.topic, r.partition, r.start, r.end, _PARTITION_MAX_BYTES)
            for r in ranges if r.size > 0}
    if not todo:
        return
    read_committed = isolation == "read_committed"
    level = wire.READ_COMMITTED if read_committed else wire.READ_UNCOMMITTED
    reader = leaders if leaders is not None else _Leaders(kafka, timeout_s)
    # One fetch in flight per connection, sent as soon as the previous response's batch headers say where each
    # range goes on: the broker prepares the next response while this task reads the records of the last one.
    in_flight: dict[_Connection, list[_Range]] = {}

    def send_idle() -> None:
        """Sends a fetch on every connection without one in flight, for its ranges not already asked for."""
        asked = {(r.topic, r.partition) for parts in in_flight.values() for r in parts}
        idle = [r for key, r in todo.items() if key not in asked]
        if not idle:
            return
        for conn, parts in reader.assignments(idle).items():
            if conn in in_flight:
                continue  # these go with that connection's next request
            try:
                conn.send_fetch([wire.FetchPartitionRequest(r.topic, r.partition, r.next, r.max_bytes)
                                 for r in parts], level)
            except OSError as exc:
                reader.forget(conn, f"{type(exc).__name__}: {exc}")
                continue
            in_flight[conn] = parts

    last_progress = time.monotonic()
    try:
        while todo:
            send_idle()
            if not in_flight:  # no leader reachable now
                if time.monotonic() - last_progress > timeout_s:
                    raise _timeout(todo, timeout_s, reader)
                time.sleep(0.05)
                continue
            conn = next(iter(in_flight))
            in_flight.pop(conn)
            try:
                buf, response = conn.receive_fetch()
            except (OSError, ConnectionError, CodecError) as exc:
                reader.forget(conn, f"{type(exc).__name__}: {exc}")
                continue
            reading = []
            for p in response.partitions:
                r = todo.get((p.topic, p.partition))
                if r is None:
                    continue
                if p.error_code:
                    _on_error(r, p, reader)
                    continue
                reading.append((r, Region(p.records[0], p.records[1], r.next, r.end,
                                          [(a.producer_id, a.first_offset) for a in p.aborted])))
            framed = frame_regions(buf, [region for _, region in reading], read_committed=read_committed)
            progressed = False
            finished: set[int] = set()
            for (r, _), columns in zip(reading, framed.columns):
                for problem in columns.problems:
                    log.warning("%s-%d: %s", r.topic, r.partition, problem)
                if columns.cut_short:
                    r.max_bytes *= 2  # one batch larger than the partition's limit: ask for more
                if columns.next_offset > r.next:
                    progressed = True
                    r.next = columns.next_offset
                if r.next >= r.end:
                    del todo[(r.topic, r.partition)]
                    finished.add(id(r))
            if not reader.stale:
                send_idle()
            for (r, _), columns in zip(reading, fill_regions(framed)):
                if len(columns):
                    r.pending.append(columns)
                    r.pending_rows += len(columns)
                if r.pending_rows >= batch_rows or (id(r) in finished and r.pending):
                    yield r.topic, r.partition, _source_rows(r)
            now = time.monotonic()
            if progressed:
                last_progress = now
            elif now - last_progress > timeout_s:
                raise _timeout(todo, timeout_s, reader)
            elif now - last_progress > 0.05:
                time.sleep(0.05)  # errors or nothing from every leader for a while: do not spin
    finally:
        if leaders is None or in_flight:  # a response left unread would be taken for the next call's
            reader.close()


def _timeout(todo: Mapping[tuple[str, int], _Range], timeout_s: float, reader: "_Leaders") -> ReadTimeout:
    missing = ", ".join(f"{r.topic}-{r.partition}@{r.next}..{r.end}" for r in todo.values())
    return ReadTimeout(f"no progress for {timeout_s:.0f} s reading {missing}"
                       + (f" (last problem: {reader.last_problem})" if reader.last_problem else ""))


def _on_error(r: _Range, p: wire.FetchPartition, reader: "_Leaders") -> None:
    if p.error_code == _OFFSET_OUT_OF_RANGE and p.log_start_offset > r.next:
        # The records were deleted (retention) before they were read: go on from the first that exists, as a
        # consumer with auto.offset.reset=earliest would.
        log.warning("%s-%d: offsets %d..%d no longer exist on the broker (log starts at %d); reading on from there",
                    r.topic, r.partition, r.next, p.log_start_offset - 1, p.log_start_offset)
        r.next = p.log_start_offset
        return
    reader.last_problem = f"{r.topic}-{r.partition}: Kafka error code {p.error_code}"
    if p.error_code in _RELOOK:
        reader.stale = True


def _source_rows(r: _Range) -> pa.RecordBatch:
    """The range's pending columns as one ``SOURCE`` batch."""
    parts, r.pending, r.pending_rows = r.pending, [], 0
    if len(parts) == 1:
        c = parts[0]
        offsets, stamps, keys, values = c.offsets, c.timestamps, c.keys, c.values
    else:
        offsets = np.concatenate([c.offsets for c in parts])
        stamps = np.concatenate([c.timestamps for c in parts])
        keys = pa.concat_arrays([c.keys for c in parts])
        values = pa.concat_arrays([c.values for c in parts])
    n = len(offsets)
    return pa.RecordBatch.from_arrays([
        keys, values, pa.repeat(pa.scalar(r.topic, pa.string()), n), pa.repeat(pa.scalar(r.partition, pa.int32()), n),
        pa.array(offsets, pa.int64()),
        pa.array(stamps * 1000, pa.int64()).cast(_TIMESTAMP_TYPE),  # ms -> us
    ], schema=SOURCE)


_SHARED: dict[tuple, "_Leaders"] = {}


def shared_leaders(kafka: Mapping[str, str], timeout_s: float) -> "_Leaders":
    """One set of broker connections per process and configuration, for :func:`fetch_ranges` calls that follow one
    another: a shard step reads one small range after another in the same task, and a metadata client and new
    connections for each range cost more than reading it."""
    key = (tuple(sorted(kafka.items())), timeout_s)
    leaders = _SHARED.get(key)
    if leaders is None:
        if not _SHARED:
            atexit.register(lambda: [shared.close() for shared in _SHARED.values()])
        leaders = _SHARED[key] = _Leaders(kafka, timeout_s)
    return leaders


class _Leaders:
    """Which connection reads which partition: leaders from librdkafka's metadata, one connection per broker."""

    def __init__(self, kafka: Mapping[str, str], timeout_s: float) -> None:
        from .client import KafkaAccess

        self._access = KafkaAccess(kafka, timeout_s=min(10.0, timeout_s))
        self._client_id = str(kafka.get("client.id", "groupscope-reader"))
        self._timeout_s = timeout_s
        self._connections: dict[int, _Connection] = {}
        self._leader: dict[tuple[str, int], int] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self.stale = True
        self.last_problem: str | None = None

    def _refresh(self, topics: set[str]) -> None:
        from .client import KafkaUnavailable

        for topic in topics:
            try:
                brokers, leaders = self._access.leaders(topic)
            except KafkaUnavailable as exc:
                self.last_problem = str(exc)
                return
            self._addresses.update(brokers)
            self._leader.update({(topic, p): broker for p, broker in leaders.items()})
        self.stale = False

    def _connection(self, broker: int) -> _Connection | None:
        conn = self._connections.get(broker)
        if conn is None and broker in self._addresses:
            host, port = self._addresses[broker]
            try:
                conn = _Connection(host, port, max(5.0, min(30.0, self._timeout_s)), self._client_id)
            except (OSError, ConnectionError, CodecError) as exc:
                self.last_problem = f"broker {host}:{port}: {exc}"
                self.stale = True
                return None
            self._connections[broker] = conn
        return conn

    def assignments(self, ranges: list[_Range]) -> dict[_Connection, list[_Range]]:
        if self.stale or any((r.topic, r.partition) not in self._leader for r in ranges):
            self._refresh({r.topic for r in ranges})
        out: dict[_Connection, list[_Range]] = {}
        for r in ranges:
            broker = self._leader.get((r.topic, r.partition))
            conn = None if broker is None else self._connection(broker)
            if conn is not None:
                out.setdefault(conn, []).append(r)
        return out

    def forget(self, conn: _Connection, problem: str) -> None:
        self.last_problem = f"broker {conn.address}: {problem}"
        conn.close()
        self._connections = {b: c for b, c in self._connections.items() if c is not conn}
        self.stale = True

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
