"""The sole constructors of records: ``new_<record>()`` and ``new_<record>_tombstone()``.

Like Kafka's ``GroupCoordinatorRecordHelpers``, these choose the value version the way a broker does and fill in
Kafka's defaults, so the simulator, tests and demo never improvise a version or a tombstone shape. Each returns a
:class:`CoordinatorRecord`; ``protocol.codec.encode_record`` turns it into key/value bytes.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ._consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from ._wire import ZERO_UUID, Uuid
from .records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    CoordinatorRecord,
    EpochedTopicPartitions,
    GroupKey,
    GroupMemberKey,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    MemberState,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordType,
    TopicIdPartitions,
    TopicMetadata,
)

__all__ = [
    "new_offset_commit",
    "new_offset_commit_tombstone",
    "new_group_metadata",
    "new_empty_group_metadata",
    "new_group_metadata_tombstone",
    "new_classic_member",
    "new_consumer_subscription",
    "new_consumer_assignment",
    "new_consumer_group_epoch",
    "new_consumer_group_epoch_tombstone",
    "new_consumer_group_partition_metadata",
    "new_consumer_group_partition_metadata_tombstone",
    "new_consumer_group_member",
    "new_consumer_group_member_tombstone",
    "new_target_assignment_epoch",
    "new_target_assignment_epoch_tombstone",
    "new_target_assignment_member",
    "new_target_assignment_member_tombstone",
    "new_current_assignment",
    "new_current_assignment_tombstone",
    "new_regular_expression",
    "new_regular_expression_tombstone",
]

T = RecordType
TopicIdAssignment = Mapping[Uuid, Sequence[int]]


# ---- offsets ---------------------------------------------------------------------------------------------------


def new_offset_commit(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    commit_timestamp: int,
    leader_epoch: int = -1,
    metadata: str = "",
    expire_timestamp: int | None = None,
    topic_id: Uuid | None = None,
    broker_version: tuple[int, int] = (4, 0),
) -> CoordinatorRecord:
    """An offset commit as a broker of ``broker_version`` writes it.

    2.1-4.0 write v3, or v1 when the request carried an explicit retention (``expire_timestamp``); 4.1+ write the
    flexible v4 (with the topic id when known) and v1 for an explicit retention; 0.9-2.0 write v1.
    """
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    if expire_timestamp is not None or broker_version < (2, 1):
        version = 1
        expire = commit_timestamp if expire_timestamp is None else expire_timestamp
    elif broker_version >= (4, 1):
        version, expire = 4, -1
    else:
        version, expire = 3, -1
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        expire_timestamp=expire,
        topic_id=topic_id if (topic_id is not None and version == 4) else ZERO_UUID,
    )
    return CoordinatorRecord(T.OFFSET_COMMIT, key, value, version)


def new_offset_commit_tombstone(group: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(T.OFFSET_COMMIT, OffsetCommitKey(group=group, topic=topic, partition=partition), None, -1)


# ---- classic groups --------------------------------------------------------------------------------------------


def new_consumer_subscription(
    topics: Iterable[str],
    *,
    owned_partitions: Mapping[str, Sequence[int]] | None = None,
    generation_id: int = -1,
    rack_id: str | None = None,
    user_data: bytes | None = None,
    version: int = 3,
) -> bytes:
    """A ConsumerProtocolSubscription blob; topics and owned partitions sorted as the Java client does."""
    owned = tuple(
        TopicPartition(topic=t, partitions=tuple(sorted(ps))) for t, ps in sorted((owned_partitions or {}).items())
    )
    value = ConsumerProtocolSubscription(
        topics=tuple(sorted(topics)),
        user_data=user_data,
        owned_partitions=owned,
        generation_id=generation_id,
        rack_id=rack_id,
        version=version,
    )
    return encode_subscription(value)


def new_consumer_assignment(
    partitions: Mapping[str, Sequence[int]], *, user_data: bytes | None = None, version: int = 3
) -> bytes:
    value = ConsumerProtocolAssignment(
        assigned_partitions=tuple(TopicPartition(topic=t, partitions=tuple(ps)) for t, ps in partitions.items()),
        user_data=user_data,
        version=version,
    )
    return encode_assignment(value)


def new_classic_member(
    member_id: str,
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
    group_instance_id: str | None = None,
    session_timeout: int = 45000,
    rebalance_timeout: int = 300000,
    subscription: bytes = b"",
    assignment: bytes = b"",
) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=group_instance_id,
        client_id=client_id,
        client_host=client_host,
        rebalance_timeout=rebalance_timeout,
        session_timeout=session_timeout,
        subscription=subscription,
        assignment=assignment,
    )


def new_group_metadata(
    group: str,
    *,
    generation: int,
    protocol_type: str,
    protocol: str | None,
    leader: str | None,
    members: Sequence[MemberMetadata],
    current_state_timestamp: int,
    version: int = 3,
) -> CoordinatorRecord:
    """A classic group's metadata; brokers since 2.3 write v3 (4.0+ constant ``GROUP_METADATA_VALUE_VERSION``)."""
    value = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=tuple(members),
    )
    return CoordinatorRecord(T.GROUP_METADATA, GroupMetadataKey(group=group), value, version)


def new_empty_group_metadata(
    group: str, *, generation: int, protocol_type: str, current_state_timestamp: int
) -> CoordinatorRecord:
    """What a group's last rebalance writes when every member has left: no protocol, no leader, no members."""
    return new_group_metadata(
        group,
        generation=generation,
        protocol_type=protocol_type,
        protocol=None,
        leader=None,
        members=(),
        current_state_timestamp=current_state_timestamp,
    )


