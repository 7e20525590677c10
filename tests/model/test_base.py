"""What every group type shares (streaming/model/_base.py): topic ids resolved to names for display, the
header a snapshot shows for classic and modern groups, member-state names, and the defaults of the group
interface that each type answers from its own records."""

from __future__ import annotations

import pytest

from protocol import Uuid
from protocol.records import TopicIdPartitions
from streaming.model._base import GroupBase, GroupHeader, id_assignment, member_state_name, resolve
from streaming.model.classic import ClassicGroup
from streaming.model.consumer import ConsumerGroup
from streaming.model.share import ShareGroup
from streaming.model.streams import StreamsGroup

A = Uuid(bytes(range(16)))
B = Uuid(bytes(range(16, 32)))


def test_resolve_names_topics_and_sorts_partitions():
    assert resolve({A: "orders", B: "audit"}, {A: (2, 0), B: (1,)}) == (("audit", 1), ("orders", 0), ("orders", 2))


def test_resolve_prints_an_unknown_topic_id_in_kafkas_text_form():
    assert resolve({}, {A: (0,)}) == (("AAECAwQFBgcICQoLDA0ODw", 0),)


def test_id_assignment_sorts_partitions_and_drops_empty_topics():
    tps = (TopicIdPartitions(topic_id=A, partitions=(3, 1)), TopicIdPartitions(topic_id=B, partitions=()))
    assert id_assignment(tps) == {A: (1, 3)}


@pytest.mark.parametrize("code, name", [(0, "STABLE"), (1, "UNREVOKED_PARTITIONS"), (2, "UNRELEASED_PARTITIONS"),
                                        (9, "UNKNOWN")])
def test_member_state_names_are_kafkas(code, name):
    assert member_state_name(code) == name


def test_headers_of_classic_and_modern_groups():
    classic = ClassicGroup("g", generation=5, protocol_type="consumer", leader="m", current_state_timestamp=-1)
    assert classic.header() == GroupHeader("consumer", 5, None, "m", None)  # -1: no timestamp written
    modern = ConsumerGroup("g", group_epoch=7, assignment_epoch=6)
    assert modern.header() == GroupHeader(None, 7, 6, None, None)


def test_interface_defaults_and_each_types_answers():
    groups = [ClassicGroup("c"), ConsumerGroup("k"), ShareGroup("s"), StreamsGroup("x")]
    assert all(isinstance(g, GroupBase) for g in groups)
    assert [g.assigns_on_client for g in groups] == [True, False, False, False]  # only classic leaders assign
    assert [g.exclusive_owners for g in groups] == [True, True, False, True]  # share members share partitions
    share, streams = groups[2], groups[3]
    # The defaults: no assignor, not simple, assignment not known, no subscribed topics, nobody silent.
    assert share.preferred_assignor("uniform") == "" and not share.is_simple and not share.assignment_known
    assert streams.subscribed_topics() is None and streams.silent_members(10, 1) == {}
    assert streams.partition_counts() == {}


def test_group_base_cannot_be_built_without_the_abstract_members():
    with pytest.raises(TypeError):
        GroupBase()  # type: ignore[abstract]
