"""Message schemas as data, and the one engine that reads, writes and prints them.

Kafka describes each record as a JSON schema (fields, versions, nullable versions, tags, defaults) and generates
Java from it. We keep the same idea without a code generator: every message is a frozen dataclass whose fields
carry their wire description in ``dataclasses.field(metadata=...)`` (see :func:`wire`). This module compiles, per
(message, version), a reader, a writer and a JSON converter from that description, so a new record type or field is
one declaration, and readers and writers cannot disagree. Per-record hot paths (offset commits) have hand-written
fast paths in ``_offsets.py``; everything else goes through here.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, ClassVar, Iterator

from . import _wire as w
from .errors import CodecError

__all__ = ["Kind", "WireField", "Message", "wire", "message", "decoder", "encoder", "to_kafka_json", "parse_versions"]

MAX_VERSION = 0x7FFF


class Kind(enum.Enum):
    INT8 = "int8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    INT64 = "int64"
    UUID = "uuid"
    STRING = "string"
    BYTES = "bytes"
    STRUCT = "struct"
    ARRAY = "array"


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """Kafka's version-range syntax: ``"3+"``, ``"0-2"``, ``"1"``; ``None`` for "never"."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def _in(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True, slots=True)
class WireField:
    """How one dataclass field is laid out on the wire (the counterpart of one entry of a Kafka JSON schema)."""

    kind: Kind
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tag: int | None
    tagged: tuple[int, int] | None
    element: "Kind | type | None"
    struct: type | None
    json_name: str | None
    default: Any
    # For tagged fields: the value that is omitted on write and assumed when the tag is absent. Usually the
    # default; for a nullable struct declared with a JSON null default Kafka's generator uses the *empty struct*
    # here, so a null value is written (presence marker 0) and an absent tag reads as the empty struct.
    tag_default: Any = None


_MISSING = object()


def wire(
    kind: Kind,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    tagged: str | None = None,
    default: Any = _MISSING,
    of: "Kind | type | None" = None,
    json_name: str | None = None,
    tag_default: Any = _MISSING,
) -> Any:
    """Declares a wire field. ``of`` is the element kind or struct class of an array, or the class of a struct.

    Defaults follow Kafka's rules when not given: numbers 0, strings ``""``, arrays empty, uuids zero, nullable
    structs ``None``.
    """
    nullable_rng = parse_versions(nullable)
    if default is _MISSING:
        if kind in (Kind.INT8, Kind.INT16, Kind.UINT16, Kind.INT32, Kind.INT64):
            default = 0
        elif kind is Kind.STRING:
            default = ""
        elif kind is Kind.BYTES:
            default = b""
        elif kind is Kind.ARRAY:
            default = ()
        elif kind is Kind.UUID:
            default = w.ZERO_UUID
        elif kind is Kind.STRUCT:
            if nullable_rng is None:
                raise TypeError("a non-nullable struct field needs an explicit default")
            default = None
    tagged_rng = parse_versions(tagged) if tag is not None else None
    if tag is not None and tagged_rng is None:
        tagged_rng = parse_versions(versions)
    spec = WireField(
        kind=kind,
        versions=parse_versions(versions) or (0, MAX_VERSION),
        nullable=nullable_rng,
        tag=tag,
        tagged=tagged_rng,
        element=of if kind is Kind.ARRAY else None,
        struct=of if kind is Kind.STRUCT else (of if isinstance(of, type) else None),
        json_name=json_name,
        default=default,
        tag_default=default if tag_default is _MISSING else tag_default,
    )
    return field(default=default, metadata={"wire": spec})


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """Base of every message and nested struct.

    ``unknown_tags`` keeps tagged fields this codec does not know as raw ``(tag, bytes)`` pairs, so a value written
    by a newer broker survives decode → encode byte for byte.
    """

    unknown_tags: tuple[tuple[int, bytes], ...] = field(default=(), repr=False)

    # Set by @message: the schema's valid and flexible version ranges.
    VALID_VERSIONS: ClassVar[tuple[int, int]] = (0, 0)
    FLEXIBLE_VERSIONS: ClassVar[tuple[int, int] | None] = None


def message(valid: str = "0", flexible: str | None = None) -> Callable[[type], type]:
    """Class decorator giving a top-level message its version ranges (nested structs inherit the parent's)."""

    def apply(cls: type) -> type:
        cls.VALID_VERSIONS = parse_versions(valid)  # type: ignore[attr-defined]
        cls.FLEXIBLE_VERSIONS = parse_versions(flexible)  # type: ignore[attr-defined]
        return cls

    return apply


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@lru_cache(maxsize=None)
def wire_fields(cls: type) -> tuple[tuple[str, str, WireField], ...]:
    """``(python name, Kafka JSON name, spec)`` of every wire field of ``cls``, in wire order."""
    out = []
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("wire")
        if spec is not None:
            out.append((f.name, spec.json_name or _camel(f.name), spec))
    return tuple(out)


# --------------------------------------------------------------------------------------------------------------
# Readers


