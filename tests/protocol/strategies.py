"""Hypothesis strategies derived from the message schemas themselves, so every field of every type and version is
covered without a hand-written generator per record."""

from __future__ import annotations

from hypothesis import strategies as st

from protocol._schema import Kind, wire_fields
from protocol._wire import Uuid

_INTS = {
    Kind.INT8: st.integers(-(2**7), 2**7 - 1),
    Kind.INT16: st.integers(-(2**15), 2**15 - 1),
    Kind.UINT16: st.integers(0, 2**16 - 1),
    Kind.INT32: st.integers(-(2**31), 2**31 - 1),
    Kind.INT64: st.integers(-(2**63), 2**63 - 1),
}
TEXT = st.text(max_size=12)
BLOBS = st.binary(max_size=24)
UUIDS = st.binary(min_size=16, max_size=16).map(Uuid)


def _in(rng, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


def _kind(kind: Kind, element, version: int, nullable: bool):
    if kind in _INTS:
        base = _INTS[kind]
    elif kind is Kind.UUID:
        base = UUIDS
    elif kind is Kind.STRING:
        base = TEXT
    elif kind is Kind.BYTES:
        base = BLOBS
    elif kind is Kind.STRUCT:
        base = message_values(element, version)
    elif kind is Kind.ARRAY:
        inner = message_values(element, version) if isinstance(element, type) else _kind(element, None, version, False)
        base = st.lists(inner, max_size=3).map(tuple)
    else:
        raise AssertionError(kind)
    return st.one_of(st.none(), base) if nullable else base


def message_values(cls: type, version: int):
    """Values of ``cls`` whose every field present in ``version`` is random and every other field default."""
    kwargs = {}
    for name, _json, spec in wire_fields(cls):
        if not _in(spec.versions, version):
            continue
        element = spec.element if spec.kind is Kind.ARRAY else spec.struct
        kwargs[name] = _kind(spec.kind, element, version, _in(spec.nullable, version))
    return st.builds(cls, **kwargs)
