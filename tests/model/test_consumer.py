"""A KIP-848 consumer group rebuilt from records 3-8 and 16 in the order Kafka writes them (member metadata, group
epoch, target member, target epoch, current assignment), through the shard: the state Kafka's
maybeUpdateGroupState derives after each record, one Rebalance per epoch once its target is written, member
removal, regular expressions and the assignor a snapshot reports."""

from __future__ import annotations

from protocol import Uuid
from protocol import builders as b
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.consumer import ConsumerGroup
from streaming.model.shard import GroupCoordinatorShard

T0 = 1_800_000_000_000
TID = Uuid(bytes(range(16)))


def java_hash_bucket(name: str) -> int:
    """java.util.HashMap's bucket of a String key in a table of 16: (h ^ h >>> 16) & 15."""
    h = 0
    for ch in name:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


class Log:
    def __init__(self) -> None:
        self.shard = GroupCoordinatorShard(0)
        self.shard.topic_names[bytes(TID)] = "t"
        self.offset = 0

    def add(self, *records, ts: int = T0) -> list[ev.Event]:
        for rec in records:
            self.shard.replay(self.offset, ts, decode_record(*encode_record(rec)))
            self.offset += 1
        return self.shard.drain_events()

    @property
    def group(self) -> ConsumerGroup:
        return self.shard.groups["g"]

    def states(self) -> list[str]:
        return [e.new for e in self.shard.drain_events() if isinstance(e, ev.GroupStateChanged)]


def join(log: Log, epoch: int, assignment: dict[str, list[int]], ts: int = T0, assignor: str | None = None):
    """The records of one epoch bump where every member in ``assignment`` is (re)assigned its partitions."""
    records = [b.new_consumer_group_member("g", m, client_id=f"c-{m}", subscribed_topic_names=["t"],
                                           server_assignor=assignor) for m in assignment]
    records.append(b.new_consumer_group_epoch("g", epoch))
    records += [b.new_target_assignment_member("g", m, {TID: parts}) for m, parts in assignment.items()]
    records.append(b.new_target_assignment_epoch("g", epoch))
    return log.add(*records, ts=ts)


def reconcile(log: Log, epoch: int, previous: int, assignment: dict[str, list[int]], ts: int = T0):
    return log.add(*(b.new_current_assignment("g", m, member_epoch=epoch, previous_member_epoch=previous,
                                              assigned={TID: parts}) for m, parts in assignment.items()), ts=ts)


def test_states_follow_maybe_update_group_state():
    log = Log()
    log.add(b.new_consumer_group_member("g", "a", client_id="c", subscribed_topic_names=["t"]))
    log.add(b.new_consumer_group_epoch("g", 1))
    assert log.group.state_name == "ASSIGNING"  # group epoch 1, target assignment still at 0
    log.add(b.new_target_assignment_member("g", "a", {TID: [0, 1]}), b.new_target_assignment_epoch("g", 1))
    assert log.group.state_name == "RECONCILING"  # the member is not at epoch 1 yet
    reconcile(log, 1, 0, {"a": [0, 1]})
    assert log.group.state_name == "STABLE"


def test_one_rebalance_per_epoch_once_its_target_is_written():
    log = Log()
    join(log, 1, {"a": [0, 1, 2, 3]})
    reconcile(log, 1, 0, {"a": [0, 1, 2, 3]})
    log.shard.drain_events()
    out = join(log, 2, {"a": [0, 1], "b": [2, 3]}, ts=T0 + 3_000)
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]
    assert (rebalance.generation, rebalance.previous_generation) == (2, 1)
    assert rebalance.causes == (ev.RebalanceCause.MEMBER_JOINED,) and rebalance.joined == ("b",)
    assert (rebalance.partitions_moved, rebalance.partitions_stayed) == (2, 2)  # the targets: t-2 and t-3 move
    assert log.group.rebalances == 2 and log.group.assignment_epoch == 2


def test_snapshot_members_show_current_and_target_assignment_by_topic_name():
    log = Log()
    join(log, 1, {"a": [0, 1]})
    reconcile(log, 1, 0, {"a": [0]})  # still reconciling: holds t-0, will hold t-0 and t-1
    (m,) = log.group.member_snapshots(log.shard.topic_names)
    assert m.assignment == (("t", 0),) and m.target_assignment == (("t", 0), ("t", 1))
    assert (m.member_epoch, m.state, m.subscribed_topics) == (1, "STABLE", ("t",))


def test_a_member_removed_by_its_tombstones_and_the_group_empties():
    log = Log()
    join(log, 1, {"a": [0]})
    reconcile(log, 1, 0, {"a": [0]})
    log.shard.drain_events()
    out = log.add(b.new_current_assignment_tombstone("g", "a"), b.new_target_assignment_member_tombstone("g", "a"),
                  b.new_consumer_group_member_tombstone("g", "a"), b.new_consumer_group_epoch("g", 2))
    assert not log.group.members and log.group.state_name == "EMPTY"
    assert any(isinstance(e, ev.MemberLeft) for e in out)
    (rebalance,) = [e for e in out if isinstance(e, ev.Rebalance)]  # an emptying bump needs no target
    assert ev.RebalanceCause.GROUP_EMPTIED in rebalance.causes


def test_regex_subscriptions_resolve_through_their_record():
    log = Log()
    log.add(b.new_consumer_group_member("g", "a", client_id="c", subscribed_topic_regex="t.*"),
            b.new_regular_expression("g", "t.*", topics=["t2", "t1"], version=1, timestamp=T0))
    assert log.group.subscribed_topics() == {"t1", "t2"}
    log.add(b.new_regular_expression_tombstone("g", "t.*"))
    assert log.group.subscribed_topics() == set()


def test_preferred_assignor_is_the_most_asked_for_and_ties_go_by_java_hashmap_order():
    log = Log()
    assert ConsumerGroup("x").preferred_assignor("uniform") == "uniform"  # nobody names one: the broker's
    join(log, 1, {"a": []}, assignor="range")
    log.add(b.new_consumer_group_member("g", "b", client_id="c", subscribed_topic_names=["t"],
                                        server_assignor="uniform"))
    # One each: HashMap iterates "uniform" (bucket 1) before "range" (bucket 9), and Stream.max keeps the first.
    assert (java_hash_bucket("uniform"), java_hash_bucket("range")) == (1, 9)
    assert log.group.preferred_assignor("x") == "uniform"
    log.add(b.new_consumer_group_member("g", "c", client_id="c", subscribed_topic_names=["t"],
                                        server_assignor="range"))
    assert log.group.preferred_assignor("x") == "range"  # two against one


def test_partition_counts_come_from_the_subscription_metadata_record():
    log = Log()
    log.add(b.new_consumer_group_member("g", "a", client_id="c", subscribed_topic_names=["t"]),
            b.new_consumer_group_partition_metadata("g", [(TID, "t", 6)]))
    assert log.group.partition_counts() == {"t": 6}


def test_state_round_trip():
    log = Log()
    join(log, 1, {"a": [0, 1]})
    reconcile(log, 1, 0, {"a": [0, 1]})
    assert ConsumerGroup.from_state(log.group.to_state()) == log.group
