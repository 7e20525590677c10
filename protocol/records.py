"""Typed keys and values of every record Kafka writes to ``__consumer_offsets`` (record types 0-23).

Each class mirrors one of Kafka's JSON message schemas (same names, fields in snake_case, same wire order); the
``wire(...)`` metadata is the schema, read by ``_schema.py``. Versions, flexible versions and tags follow
docs/kafka-formats.md#record-schemas. Arrays are tuples and values are frozen: a decoded record is a fact from the
log and nothing downstream may edit it.

Where early-access releases wrote a *different layout under the same version number* (KIP-848 types 4/5/7/8 in
3.6-3.7, share types 11/15 in 4.0), the older layout is a separate class with a ``_3_7`` / ``_4_0`` suffix; the
codec tries the current layout first and falls back structurally.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ._consumer_protocol import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from ._schema import Kind, Message, message, wire
from ._wire import ZERO_UUID, Uuid

K = Kind
FROZEN = dict(frozen=True, slots=True, kw_only=True)


class RecordType(enum.IntEnum):
    """The record type: the first int16 of a ``__consumer_offsets`` key."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_PARTITION_METADATA = 9
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    STREAMS_GROUP_PARTITION_METADATA = 18
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23


class MemberState(enum.IntEnum):
    """KIP-848 consumer and share member state (type 8 / 14 ``State``); unknown wire values map to UNKNOWN."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def parse(cls, value: int) -> "MemberState":
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class StreamsMemberState(enum.IntEnum):
    """Streams member state (type 22): different codes from consumer groups."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127

    @classmethod
    def parse(cls, value: int) -> "StreamsMemberState":
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


# ---------------------------------------------------------------------------------------------------------------
# Keys (never flexible; the int16 prefix selects the schema)


@dataclass(**FROZEN)
class OffsetCommitKey(Message):
    """Key of types 0 and 1: one logical key space ``(group, topic, partition)``."""

    group: str = wire(K.STRING)
    topic: str = wire(K.STRING)
    partition: int = wire(K.INT32)


@dataclass(**FROZEN)
class GroupMetadataKey(Message):
    group: str = wire(K.STRING)


@dataclass(**FROZEN)
class GroupKey(Message):
    """Key body ``GroupId`` shared by the group-level KIP-848, share and streams records."""

    group_id: str = wire(K.STRING)


@dataclass(**FROZEN)
class GroupMemberKey(Message):
    """Key body ``GroupId, MemberId`` shared by the member-level KIP-848, share and streams records."""

    group_id: str = wire(K.STRING)
    member_id: str = wire(K.STRING)


@dataclass(**FROZEN)
class ConsumerGroupRegularExpressionKey(Message):
    group_id: str = wire(K.STRING)
    regular_expression: str = wire(K.STRING)


# ---------------------------------------------------------------------------------------------------------------
# Types 0/1: offset commits


@message(valid="0-4", flexible="4+")
@dataclass(**FROZEN)
class OffsetCommitValue(Message):
    offset: int = wire(K.INT64)
    leader_epoch: int = wire(K.INT32, "3+", default=-1)
    metadata: str = wire(K.STRING)
    commit_timestamp: int = wire(K.INT64)
    expire_timestamp: int = wire(K.INT64, "1", default=-1)
    topic_id: Uuid = wire(K.UUID, "4+", tag=0, default=ZERO_UUID)


# ---------------------------------------------------------------------------------------------------------------
# Type 2: classic group metadata


@dataclass(**FROZEN)
class MemberMetadata(Message):
    """One classic-group member. ``subscription``/``assignment`` stay raw on the wire; when the group's protocol
    type is ``consumer`` the decoder also fills the ``decoded_*`` fields (None if the blob does not parse)."""

    member_id: str = wire(K.STRING)
    group_instance_id: str | None = wire(K.STRING, "3+", nullable="3+", default=None)
    client_id: str = wire(K.STRING)
    client_host: str = wire(K.STRING)
    rebalance_timeout: int = wire(K.INT32, "1+", default=-1)
    session_timeout: int = wire(K.INT32)
    subscription: bytes = wire(K.BYTES)
    assignment: bytes = wire(K.BYTES)
    decoded_subscription: ConsumerProtocolSubscription | None = field(default=None, compare=False, repr=False)
    decoded_assignment: ConsumerProtocolAssignment | None = field(default=None, compare=False, repr=False)


@message(valid="0-4", flexible="4+")
@dataclass(**FROZEN)
class GroupMetadataValue(Message):
    protocol_type: str = wire(K.STRING)
    generation: int = wire(K.INT32)
    protocol: str | None = wire(K.STRING, nullable="0+", default=None)
    leader: str | None = wire(K.STRING, nullable="0+", default=None)
    current_state_timestamp: int = wire(K.INT64, "2+", default=-1)
    members: tuple[MemberMetadata, ...] = wire(K.ARRAY, of=MemberMetadata)