def _value_reader(kind: Kind, spec: WireField | None, element: Any, version: int, flexible: bool, nullable: bool):
    if kind is Kind.INT8:
        return w.fixed_reader(w.INT8)
    if kind is Kind.INT16:
        return w.fixed_reader(w.INT16)
    if kind is Kind.UINT16:
        return w.fixed_reader(w.UINT16)
    if kind is Kind.INT32:
        return w.fixed_reader(w.INT32)
    if kind is Kind.INT64:
        return w.fixed_reader(w.INT64)
    if kind is Kind.UUID:
        return w.read_uuid
    if kind is Kind.STRING:
        return w.string_reader(flexible=flexible, nullable=nullable)
    if kind is Kind.BYTES:
        return w.bytes_reader(flexible=flexible, nullable=nullable)
    if kind is Kind.ARRAY:
        if isinstance(element, type):
            elem = decoder(element, version, flexible)
        else:
            elem = _value_reader(element, None, None, version, flexible, False)
        return w.array_reader(elem, flexible=flexible, nullable=nullable)
    raise AssertionError(kind)


def _field_reader(spec: WireField, version: int, flexible: bool, tagged: bool):
    nullable = _in(spec.nullable, version)
    if spec.kind is Kind.STRUCT:
        inner = decoder(spec.struct, version, flexible)  # type: ignore[arg-type]
        if not nullable:
            return inner
        if tagged:
            # A nullable tagged struct carries a uvarint presence marker before the struct.
            def read_tagged(buf: bytes, pos: int):
                present, p = w.read_uvarint(buf, pos)
                if present == 0:
                    return None, p
                return inner(buf, p)

            return read_tagged

        def read_nullable(buf: bytes, pos: int):
            if pos >= len(buf):
                raise CodecError("truncated struct presence byte", position=pos)
            marker = buf[pos]
            if marker == 0xFF:
                return None, pos + 1
            return inner(buf, pos + 1)

        return read_nullable
    return _value_reader(spec.kind, spec, spec.element, version, flexible, nullable)


@lru_cache(maxsize=None)
def decoder(cls: type, version: int, flexible: bool):
    """Compiles the reader of ``cls`` at ``version``: ``(buf, pos) -> (instance, new_pos)``."""
    regular = []
    tagged = {}
    absent_tag_values = {}
    for name, _json, spec in wire_fields(cls):
        if not _in(spec.versions, version):
            continue
        if flexible and spec.tag is not None and _in(spec.tagged, version):
            tagged[spec.tag] = (name, _field_reader(spec, version, flexible, True))
            if spec.tag_default is not spec.default:
                absent_tag_values[name] = spec.tag_default
        else:
            regular.append((name, _field_reader(spec, version, flexible, False)))
    qual = cls.__name__
    read_uvarint = w.read_uvarint

    def read(buf: bytes, pos: int):
        kw: dict[str, Any] = {}
        name = ""
        try:
            for name, reader in regular:
                kw[name], pos = reader(buf, pos)
            if flexible:
                name = "<tagged fields>"
                count, pos = read_uvarint(buf, pos)
                if absent_tag_values:
                    kw.update(absent_tag_values)
                unknown = []
                for _ in range(count):
                    tag, pos = read_uvarint(buf, pos)
                    size, pos = read_uvarint(buf, pos)
                    end = pos + size
                    if end > len(buf):
                        raise CodecError(f"tagged field {tag} of {size} bytes runs past the end", position=pos)
                    known = tagged.get(tag)
                    if known is None:
                        unknown.append((tag, bytes(buf[pos:end])))
                    else:
                        name = known[0]
                        kw[name], p = known[1](buf[:end], pos)
                        if p != end:
                            raise CodecError(f"tagged field {tag} declared {size} bytes, used {p - pos}", position=pos)
                        name = "<tagged fields>"
                    pos = end
                if unknown:
                    kw["unknown_tags"] = tuple(unknown)
        except CodecError as exc:
            if exc.field is None:
                raise CodecError(exc.reason, field=f"{qual}.{name}", position=exc.position) from None
            raise
        return cls(**kw), pos

    return read


# --------------------------------------------------------------------------------------------------------------
# Writers


def _value_writer(kind: Kind, element: Any, version: int, flexible: bool):
    if kind is Kind.INT8:
        pack = w.INT8.pack
    elif kind is Kind.INT16:
        pack = w.INT16.pack
    elif kind is Kind.UINT16:
        pack = w.UINT16.pack
    elif kind is Kind.INT32:
        pack = w.INT32.pack
    elif kind is Kind.INT64:
        pack = w.INT64.pack
    elif kind is Kind.UUID:

        def write_uuid(value, out: bytearray) -> None:
            if len(value) != 16:
                raise ValueError("a uuid is 16 bytes")
            out += value

        return write_uuid
    elif kind is Kind.STRING:
        return lambda value, out: w.write_string(value, out, flexible=flexible)
    elif kind is Kind.BYTES:
        return lambda value, out: w.write_bytes(value, out, flexible=flexible)
    elif kind is Kind.ARRAY:
        if isinstance(element, type):
            elem = encoder(element, version, flexible)
        else:
            elem = _value_writer(element, None, version, flexible)

        def write_array(value, out: bytearray) -> None:
            if value is None:
                w.write_array_count(None, out, flexible=flexible)
                return
            w.write_array_count(len(value), out, flexible=flexible)
            for item in value:
                elem(item, out)

        return write_array
    else:
        raise AssertionError(kind)

    def write_fixed(value, out: bytearray) -> None:
        out += pack(value)

    return write_fixed


