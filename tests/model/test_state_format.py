"""The checkpointed state format (``streaming/model/state_format.py``): named fields under a version, newer
versions refused with one line. Reading the version-1 positional checkpoints is tested in test_state_v1.py."""

from __future__ import annotations

import pickle
import pickletools

import cramjam
import pytest

from streaming.job.step import ShardStep
from streaming.model import state_format
from streaming.model.offsets import TopicOffsets
from streaming.model.shard import GroupCoordinatorShard

from .synthetic_shard import share_and_streams_shard


def test_a_step_state_is_pickled_and_compressed_once_with_named_fields():
    step = ShardStep(3)
    step.model = share_and_streams_shard()
    step.meta.last_offset = 11
    blob = step.state()
    doc = pickle.loads(cramjam.zstd.decompress(blob[4:]))
    assert (doc["format"], doc["version"]) == ("groupscope-state", state_format.VERSION)
    assert isinstance(doc["shard"]["offsets"], dict) and doc["step"]["last_offset"] == 11
    restored = ShardStep(3, state=blob)
    assert restored.meta == step.meta and restored.model.to_state() == step.model.to_state()
    # builtins only: a state that named a class (an enum member, a dataclass) would break when the class moves
    classes = [op.name for op, *_ in pickletools.genops(pickle.dumps(doc, protocol=5)) if "GLOBAL" in op.name]
    assert not classes


def _as_version_2(blob: bytes) -> bytes:
    """The blob as the previous release wrote it: each topic's offset columns by name, behind ``GSV2``."""
    doc = pickle.loads(cramjam.zstd.decompress(blob[4:]))
    for topics in doc["shard"]["offsets"]["groups"].values():
        for name, (packed, metadata) in topics.items():
            t = TopicOffsets.from_state((packed, metadata))
            columns = {column: bytes(getattr(t, column)) for column, _ in TopicOffsets._ARRAYS}
            columns.update((column, bytes(getattr(t, column))) for column in TopicOffsets._BYTES)
            topics[name] = {**columns, "metadata": metadata, "count": t.count}
    doc["version"] = 2
    return b"GSV2" + bytes(cramjam.zstd.compress(pickle.dumps(doc, protocol=5), 3))


def test_a_version_2_state_is_read_and_written_again_as_the_current_version():
    step = ShardStep(3)
    step.model = share_and_streams_shard()
    step.meta.last_offset = 11
    blob = step.state()
    old = _as_version_2(blob)
    assert old[:4] == b"GSV2" and old != blob
    restored = ShardStep(3, state=old)
    assert restored.meta == step.meta and restored.model.to_state() == step.model.to_state()
    again = restored.state()
    assert again[:4] == state_format.MAGIC and ShardStep(3, state=again).model.to_state() == step.model.to_state()


def _with_version(version) -> bytes:
    doc = {"format": "groupscope-state", "version": version, "shard": {}, "step": None}
    return state_format.MAGIC + bytes(cramjam.zstd.compress(pickle.dumps(doc), 3))


@pytest.mark.parametrize("blob", [_with_version(state_format.VERSION + 1), b"GSV4" + b"\x00" * 8],
                         ids=["version field", "magic"])
def test_a_newer_state_is_refused_with_one_line_saying_what_to_do(blob):
    with pytest.raises(state_format.StateFormatError) as err:
        ShardStep(0, state=blob)
    message = str(err.value)
    assert "\n" not in message and f"version {state_format.VERSION + 1}" in message and "fresh checkpoint" in message


@pytest.mark.parametrize("blob", [b"nope", b"GSV2not-zstd", b"GSM1not-zlib"])
def test_bytes_that_are_no_state_are_refused_with_one_line(blob):
    with pytest.raises(ValueError) as err:
        GroupCoordinatorShard.from_bytes(blob)
    assert "\n" not in str(err.value) and "groupscope state" in str(err.value)


def test_a_field_added_after_the_state_was_written_takes_its_default():
    state = share_and_streams_shard().to_state()
    member = next(g for g in state["groups"] if g["type"] == "CONSUMER")["group"]["members"][0]
    del member["missed_bump_ms"]  # as if the field had been added after this state was written
    member["a_field_since_removed"] = 1
    restored = GroupCoordinatorShard.from_state(state)
    assert restored.groups["cg"].members["m1"].missed_bump_ms is None