# ---------------------------------------------------------------------------------------------------------------
# Shared structs of the KIP-848, share and streams records


@dataclass(**FROZEN)
class PartitionMetadata(Message):
    partition: int = wire(K.INT32)
    racks: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)


@dataclass(**FROZEN)
class TopicMetadata(Message):
    topic_id: Uuid = wire(K.UUID)
    topic_name: str = wire(K.STRING)
    num_partitions: int = wire(K.INT32)
    partition_metadata: tuple[PartitionMetadata, ...] = wire(K.ARRAY, of=PartitionMetadata)


@dataclass(**FROZEN)
class TopicIdPartitions(Message):
    """``{TopicId, Partitions}`` (target assignments, share assignments)."""

    topic_id: Uuid = wire(K.UUID)
    partitions: tuple[int, ...] = wire(K.ARRAY, of=K.INT32)


@dataclass(**FROZEN)
class EpochedTopicPartitions(Message):
    """Type 8's ``TopicPartitions``: tag 0 ``AssignmentEpochs`` (4.3+) gives each partition's assignment epoch."""

    topic_id: Uuid = wire(K.UUID)
    partitions: tuple[int, ...] = wire(K.ARRAY, of=K.INT32)
    assignment_epochs: tuple[int, ...] | None = wire(K.ARRAY, nullable="0+", tag=0, default=None, of=K.INT32)


# ---------------------------------------------------------------------------------------------------------------
# Types 3-8, 16: KIP-848 consumer groups


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupMetadataValue(Message):
    epoch: int = wire(K.INT32)
    metadata_hash: int = wire(K.INT64, tag=0, default=0)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupPartitionMetadataValue(Message):
    topics: tuple[TopicMetadata, ...] = wire(K.ARRAY, of=TopicMetadata)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupPartitionMetadataValue_3_7(Message):
    """Type 4 as written by 3.6/3.7 early access: ``Epoch`` precedes ``Topics``."""

    epoch: int = wire(K.INT32)
    topics: tuple[TopicMetadata, ...] = wire(K.ARRAY, of=TopicMetadata)


@dataclass(**FROZEN)
class ClassicProtocol(Message):
    name: str = wire(K.STRING)
    metadata: bytes = wire(K.BYTES)


@dataclass(**FROZEN)
class ClassicMemberMetadata(Message):
    session_timeout_ms: int = wire(K.INT32)
    supported_protocols: tuple[ClassicProtocol, ...] = wire(K.ARRAY, of=ClassicProtocol)


@dataclass(**FROZEN)
class _ConsumerGroupMemberFields(Message):
    """The fields type 5 has had since 3.6, in wire order; the layouts differ only in what follows them."""

    instance_id: str | None = wire(K.STRING, nullable="0+", default=None)
    rack_id: str | None = wire(K.STRING, nullable="0+", default=None)
    client_id: str = wire(K.STRING)
    client_host: str = wire(K.STRING)
    subscribed_topic_names: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)
    subscribed_topic_regex: str | None = wire(K.STRING, nullable="0+", default=None)
    rebalance_timeout_ms: int = wire(K.INT32, default=-1)
    server_assignor: str | None = wire(K.STRING, nullable="0+", default=None)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupMemberMetadataValue(_ConsumerGroupMemberFields):
    # Kafka writes this tag even when null (presence marker 0): its generator treats the empty struct, not null,
    # as the default. ``None`` = a member using the consumer protocol.
    classic_member_metadata: ClassicMemberMetadata | None = wire(
        K.STRUCT, nullable="0+", tag=0, default=None, of=ClassicMemberMetadata, tag_default=ClassicMemberMetadata()
    )


@dataclass(**FROZEN)
class Assignor_3_7(Message):
    name: str = wire(K.STRING)
    minimum_version: int = wire(K.INT16)
    maximum_version: int = wire(K.INT16)
    reason: int = wire(K.INT8)
    version: int = wire(K.INT16)
    metadata: bytes = wire(K.BYTES)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupMemberMetadataValue_3_7(_ConsumerGroupMemberFields):
    """Type 5 as written by 3.6/3.7: a non-tagged ``Assignors`` array instead of ``ClassicMemberMetadata``."""

    assignors: tuple[Assignor_3_7, ...] = wire(K.ARRAY, of=Assignor_3_7)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupTargetAssignmentMetadataValue(Message):
    assignment_epoch: int = wire(K.INT32)
    assignment_timestamp: int = wire(K.INT64, tag=0, default=0)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupTargetAssignmentMemberValue(Message):
    topic_partitions: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupTargetAssignmentMemberValue_3_7(Message):
    error: int = wire(K.INT8)
    topic_partitions: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)
    metadata_version: int = wire(K.INT16)
    metadata_bytes: bytes = wire(K.BYTES)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupCurrentMemberAssignmentValue(Message):
    member_epoch: int = wire(K.INT32)
    previous_member_epoch: int = wire(K.INT32)
    state: int = wire(K.INT8)
    assigned_partitions: tuple[EpochedTopicPartitions, ...] = wire(K.ARRAY, of=EpochedTopicPartitions)
    partitions_pending_revocation: tuple[EpochedTopicPartitions, ...] = wire(K.ARRAY, of=EpochedTopicPartitions)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupCurrentMemberAssignmentValue_3_7(Message):
    member_epoch: int = wire(K.INT32)
    previous_member_epoch: int = wire(K.INT32)
    target_member_epoch: int = wire(K.INT32)
    assigned_partitions: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)
    partitions_pending_revocation: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)
    partitions_pending_assignment: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)
    error: int = wire(K.INT8)
    metadata_version: int = wire(K.INT16)
    metadata_bytes: bytes = wire(K.BYTES)


