"""The checkpointed state format: named fields under a format name and version, pickled and compressed once.

Spark keeps one state blob per ``__consumer_offsets`` partition and hands it back to the next batch, and to the
next release after an upgrade. Each class of the model writes itself as a dict of its field names (``to_state``)
and reads itself back by name (``from_state``), so a field added later is a new name with a default, not a
position every reader must count. The whole state is one document::

    {"format": "groupscope-state", "version": 3, "shard": {...model...}, "step": {...batch bookkeeping...}}

pickled (protocol 5) and compressed once with zstd level 3, behind the magic ``GSV3``. Version 1 compressed with
zlib level 1 twice (the model, then the step around it); the second pass was not redundant (it halved the size:
level 1 leaves long repeats), so one pass of a stronger codec replaces both: zstd level 3 gives the size of the two
zlib passes at a fraction of their time (``benchmarks/bench_state.py``).

Older and newer blobs:

* version 2 (magic ``GSV2``) is version 3 but for one group's offsets on one topic: version 3 packs its columns
  into one buffer that a batch which does not touch the group saves again as it read it
  (:class:`~streaming.model.offsets.TopicOffsets`), version 2 named each column; both are read;
* version 1 (magic ``GSS1`` for a step around ``GSM1`` for the model: positional tuples, pickled and compressed
  twice) is read by :mod:`.state_v1` and migrated as it is read; the next write is version 2;
* a version newer than :data:`VERSION` is refused with :class:`StateFormatError`, one line saying what to do.
"""

from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Mapping, TypeVar

import cramjam

__all__ = ["FORMAT", "VERSION", "MAGIC", "StateFormatError", "StateDocument", "encode", "decode", "fields_of",
           "build"]

FORMAT = "groupscope-state"
VERSION = 3
MAGIC = b"GSV3"
V2_MAGIC = b"GSV2"
V1_STEP_MAGIC, V1_MODEL_MAGIC = b"GSS1", b"GSM1"
# Any later version keeps the first two bytes, so a newer blob is told from a foreign one.
_FAMILY = MAGIC[:2]
_LEVEL = 3


class StateFormatError(ValueError):
    """A state blob this code cannot read; the message is one line saying what to do."""


@dataclass(frozen=True, slots=True)
class StateDocument:
    """A decoded state: the model's named fields, and the step's (None when only a model was saved)."""

    shard: Mapping[str, Any] | None
    step: Mapping[str, Any] | None = None
    # version 1: the positional tuple of the model (read by :mod:`.state_v1`) and of the step's bookkeeping
    v1_shard: tuple | None = None
    v1_step: tuple | None = None


def encode(shard: Mapping[str, Any], step: Mapping[str, Any] | None = None) -> bytes:
    """One blob of the current format."""
    doc = {"format": FORMAT, "version": VERSION, "shard": shard, "step": step}
    return MAGIC + bytes(cramjam.zstd.compress(pickle.dumps(doc, protocol=5), _LEVEL))


def decode(data: bytes) -> StateDocument:
    """Reads a blob of any version this code knows.

    Raises:
        StateFormatError: not a groupscope state, or one written by a newer version.
    """
    head = bytes(data[:4])
    if head in (MAGIC, V2_MAGIC):
        doc = _unpickle(data, zstd=True)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise StateFormatError("not a groupscope state (no format name)")
        version = doc.get("version")
        if version != (VERSION if head == MAGIC else 2):
            raise _newer(version)
        return StateDocument(doc["shard"], doc.get("step"))
    if head == V1_MODEL_MAGIC:
        return StateDocument(None, None, _unpickle(data))
    if head == V1_STEP_MAGIC:
        meta, model = _unpickle(data)
        if not bytes(model[:4]) == V1_MODEL_MAGIC:
            raise StateFormatError("not a groupscope state (a version-1 step without its model)")
        return StateDocument(None, None, _unpickle(model), tuple(meta))
    if head[:2] == _FAMILY and head[2:3] == b"V" and head[3:4].isdigit():
        raise _newer(int(head[3:4]))
    raise StateFormatError("not a groupscope state (bad magic)")


def _unpickle(data: bytes, zstd: bool = False) -> Any:
    try:
        raw = bytes(cramjam.zstd.decompress(data[4:])) if zstd else zlib.decompress(data[4:])
        return pickle.loads(raw)
    except (zlib.error, cramjam.DecompressionError, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise StateFormatError(f"groupscope state is corrupt ({exc}); start from a fresh checkpoint") from None


def _newer(version: Any) -> StateFormatError:
    return StateFormatError(
        f"checkpoint state is version {version} of {FORMAT}, newer than this groupscope reads ({VERSION}): run the "
        "release that wrote it, or start from a fresh checkpoint location with new Delta tables or a new cluster "
        "name (the job replays __consumer_offsets)")


# ---- named fields of dataclasses ------------------------------------------------------------------------------

C = TypeVar("C")


def fields_of(obj: Any, /, **converted: Any) -> dict[str, Any]:
    """Every dataclass field of ``obj`` by name; ``converted`` replaces those that are not plain values (enums by
    their value, nested objects, deques): the state holds builtins only, so it does not depend on where a class
    lives (a test checks that a pickled state names no class). The values are the object's own containers, not
    copies (encoding a state must not copy it twice): serialize the result before the model changes again."""
    out = {name: getattr(obj, name) for name in _names(type(obj))}
    out.update(converted)
    return out


def build(cls: type[C], named: Mapping[str, Any], /, **converted: Any) -> C:
    """``cls`` from the fields ``named``: a field not named there (added after the state was written) takes its
    default, a name the class no longer has is dropped; ``converted`` replaces fields that need rebuilding (enums,
    nested objects)."""
    kwargs = {name: named[name] for name in _init_names(cls) if name in named}
    kwargs.update(converted)
    return cls(**kwargs)


@cache
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


@cache
def _init_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.init)