def new_group_metadata_tombstone(group: str) -> CoordinatorRecord:
    return CoordinatorRecord(T.GROUP_METADATA, GroupMetadataKey(group=group), None, -1)


# ---- KIP-848 consumer groups -----------------------------------------------------------------------------------


def _group_record(record_type: RecordType, group_id: str, value) -> CoordinatorRecord:
    return CoordinatorRecord(record_type, GroupKey(group_id=group_id), value, -1 if value is None else 0)


def _member_record(record_type: RecordType, group_id: str, member_id: str, value) -> CoordinatorRecord:
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(record_type, key, value, -1 if value is None else 0)


def new_consumer_group_epoch(group_id: str, epoch: int, *, metadata_hash: int = 0) -> CoordinatorRecord:
    return _group_record(
        T.CONSUMER_GROUP_METADATA, group_id, ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
    )


def new_consumer_group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return _group_record(T.CONSUMER_GROUP_METADATA, group_id, None)


def new_consumer_group_partition_metadata(
    group_id: str, topics: Iterable[tuple[Uuid, str, int]]
) -> CoordinatorRecord:
    """Type 4 (written up to 4.0): ``(topic id, name, partition count)`` per subscribed topic."""
    value = ConsumerGroupPartitionMetadataValue(
        topics=tuple(
            TopicMetadata(topic_id=tid, topic_name=name, num_partitions=n, partition_metadata=())
            for tid, name, n in topics
        )
    )
    return _group_record(T.CONSUMER_GROUP_PARTITION_METADATA, group_id, value)


def new_consumer_group_partition_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return _group_record(T.CONSUMER_GROUP_PARTITION_METADATA, group_id, None)


def new_consumer_group_member(
    group_id: str,
    member_id: str,
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
    subscribed_topic_names: Iterable[str] = (),
    subscribed_topic_regex: str | None = None,
    instance_id: str | None = None,
    rack_id: str | None = None,
    rebalance_timeout_ms: int = 300000,
    server_assignor: str | None = None,
    classic_member_metadata: ClassicMemberMetadata | None = None,
) -> CoordinatorRecord:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=instance_id,
        rack_id=rack_id,
        client_id=client_id,
        client_host=client_host,
        subscribed_topic_names=tuple(sorted(subscribed_topic_names)),
        subscribed_topic_regex=subscribed_topic_regex,
        rebalance_timeout_ms=rebalance_timeout_ms,
        server_assignor=server_assignor,
        classic_member_metadata=classic_member_metadata,
    )
    return _member_record(T.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id, value)


def new_consumer_group_member_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return _member_record(T.CONSUMER_GROUP_MEMBER_METADATA, group_id, member_id, None)


def new_target_assignment_epoch(group_id: str, assignment_epoch: int, *, assignment_timestamp: int = 0):
    value = ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=assignment_epoch, assignment_timestamp=assignment_timestamp
    )
    return _group_record(T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id, value)


def new_target_assignment_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return _group_record(T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id, None)


def _topic_id_partitions(assignment: TopicIdAssignment) -> tuple[TopicIdPartitions, ...]:
    return tuple(TopicIdPartitions(topic_id=tid, partitions=tuple(ps)) for tid, ps in assignment.items())


def new_target_assignment_member(group_id: str, member_id: str, assignment: TopicIdAssignment) -> CoordinatorRecord:
    value = ConsumerGroupTargetAssignmentMemberValue(topic_partitions=_topic_id_partitions(assignment))
    return _member_record(T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id, value)


def new_target_assignment_member_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return _member_record(T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id, None)


def _epoched(assignment: TopicIdAssignment, epochs: Mapping[Uuid, Sequence[int]] | None):
    return tuple(
        EpochedTopicPartitions(
            topic_id=tid,
            partitions=tuple(ps),
            assignment_epochs=None if epochs is None else tuple(epochs[tid]),
        )
        for tid, ps in assignment.items()
    )


def new_current_assignment(
    group_id: str,
    member_id: str,
    *,
    member_epoch: int,
    previous_member_epoch: int,
    state: MemberState = MemberState.STABLE,
    assigned: TopicIdAssignment,
    pending_revocation: TopicIdAssignment | None = None,
    assignment_epochs: Mapping[Uuid, Sequence[int]] | None = None,
) -> CoordinatorRecord:
    """Type 8. ``assignment_epochs`` (per assigned partition) is what 4.3+ brokers add; None for older ones."""
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member_epoch,
        previous_member_epoch=previous_member_epoch,
        state=int(state),
        assigned_partitions=_epoched(assigned, assignment_epochs),
        partitions_pending_revocation=_epoched(pending_revocation or {}, None),
    )
    return _member_record(T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, value)


def new_current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return _member_record(T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, None)


def new_regular_expression(
    group_id: str, regular_expression: str, *, topics: Iterable[str], version: int, timestamp: int
) -> CoordinatorRecord:
    key = ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regular_expression)
    value = ConsumerGroupRegularExpressionValue(topics=tuple(sorted(topics)), version=version, timestamp=timestamp)
    return CoordinatorRecord(T.CONSUMER_GROUP_REGULAR_EXPRESSION, key, value, 0)


def new_regular_expression_tombstone(group_id: str, regular_expression: str) -> CoordinatorRecord:
    key = ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regular_expression)
    return CoordinatorRecord(T.CONSUMER_GROUP_REGULAR_EXPRESSION, key, None, -1)