@message(flexible="0+")
@dataclass(**FROZEN)
class ConsumerGroupRegularExpressionValue(Message):
    topics: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)
    version: int = wire(K.INT64)
    timestamp: int = wire(K.INT64)


# ---------------------------------------------------------------------------------------------------------------
# Types 9-15: share groups (KIP-932)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupPartitionMetadataValue(Message):
    """Type 9, written only by 4.0."""

    topics: tuple[TopicMetadata, ...] = wire(K.ARRAY, of=TopicMetadata)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupMemberMetadataValue(Message):
    rack_id: str | None = wire(K.STRING, nullable="0+", default=None)
    client_id: str = wire(K.STRING)
    client_host: str = wire(K.STRING)
    subscribed_topic_names: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupMetadataValue(Message):
    """Type 11 from 4.1 (``MetadataHash`` is a regular, non-tagged field)."""

    epoch: int = wire(K.INT32)
    metadata_hash: int = wire(K.INT64)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupMetadataValue_4_0(Message):
    epoch: int = wire(K.INT32)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupTargetAssignmentMetadataValue(Message):
    assignment_epoch: int = wire(K.INT32)
    assignment_timestamp: int = wire(K.INT64, tag=0, default=0)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupTargetAssignmentMemberValue(Message):
    topic_partitions: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupCurrentMemberAssignmentValue(Message):
    member_epoch: int = wire(K.INT32)
    previous_member_epoch: int = wire(K.INT32)
    state: int = wire(K.INT8)
    assigned_partitions: tuple[TopicIdPartitions, ...] = wire(K.ARRAY, of=TopicIdPartitions)


@dataclass(**FROZEN)
class TopicPartitionsInfo(Message):
    topic_id: Uuid = wire(K.UUID)
    topic_name: str = wire(K.STRING)
    partitions: tuple[int, ...] = wire(K.ARRAY, of=K.INT32)


@dataclass(**FROZEN)
class TopicInfo(Message):
    topic_id: Uuid = wire(K.UUID)
    topic_name: str = wire(K.STRING)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupStatePartitionMetadataValue(Message):
    """Type 15 from 4.1."""

    initializing_topics: tuple[TopicPartitionsInfo, ...] = wire(K.ARRAY, of=TopicPartitionsInfo)
    initialized_topics: tuple[TopicPartitionsInfo, ...] = wire(K.ARRAY, of=TopicPartitionsInfo)
    deleting_topics: tuple[TopicInfo, ...] = wire(K.ARRAY, of=TopicInfo)


@message(flexible="0+")
@dataclass(**FROZEN)
class ShareGroupStatePartitionMetadataValue_4_0(Message):
    initialized_topics: tuple[TopicPartitionsInfo, ...] = wire(K.ARRAY, of=TopicPartitionsInfo)
    deleting_topics: tuple[TopicInfo, ...] = wire(K.ARRAY, of=TopicInfo)


# ---------------------------------------------------------------------------------------------------------------
# Types 17-23: streams groups (KIP-1071)


@dataclass(**FROZEN)
class KeyValue(Message):
    key: str = wire(K.STRING)
    value: str = wire(K.STRING)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupMetadataValue(Message):
    epoch: int = wire(K.INT32)
    metadata_hash: int = wire(K.INT64)
    validated_topology_epoch: int = wire(K.INT32, tag=0, default=-1)
    last_assignment_configs: tuple[KeyValue, ...] | None = wire(
        K.ARRAY, nullable="0+", tag=1, default=None, of=KeyValue
    )
    stored_description_topology_epoch: int = wire(K.INT32, tag=2, default=-1)
    failed_description_topology_epoch: int = wire(K.INT32, tag=3, default=-1)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupPartitionMetadataValue(Message):
    """Type 18: existed on trunk only (Dec 2024 - Jun 2025), in no release."""

    topics: tuple[TopicMetadata, ...] = wire(K.ARRAY, of=TopicMetadata)


