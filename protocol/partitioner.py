"""Which ``__consumer_offsets`` partition (coordinator shard) owns a group.

Kafka computes ``Utils.abs(groupId.hashCode()) % numPartitions`` with Java's ``String.hashCode`` over UTF-16 code
units and 32-bit wrap-around; ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0, which Python's ``abs`` would not.
"""

from __future__ import annotations

__all__ = ["java_string_hash", "partition_for", "DEFAULT_OFFSETS_PARTITIONS"]

DEFAULT_OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions default


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    raw = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hash(group_id)
    return (0 if h == -0x80000000 else abs(h)) % num_partitions
