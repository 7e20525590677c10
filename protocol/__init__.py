"""groupscope's sans-IO codec for Kafka's ``__consumer_offsets`` topic: bytes in, typed values out.

No Spark, no Kafka client, no logging. ``decode_record`` is the entry point for one record; ``batch.iter_batches``
reads record batches (segment files, fetch data); ``arrow.decode_arrow`` is the vectorized form for Spark (import
it from ``protocol.arrow``; it and ``kafka_dump``, the fast ``kafka-dump-log``-style renderer, are the modules
that need pyarrow).
"""

from ._consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ._wire import ZERO_UUID, Uuid
from .codec import RECORD_SPECS, RecordSpec, decode_record, encode_key, encode_record, encode_value
from .errors import CodecError
from .kafka_json import kafka_key_json, kafka_payload_json
from .partitioner import DEFAULT_OFFSETS_PARTITIONS, java_string_hash, partition_for
from .records import CoordinatorRecord, MemberState, RecordType, StreamsMemberState, UnknownRecord

__all__ = [
    "CodecError",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "CoordinatorRecord",
    "DEFAULT_OFFSETS_PARTITIONS",
    "MemberState",
    "RECORD_SPECS",
    "RecordSpec",
    "RecordType",
    "StreamsMemberState",
    "TopicPartition",
    "UnknownRecord",
    "Uuid",
    "ZERO_UUID",
    "decode_assignment",
    "decode_record",
    "decode_subscription",
    "encode_assignment",
    "encode_key",
    "encode_record",
    "encode_subscription",
    "encode_value",
    "java_string_hash",
    "kafka_key_json",
    "kafka_payload_json",
    "partition_for",
]