@dataclass(**FROZEN)
class Endpoint(Message):
    host: str = wire(K.STRING)
    port: int = wire(K.UINT16)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupMemberMetadataValue(Message):
    instance_id: str | None = wire(K.STRING, nullable="0+", default=None)
    rack_id: str | None = wire(K.STRING, nullable="0+", default=None)
    client_id: str = wire(K.STRING)
    client_host: str = wire(K.STRING)
    rebalance_timeout_ms: int = wire(K.INT32, default=-1)
    topology_epoch: int = wire(K.INT32)
    process_id: str = wire(K.STRING)
    user_endpoint: Endpoint | None = wire(K.STRUCT, nullable="0+", default=None, of=Endpoint)
    client_tags: tuple[KeyValue, ...] = wire(K.ARRAY, of=KeyValue)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupTargetAssignmentMetadataValue(Message):
    assignment_epoch: int = wire(K.INT32)
    assignment_timestamp: int = wire(K.INT64, tag=0, default=0)


@dataclass(**FROZEN)
class TaskIds(Message):
    subtopology_id: str = wire(K.STRING)
    partitions: tuple[int, ...] = wire(K.ARRAY, of=K.INT32)


@dataclass(**FROZEN)
class EpochedTaskIds(Message):
    subtopology_id: str = wire(K.STRING)
    partitions: tuple[int, ...] = wire(K.ARRAY, of=K.INT32)
    assignment_epochs: tuple[int, ...] | None = wire(K.ARRAY, nullable="0+", tag=0, default=None, of=K.INT32)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupTargetAssignmentMemberValue(Message):
    active_tasks: tuple[TaskIds, ...] = wire(K.ARRAY, of=TaskIds)
    standby_tasks: tuple[TaskIds, ...] = wire(K.ARRAY, of=TaskIds)
    warmup_tasks: tuple[TaskIds, ...] = wire(K.ARRAY, of=TaskIds)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupCurrentMemberAssignmentValue(Message):
    member_epoch: int = wire(K.INT32)
    previous_member_epoch: int = wire(K.INT32)
    state: int = wire(K.INT8)
    active_tasks: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)
    standby_tasks: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)
    warmup_tasks: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)
    active_tasks_pending_revocation: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)
    standby_tasks_pending_revocation: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)
    warmup_tasks_pending_revocation: tuple[EpochedTaskIds, ...] = wire(K.ARRAY, of=EpochedTaskIds)


@dataclass(**FROZEN)
class StreamsTopicInfo(Message):
    name: str = wire(K.STRING)
    partitions: int = wire(K.INT32)
    replication_factor: int = wire(K.INT16)
    topic_configs: tuple[KeyValue, ...] = wire(K.ARRAY, of=KeyValue)


@dataclass(**FROZEN)
class CopartitionGroup(Message):
    source_topics: tuple[int, ...] = wire(K.ARRAY, of=K.INT16)
    source_topic_regex: tuple[int, ...] = wire(K.ARRAY, of=K.INT16)
    repartition_source_topics: tuple[int, ...] = wire(K.ARRAY, of=K.INT16)


@dataclass(**FROZEN)
class Subtopology(Message):
    subtopology_id: str = wire(K.STRING)
    source_topics: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)
    source_topic_regex: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)
    state_changelog_topics: tuple[StreamsTopicInfo, ...] = wire(K.ARRAY, of=StreamsTopicInfo)
    repartition_sink_topics: tuple[str, ...] = wire(K.ARRAY, of=K.STRING)
    repartition_source_topics: tuple[StreamsTopicInfo, ...] = wire(K.ARRAY, of=StreamsTopicInfo)
    copartition_groups: tuple[CopartitionGroup, ...] = wire(K.ARRAY, of=CopartitionGroup)


@message(flexible="0+")
@dataclass(**FROZEN)
class StreamsGroupTopologyValue(Message):
    epoch: int = wire(K.INT32)
    subtopologies: tuple[Subtopology, ...] = wire(K.ARRAY, of=Subtopology)


# ---------------------------------------------------------------------------------------------------------------
# Decoded records


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One decoded ``__consumer_offsets`` record. ``value`` None is a tombstone (``value_version`` is then -1)."""

    type: RecordType
    key: Message
    value: Message | None
    value_version: int

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def group_id(self) -> str:
        key = self.key
        return key.group if isinstance(key, (OffsetCommitKey, GroupMetadataKey)) else key.group_id  # type: ignore


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record of a type or value version this codec does not know: kept raw, never an error.

    ``group_id`` is filled when the key still parses (the key layout of a known type with an unknown value
    version), so a monitor can attribute it to a group.
    """

    type: int
    version: int
    key: bytes
    value: bytes | None
    reason: str
    group_id: str | None = None
