"""Writes the example ``__consumer_offsets`` segment files under ``examples/consumer-offsets/``.

The files are what a Kafka 4.0 broker would write for a few small groups: a classic group that goes through two
generations and then empties, a KIP-848 consumer group with its epochs and assignments, a transactional consumer
whose first transaction commits and second aborts, offset tombstones, and one gzip-compressed batch. Run it again
to regenerate them: ``python examples/make_example_segments.py``.
"""

from __future__ import annotations

from pathlib import Path

from protocol import Uuid, partition_for
from protocol.batch import CompressionType, ControlType
from protocol.builders import (
    new_classic_member,
    new_consumer_assignment,
    new_consumer_group_epoch,
    new_consumer_group_member,
    new_consumer_group_partition_metadata,
    new_consumer_subscription,
    new_current_assignment,
    new_empty_group_metadata,
    new_group_metadata,
    new_offset_commit,
    new_offset_commit_tombstone,
    new_target_assignment_epoch,
    new_target_assignment_member,
)
from protocol.log_builder import PartitionLogBuilder

OUT = Path(__file__).resolve().parent / "consumer-offsets"
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
ORDERS_ID = Uuid(bytes(range(16)))


def classic_group(log: PartitionLogBuilder) -> None:
    g = "orders-classic"
    log.append([new_empty_group_metadata(g, generation=0, protocol_type="", current_state_timestamp=T0)], timestamp=T0)
    sub = new_consumer_subscription(["orders"])
    m1 = new_classic_member("c1-3f2a", client_id="c1", subscription=sub,
                            assignment=new_consumer_assignment({"orders": [0, 1, 2, 3]}))
    log.append([new_group_metadata(g, generation=1, protocol_type="consumer", protocol="range", leader="c1-3f2a",
                                   members=[m1], current_state_timestamp=T0 + 50)], timestamp=T0 + 60)
    for step in range(3):
        ts = T0 + 5000 * (step + 1)
        log.append([new_offset_commit(g, "orders", p, 100 * step + p, commit_timestamp=ts, leader_epoch=0)
                    for p in range(4)], timestamp=ts)
    m1b = new_classic_member("c1-3f2a", client_id="c1", subscription=sub,
                             assignment=new_consumer_assignment({"orders": [0, 1]}))
    m2 = new_classic_member("c2-77b0", client_id="c2", subscription=sub,
                            assignment=new_consumer_assignment({"orders": [2, 3]}))
    log.append([new_group_metadata(g, generation=2, protocol_type="consumer", protocol="range", leader="c1-3f2a",
                                   members=[m1b, m2], current_state_timestamp=T0 + 16000)], timestamp=T0 + 16010)
    ts = T0 + 20000
    log.append([new_offset_commit(g, "orders", p, 400 + p, commit_timestamp=ts, leader_epoch=0) for p in range(4)],
               timestamp=ts, compression=CompressionType.GZIP)
    log.append([new_empty_group_metadata(g, generation=3, protocol_type="consumer",
                                         current_state_timestamp=T0 + 30000)], timestamp=T0 + 30000)
    log.append([new_offset_commit_tombstone(g, "orders", 3)], timestamp=T0 + 40000)


def consumer_group(log: PartitionLogBuilder) -> None:
    g = "orders-kip848"
    ts = T0 + 1000
    log.append([
        new_consumer_group_member(g, "m-A", client_id="a", subscribed_topic_names=["orders"], server_assignor="uniform"),
        new_consumer_group_partition_metadata(g, [(ORDERS_ID, "orders", 4)]),
        new_consumer_group_epoch(g, 1),
        new_target_assignment_member(g, "m-A", {ORDERS_ID: [0, 1, 2, 3]}),
        new_target_assignment_epoch(g, 1),
        new_current_assignment(g, "m-A", member_epoch=1, previous_member_epoch=0, assigned={ORDERS_ID: [0, 1, 2, 3]}),
    ], timestamp=ts)
    log.append([new_offset_commit(g, "orders", p, 10 + p, commit_timestamp=ts + 5000, leader_epoch=0)
                for p in range(4)], timestamp=ts + 5000)


def transactional_group(log: PartitionLogBuilder) -> None:
    g = "payments-eos"
    ts = T0 + 2000
    log.append([new_offset_commit(g, "payments", 0, 7, commit_timestamp=ts)], timestamp=ts,
               producer_id=4000, producer_epoch=0, transactional=True)
    log.append_marker(ControlType.COMMIT, producer_id=4000, producer_epoch=0, timestamp=ts + 10)
    log.append([new_offset_commit(g, "payments", 0, 9, commit_timestamp=ts + 1000)], timestamp=ts + 1000,
               producer_id=4000, producer_epoch=0, transactional=True)
    log.append_marker(ControlType.ABORT, producer_id=4000, producer_epoch=0, timestamp=ts + 1010)


def main() -> None:
    builders: dict[int, PartitionLogBuilder] = {}
    for group, build in (("orders-classic", classic_group), ("orders-kip848", consumer_group),
                         ("payments-eos", transactional_group)):
        partition = partition_for(group)
        build(builders.setdefault(partition, PartitionLogBuilder()))
    for partition, log in sorted(builders.items()):
        directory = OUT / f"__consumer_offsets-{partition}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "00000000000000000000.log").write_bytes(log.getvalue())
        print(f"wrote {directory}")


if __name__ == "__main__":
    main()
