"""The group → ``__consumer_offsets`` partition function matches Kafka's (docs/kafka-formats.md#partitioning)."""

import pytest

from protocol import java_string_hash, partition_for


@pytest.mark.parametrize(
    "group, partition",
    [
        ("test", 48),
        ("my-group", 12),
        ("GydZG_", 0),  # hash is Integer.MIN_VALUE: Utils.abs gives 0, a naive abs would give 48
        ("polygenelubricants", 0),
        ("DESIGNING WORKHOUSES", 0),
        ("console-consumer-12345", 6),
        ("connect-cluster", 13),
    ],
)
def test_partition_for_default_50(group, partition):
    assert partition_for(group) == partition


def test_hash_values():
    assert java_string_hash("test") == 3556498
    assert java_string_hash("my-group") == -1906497762
    assert java_string_hash("GydZG_") == -(2**31)
    assert java_string_hash("") == 0


def test_non_bmp_characters_hash_as_two_utf16_units():
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16: 31 * 0xD83D + 0xDE00.
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00


def test_partitions_must_be_positive():
    with pytest.raises(ValueError):
        partition_for("g", 0)