def _field_writer(spec: WireField, version: int, flexible: bool, tagged: bool):
    if spec.kind is Kind.STRUCT:
        inner = encoder(spec.struct, version, flexible)  # type: ignore[arg-type]
        if not _in(spec.nullable, version):
            return inner
        if tagged:

            def write_tagged(value, out: bytearray) -> None:
                if value is None:
                    out.append(0)
                else:
                    out.append(1)
                    inner(value, out)

            return write_tagged

        def write_nullable(value, out: bytearray) -> None:
            if value is None:
                out.append(0xFF)
            else:
                out.append(1)
                inner(value, out)

        return write_nullable
    return _value_writer(spec.kind, spec.element, version, flexible)


@lru_cache(maxsize=None)
def encoder(cls: type, version: int, flexible: bool):
    """Compiles the writer of ``cls`` at ``version``: ``(instance, out: bytearray) -> None``."""
    regular = []
    tagged = []
    for name, _json, spec in wire_fields(cls):
        if not _in(spec.versions, version):
            continue
        if flexible and spec.tag is not None and _in(spec.tagged, version):
            tagged.append((spec.tag, name, spec.tag_default, _field_writer(spec, version, flexible, True)))
        else:
            regular.append((name, _field_writer(spec, version, flexible, False)))
    qual = cls.__name__

    def write(value, out: bytearray) -> None:
        for name, writer in regular:
            try:
                writer(getattr(value, name), out)
            except (ValueError, TypeError, AttributeError, struct.error) as exc:  # struct.error: out of range
                raise ValueError(f"cannot encode {qual}.{name}: {exc}") from None
        if flexible:
            fields = []
            for tag, name, default, writer in tagged:
                v = getattr(value, name)
                # Kafka omits a tagged field that equals its default.
                if v == default:
                    continue
                payload = bytearray()
                try:
                    writer(v, payload)
                except (ValueError, TypeError, AttributeError, struct.error) as exc:
                    raise ValueError(f"cannot encode {qual}.{name} (tag {tag}): {exc}") from None
                fields.append((tag, bytes(payload)))
            fields.extend(value.unknown_tags)
            fields.sort(key=lambda item: item[0])
            w.write_uvarint(len(fields), out)
            for tag, payload in fields:
                w.write_uvarint(tag, out)
                w.write_uvarint(len(payload), out)
                out += payload

    return write


# --------------------------------------------------------------------------------------------------------------
# Kafka's JSON form (what its generated JsonConverter classes print)


_SKIP = object()


def _json_converter(kind: Kind, element: Any, version: int):
    """A function turning one field value into Kafka's JSON form, or None where the value is already JSON."""
    if kind is Kind.UUID:
        return lambda v: None if v is None else str(w.Uuid(v))
    if kind is Kind.BYTES:
        return lambda v: None if v is None else base64.b64encode(v).decode("ascii")
    if kind is Kind.STRUCT:
        return lambda v: None if v is None else to_kafka_json(v, version)
    if kind is Kind.ARRAY:
        if isinstance(element, type):
            return lambda v: None if v is None else [to_kafka_json(item, version) for item in v]
        inner = _json_converter(element, None, version)
        if inner is None:
            return lambda v: None if v is None else list(v)
        return lambda v: None if v is None else [inner(item) for item in v]
    return None


@lru_cache(maxsize=None)
def _json_plan(cls: type, version: int) -> tuple[tuple[str, str, Any, Any], ...]:
    plan = []
    for name, json_name, spec in wire_fields(cls):
        if not _in(spec.versions, version):
            continue
        omit_if = spec.tag_default if spec.tag is not None and _in(spec.tagged, version) else _SKIP
        element = spec.element if spec.kind is Kind.ARRAY else spec.struct
        plan.append((name, json_name, _json_converter(spec.kind, element, version), omit_if))
    return tuple(plan)


def to_kafka_json(value: Message, version: int) -> dict[str, Any]:
    """The object Kafka's ``<Message>JsonConverter.write(message, version)`` builds, field for field.

    Only fields present in ``version``; tagged fields only when they differ from their default; bytes as standard
    base64; uuids in Kafka's text form; nulls as JSON null.
    """
    out: dict[str, Any] = {}
    for name, json_name, convert, omit_if in _json_plan(type(value), version):
        v = getattr(value, name)
        if omit_if is not _SKIP and v == omit_if:
            continue
        out[json_name] = v if convert is None else convert(v)
    return out


def iter_wire_values(value: Message) -> Iterator[tuple[str, WireField, Any]]:
    for name, _json, spec in wire_fields(type(value)):
        yield name, spec, getattr(value, name)
