"""A batch's heartbeats and records meet the model in time order.

After a broker outage the first batch can carry the heartbeat taken just before the broker stopped together with
the commits written after it came back. Applied records first, the model would see a commit 30 s past its clock
(Kafka away), then the older heartbeat (Kafka back, after 2 s), then the next one (a second outage): two outage
reports, the first of them 2 s long and naming the wrong groups."""

from __future__ import annotations

import pyarrow as pa

from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.job.step import ShardStep, StepConfig
from streaming.model import events as ev
from streaming.schema.heartbeat_format import encode_heartbeats
from streaming.schema.tables import SOURCE

SHARD = 3
T0 = 1_767_225_600_000
HB_TOPIC = "groupscope-heartbeat"


class _Source:
    """Source rows of one shard's partition and the heartbeat topic, with offsets counted per partition."""

    def __init__(self) -> None:
        self.offset = 0
        self.seq = 0

    def commit(self, ts: int, committed: int, partition: int = 0) -> dict:
        key, value = encode_record(new_offset_commit("g", "t", partition, committed, commit_timestamp=ts))
        self.offset += 1
        return {"key": key, "value": value, "topic": "__consumer_offsets", "partition": SHARD,
                "offset": self.offset - 1, "timestamp": ts * 1000}

    def heartbeat(self, ts: int) -> dict:
        (value,) = encode_heartbeats(ts, "test", self.seq, [("t", 0, 10_000, 10_000, 0),
                                                            ("__consumer_offsets", SHARD, self.offset, self.offset, 0)])
        self.seq += 1
        return {"key": None, "value": value, "topic": HB_TOPIC, "partition": 0, "offset": self.seq - 1,
                "timestamp": ts * 1000}


def _outages(step: ShardStep, batches: list[list[dict]]) -> list[ev.KafkaUnavailable]:
    found = []
    for rows in batches:
        tables, _ = step.process(pa.Table.from_pylist(rows, schema=SOURCE), wall_ms=T0)
        found += [r for r in (tables["group_events"].to_pylist() if "group_events" in tables else ())
                  if r["kind"] == "KafkaUnavailable"]
    return found


def test_the_heartbeat_before_an_outage_and_the_commits_after_it_in_one_batch_make_one_outage():
    src = _Source()
    before = [row for s in range(0, 12_000, 2_000) for row in (src.commit(T0 + s + 500, s), src.heartbeat(T0 + s))]
    # One batch: the last heartbeat before the broker stopped, then (30 s later) a commit and a heartbeat.
    across = [src.heartbeat(T0 + 12_000), src.commit(T0 + 42_000, 20_000), src.heartbeat(T0 + 43_000)]
    after = [row for s in range(45_000, 110_000, 2_000) for row in (src.commit(T0 + s + 500, s), src.heartbeat(T0 + s))]
    outages = _outages(ShardStep(SHARD, StepConfig()), [before, across, after])
    assert len(outages) == 1, outages
    assert outages[0]["event_time"].timestamp() * 1000 == T0 + 43_000 + 60_000  # reported when its window ended
    assert '"since_ms":%d' % (T0 + 12_000) in outages[0]["detail"].replace(" ", ""), outages[0]["detail"]
    assert '"back_ms":%d' % (T0 + 43_000) in outages[0]["detail"].replace(" ", ""), outages[0]["detail"]


def test_heartbeats_stay_in_order_when_records_are_not(monkeypatch):
    """A heartbeat goes before the first record stamped at or after it, even when a record's stamp runs back."""
    src = _Source()
    # Different partitions: a catch-up batch replays only the last commit of each partition.
    rows = [src.heartbeat(T0), src.commit(T0 + 1_000, 1, 0), src.commit(T0 + 3_000, 2, 1),
            src.commit(T0 + 2_500, 3, 2), src.heartbeat(T0 + 2_000), src.heartbeat(T0 + 4_000),
            src.commit(T0 + 5_000, 4, 3)]
    step = ShardStep(SHARD, StepConfig())
    seen: list[tuple[str, int]] = []
    shard = type(step.model)
    apply_heartbeat, replay_commit = shard.apply_heartbeat, shard.replay_offset_commit
    monkeypatch.setattr(shard, "apply_heartbeat",
                        lambda self, now, *a: (seen.append(("hb", now)), apply_heartbeat(self, now, *a))[1])
    monkeypatch.setattr(shard, "replay_offset_commit",
                        lambda self, *a: (seen.append(("rec", a[8])), replay_commit(self, *a))[1])
    step.process(pa.Table.from_pylist(rows, schema=SOURCE), wall_ms=T0)
    assert seen == [("hb", T0), ("rec", T0 + 1_000), ("hb", T0 + 2_000), ("rec", T0 + 3_000), ("rec", T0 + 2_500),
                    ("hb", T0 + 4_000), ("rec", T0 + 5_000)], seen
