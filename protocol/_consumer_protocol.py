"""The consumer embedded protocol: subscription and assignment blobs inside classic-group members.

These blobs are only meaningful when the group's ``protocolType`` is ``consumer``; a Connect worker or a third-party
client puts its own bytes there, so callers decide *whether* to decode and this module only decides *how*
(docs/kafka-formats.md#consumer-protocol). The rules follow the Java client: a version above 3 is read with the v3 layout
and its tail ignored (new versions only append fields); a version 0-3 blob must be consumed exactly; a zero-length
assignment means "the leader assigned nothing" and decodes to ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _wire as w
from ._schema import Kind, Message, decoder, encoder, message, wire
from .errors import CodecError

__all__ = [
    "ConsumerProtocolSubscription",
    "ConsumerProtocolAssignment",
    "TopicPartition",
    "decode_subscription",
    "decode_assignment",
    "encode_subscription",
    "encode_assignment",
]

HIGHEST_VERSION = 3
FROZEN = dict(frozen=True, slots=True, kw_only=True)


@dataclass(**FROZEN)
class TopicPartition(Message):
    topic: str = wire(Kind.STRING)
    partitions: tuple[int, ...] = wire(Kind.ARRAY, of=Kind.INT32)


@message(valid="0-3")
@dataclass(**FROZEN)
class ConsumerProtocolSubscription(Message):
    topics: tuple[str, ...] = wire(Kind.ARRAY, of=Kind.STRING)
    user_data: bytes | None = wire(Kind.BYTES, nullable="0+", default=None)
    owned_partitions: tuple[TopicPartition, ...] = wire(Kind.ARRAY, "1+", of=TopicPartition)
    generation_id: int = wire(Kind.INT32, "2+", default=-1)
    rack_id: str | None = wire(Kind.STRING, "3+", nullable="3+", default=None)
    version: int = 0  # the blob's own version (not a wire field of the body)


@message(valid="0-3")
@dataclass(**FROZEN)
class ConsumerProtocolAssignment(Message):
    assigned_partitions: tuple[TopicPartition, ...] = wire(Kind.ARRAY, of=TopicPartition)
    user_data: bytes | None = wire(Kind.BYTES, nullable="0+", default=None)
    version: int = 0


def _decode(cls: type, blob: bytes, what: str):
    if len(blob) < 2:
        raise CodecError(f"{what} blob of {len(blob)} bytes has no version", field=cls.__name__, position=0)
    version = w.INT16.unpack_from(blob, 0)[0]
    if version < 0:
        raise CodecError(f"{what} version {version}", field=cls.__name__, position=0)
    layout = min(version, HIGHEST_VERSION)
    value, end = decoder(cls, layout, False)(blob, 2)
    if version <= HIGHEST_VERSION and end != len(blob):
        raise CodecError(f"{len(blob) - end} trailing bytes after a v{version} {what}", field=cls.__name__, position=end)
    return value, version


def decode_subscription(blob: bytes) -> ConsumerProtocolSubscription:
    value, version = _decode(ConsumerProtocolSubscription, blob, "subscription")
    return _with_version(value, version)


def decode_assignment(blob: bytes) -> ConsumerProtocolAssignment | None:
    """``None`` for the zero-length assignment the coordinator stores for members the leader left out."""
    if len(blob) == 0:
        return None
    value, version = _decode(ConsumerProtocolAssignment, blob, "assignment")
    return _with_version(value, version)


def _with_version(value, version: int):
    if version == value.version:
        return value
    object.__setattr__(value, "version", version)  # freshly built, not yet shared: safe to finish in place
    return value


def _encode(value: Message, version: int) -> bytes:
    if not 0 <= version <= HIGHEST_VERSION:
        raise ValueError(f"cannot encode consumer-protocol version {version}")
    out = bytearray(w.INT16.pack(version))
    encoder(type(value), version, False)(value, out)
    return bytes(out)


def encode_subscription(value: ConsumerProtocolSubscription, version: int | None = None) -> bytes:
    return _encode(value, value.version if version is None else version)


def encode_assignment(value: ConsumerProtocolAssignment | None, version: int | None = None) -> bytes:
    if value is None:
        return b""
    return _encode(value, value.version if version is None else version)
