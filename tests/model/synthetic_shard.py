"""A shard holding a share group, a streams group and a consumer group mid-rebalance, built by hand: the model the
version-1 fixture ``tests/data/state-v1/synthetic_share_streams.model.bin`` was written from. Shared by the tests
of the current state format and of the version-1 reader."""

from __future__ import annotations

from protocol import CoordinatorRecord
from protocol.codec import decode_record, encode_record
from streaming.model import events as ev
from streaming.model.consumer import ConsumerGroup, ConsumerMember
from streaming.model.rebalance import MemberView
from streaming.model.shard import GroupCoordinatorShard
from streaming.model.share import ShareGroup, ShareMember
from streaming.model.states import ConsumerGroupState, MemberLifecycle, ShareGroupState, StreamsGroupState
from streaming.model.streams import StreamsGroup, StreamsMember


def share_and_streams_shard() -> GroupCoordinatorShard:
    """The model ``synthetic_share_streams.model.bin`` was written from: a share group and a streams group with
    members, a consumer group mid-rebalance with a silent member, offsets with a pending transactional commit."""
    tid = bytes(range(16))
    s = GroupCoordinatorShard(3)
    sh = ShareGroup("sh", 4, 4, state=ShareGroupState.STABLE, rebalances=2, last_rebalance_ts=1_700_000_000_000)
    sh.members["s1"] = ShareMember("s1", MemberLifecycle.ACTIVE, None, "c1", "/h1", ("t",), 4, 3, 0, {tid: (0, 1)})
    sh.target["s1"] = {tid: (0, 1)}
    sh.subscription_metadata["t"] = (tid, 2)
    st = StreamsGroup("st", 2, 2, 1, state=StreamsGroupState.STABLE, rebalances=1,
                      last_rebalance_ts=1_700_000_001_000)
    st.members["x1"] = StreamsMember("x1", MemberLifecycle.ACTIVE, "inst", None, "app", "/h2", "proc", 1, 2, 1, 1,
                                     (("0", 0), ("0", 1)))
    st.target["x1"] = (("0", 0), ("0", 1))
    cg = ConsumerGroup("cg", 5, 4, 77, state=ConsumerGroupState.ASSIGNING, rebalances=3,
                       last_rebalance_ts=1_700_000_002_000)
    cg.members["m1"] = ConsumerMember("m1", MemberLifecycle.ACTIVE, None, "r", "cl", "/h3", ("t",), "", 300_000,
                                      "uniform", None, (), 4, 3, 0, {tid: (0,)}, {tid: (1,)}, 1_700_000_002_000,
                                      1_700_000_002_500)
    cg.regexes["t.*"] = ("t",)
    cg.epoch_views = {"m1": MemberView("m1", None, "cl", "/h3", frozenset({"t"}), None)}
    cg.epoch_target = {"m1": {tid: (0, 1)}}
    cg.epoch_partitions = {"t": 2}
    cg.epoch_ts, cg.pending_epoch = 1_700_000_001_500, (5, 4, 17, 1_700_000_002_000)
    cg.pending_views = dict(cg.epoch_views)
    cg.departed_static = ("inst-9", "m9")
    cg.departed_silent = {"m8": 1_700_000_001_800}
    cg.silence_due_ms = 1_700_000_022_500
    for g in (sh, st, cg):
        s.groups[g.group_id] = g
    s.replay_offset_commit(10, "cg", "t", 0, 42, 1, "meta", 1_700_000_002_100, 1_700_000_002_100)
    s.replay_offset_commit(11, "cg", "t", 1, 40, 1, "", 1_700_000_002_200, 1_700_000_002_200, producer_id=7,
                           transactional=True)
    s.apply_heartbeat(1_700_000_003_000, {("t", 0): (50, 50, 0), ("t", 1): (45, -1, 3)})
    s.topic_names[tid] = "t"
    return s


class ShardLog:
    """A shard fed records one offset at a time, each stamped ``t0`` plus its offset and passed through the codec
    (so what the shard replays is what Kafka's bytes decode to); ``group_id`` names the group ``group`` returns."""

    def __init__(self, group_id: str, *, t0: int, topic_names: dict[bytes, str] | None = None) -> None:
        self.shard = GroupCoordinatorShard(0)
        self.shard.topic_names.update(topic_names or {})
        self.group_id, self.t0, self.offset = group_id, t0, 0

    def add(self, *records: CoordinatorRecord) -> list[ev.Event]:
        for rec in records:
            self.shard.replay(self.offset, self.t0 + self.offset, decode_record(*encode_record(rec)))
            self.offset += 1
        return self.shard.drain_events()

    @property
    def group(self):
        return self.shard.groups[self.group_id]
