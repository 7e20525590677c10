"""One micro-batch of one coordinator shard: raw ``__consumer_offsets`` and heartbeat rows in, output tables out.

This is everything the Spark stateful step does, as plain Python over Arrow (no Spark), so it is tested on its own
and the Spark glue stays a few lines. For one shard (one ``__consumer_offsets`` partition) and one batch it:

1. decodes the shard's records with the vectorized codec; undecodable ones go to ``quarantine`` with the reason;
2. emits every offset commit to ``commits`` (vectorized, straight from the decoded columns);
3. replays the records into the group model in offset order. Offset commits are first reduced to the last record
   per (group, topic, partition) of the batch: for read_committed input the newest record wins anyway, and a
   catch-up batch of millions of commits then costs one model update per partition;
4. applies the heartbeats (end offsets at the emitter's clock);
5. emits events, a ``groups`` row for every group the batch touched, and on a timer every group of the shard (and
   its partitions to ``lag``), so lag that moves with the end offsets reaches the sinks without a commit. With
   per-partition metrics on, the partitions of every group it re-evaluated go to ``partitions`` (metrics only).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from protocol.arrow import decode_arrow
from protocol.codec import decode_record
from protocol.errors import CodecError
from protocol import Uuid

from streaming.schema.heartbeat_format import Heartbeat, HeartbeatError, decode_heartbeat
from streaming.job.lagging import LAGGING, lagging_table
from streaming.model import events as ev
from streaming.model import state_format
from streaming.model.lag import EndOffsetSample
from streaming.model.shard import GroupCoordinatorShard
# declared beside the model, where the configuration loader reads it without importing the step
from streaming.model.step_config import StepConfig
from streaming.schema.tables import COMMITS, GROUP_EVENTS, GROUPS, LAG, QUARANTINE, SOURCE, TS, event_row, group_row, partition_rows

__all__ = ["StepConfig", "StepHealth", "ShardStep", "SOURCE_SCHEMA", "METRICS_PARTITIONS"]

SOURCE_SCHEMA = SOURCE  # the rows a step takes: what the Kafka source delivers
# Output of partition rows (``LAG`` schema) meant for the metrics only, not the Delta ``lag`` table.
METRICS_PARTITIONS = "partitions"


@dataclass(frozen=True, slots=True)
class StepHealth:
    """What the shard reports about itself each batch (for the monitor's own metrics)."""

    shard: int
    records: int
    decode_errors: int
    unknown_records: int
    heartbeats: int
    last_offset: int  # last __consumer_offsets offset consumed, a quiet tail after it included (-1: none yet)
    offsets_high_watermark: int  # of this __consumer_offsets partition, from the newest heartbeat (-1: unknown)
    offsets_last_stable: int
    heartbeat_ms: int
    caught_up: bool
    groups: int
    step_seconds: float
    state_bytes: int = 0  # the shard's serialized state after this batch (filled in by the stateful operator)
    kafka_outages: int = 0  # Kafka outages this shard has reported (KafkaUnavailable), since the state began
    full_snapshot: bool = True  # every group of the shard was in this batch's ``groups`` rows (False: only those
    # it touched; a restarted endpoint is ready once every shard has sent a full one)


@dataclass(slots=True)
class _Meta:
    last_full_ms: int = -1
    last_lag_ms: int = -1
    offsets_hw: int = -1
    offsets_lso: int = -1
    last_offset: int = -1  # last __consumer_offsets offset consumed, applied or quarantined
    previous_lso: int = -1  # the stable end the heartbeat before the newest one carried
    last_caught_up_ms: int = -1  # model time of the last batch that was caught up (-1: never)
    # The newest heartbeat's quiet tail of this partition: from ``quiet_from`` up to ``quiet_end`` nothing is
    # delivered to a read_committed reader (transaction markers, aborted records); -1: none known
    quiet_from: int = -1
    quiet_end: int = -1

    @property
    def position(self) -> int:
        """The next offset the job would read: after the last record consumed, or past the quiet tail once that
        record reached it. Why: a partition whose log ends in a transaction marker (every transactional offset
        commit writes one) never delivers that offset, so the last record stays one or more offsets below the LSO
        for as long as nothing else is written, and the shard would never be caught up."""
        position = self.last_offset + 1
        if 0 <= self.quiet_from <= position:
            position = max(position, self.quiet_end)
        return position

    @property
    def stable_end(self) -> int:
        """The newest heartbeat's LSO, or its high watermark where no LSO is known (-1: no heartbeat yet)."""
        return self.offsets_lso if self.offsets_lso >= 0 else self.offsets_hw


class ShardStep:
    """Holds one shard's model for the duration of a batch; :meth:`state` is what Spark stores for the key."""

    def __init__(self, shard: int, config: StepConfig = StepConfig(), state: bytes | None = None) -> None:
        self.shard = shard
        self.config = config
        if state:
            doc = state_format.decode(state)
            if doc.v1_step is not None:
                self.meta = _Meta(*doc.v1_step)  # version 1 kept the fields in this order
            elif doc.step is not None:
                self.meta = state_format.build(_Meta, doc.step)
            else:
                raise state_format.StateFormatError("not a groupscope step state (a model without its step)")
            self.model = GroupCoordinatorShard.from_document(doc, config.model)
        else:
            self.meta = _Meta()
            self.model = GroupCoordinatorShard(shard, config.model)

    def state(self) -> bytes:
        """The model and this step's bookkeeping, as one blob of the model's state format (pickled and compressed
        once: :mod:`streaming.model.state_format`)."""
        return state_format.encode(self.model.to_state(), asdict(self.meta))

    # ------------------------------------------------------------------------------------------------------------

    def process(self, rows: pa.Table, wall_ms: int | None = None) -> tuple[dict[str, pa.Table], StepHealth]:
        """Applies one batch of source rows (``SOURCE_SCHEMA``) of this shard; returns output tables and health."""
        started = time.perf_counter()
        wall = int(time.time() * 1000) if wall_ms is None else wall_ms
        # Times inside the model are epoch milliseconds, whatever the source's timestamp unit.
        ts_index = rows.schema.get_field_index("timestamp")
        rows = rows.set_column(ts_index, "timestamp", pc.cast(rows.column("timestamp"), TS, safe=False))
        topics = rows.column("topic")
        is_hb = pc.equal(topics, self.config.heartbeat_topic).fill_null(False)
        mine = pc.and_(pc.invert(is_hb), pc.equal(rows.column("partition"), self.shard))
        # Filtering copies every column; a catch-up batch is nearly all this shard's records.
        records = rows if pc.all(mine).as_py() else rows.filter(mine)
        heartbeats = rows.filter(is_hb) if pc.any(is_hb).as_py() else rows.slice(0, 0)

        touched: set[str] = set()
        errors = unknown = 0
        commits = quarantine = None
        beats = self._decode_heartbeats(heartbeats)
        if records.num_rows:
            records = records.sort_by("offset")
            self.meta.last_offset = max(self.meta.last_offset, records.column("offset")[-1].as_py())
            commits, quarantine, touched, errors, unknown = self._apply_records(records, wall, beats)
        else:
            for hb in beats:
                self._apply_heartbeat(hb)
        hb_count = len(beats)

        now = self.model.now_ms if self.model.now_ms >= 0 else wall
        caught_up = self._caught_up(now)
        events = self.model.drain_events()
        tables: dict[str, pa.Table] = {}
        if commits is not None and commits.num_rows:
            tables["commits"] = commits
        if quarantine is not None and quarantine.num_rows:
            tables["quarantine"] = quarantine

        deleted = {e.group_id for e in events if isinstance(e, ev.GroupDeleted)}
        full = self.meta.last_full_ms < 0 or now - self.meta.last_full_ms >= self.config.snapshot_interval_ms
        lag_due = self.meta.last_lag_ms < 0 or now - self.meta.last_lag_ms >= self.config.lag_interval_ms
        if full:
            snapshots = list(self.model.evaluate(now, caught_up).groups)
            # Shards re-evaluate all their groups at staggered times (a fixed phase per shard), so one batch never
            # carries every shard's full refresh at once.
            interval = self.config.snapshot_interval_ms
            phase = (self.shard * 7919) % interval if interval > 0 else 0
            self.meta.last_full_ms = now - (now + phase) % interval if interval > 0 else now
        else:
            snapshots = self.model.evaluate_groups(touched | deleted, now, caught_up)
        events.extend(self.model.drain_events())  # the status changes evaluating recorded
        if events:
            tables["group_events"] = pa.Table.from_pylist([event_row(e, shard=self.shard) for e in events],
                                                          schema=GROUP_EVENTS)
        known = {s.group_id for s in snapshots}
        group_rows = [group_row(s, shard=self.shard, now_ms=now) for s in snapshots]
        group_rows += [_deleted_row(gid, self.shard, now) for gid in sorted(deleted - known)]
        if group_rows:
            tables["groups"] = pa.Table.from_pylist(group_rows, schema=GROUPS)
        if full and caught_up:  # the lagging offsets whose time lag the emitter measures (streaming.job.lagging)
            lagging = lagging_table(self.shard, snapshots)
            if lagging.num_rows:
                tables[LAGGING] = lagging
        if full and lag_due:
            lag_rows = [r for s in snapshots for r in partition_rows(s, shard=self.shard, now_ms=now)]
            self.meta.last_lag_ms = now
            if lag_rows:
                tables["lag"] = pa.Table.from_pylist(lag_rows, schema=LAG)
        elif self.config.partition_rows_every_snapshot and snapshots:
            # Per-partition metrics as fresh as the group ones: every group this batch re-evaluated (the groups it
            # touched, or all of them at a full snapshot) with all its partitions, so a commit shows in the
            # per-partition series in the batch that applies it. For the metrics only (``partitions``): the Delta
            # ``lag`` table keeps its own interval instead of a row per partition per commit.
            part_rows = [r for s in snapshots for r in partition_rows(s, shard=self.shard, now_ms=now)]
            if part_rows:
                tables[METRICS_PARTITIONS] = pa.Table.from_pylist(part_rows, schema=LAG)
        health = StepHealth(
            shard=self.shard,
            records=records.num_rows,
            decode_errors=errors,
            unknown_records=unknown,
            heartbeats=hb_count,
            last_offset=self.meta.position - 1,
            offsets_high_watermark=self.meta.offsets_hw,
            offsets_last_stable=self.meta.offsets_lso,
            heartbeat_ms=self.model.now_ms,
            caught_up=caught_up,
            groups=len(self.model.group_ids()),
            step_seconds=time.perf_counter() - started,
            full_snapshot=full,
            kafka_outages=self.model.availability.outages,
        )
        return tables, health

    # ------------------------------------------------------------------------------------------------------------

    def _caught_up(self, now_ms: int) -> bool:
        """Caught up when the last applied offset reached this partition's last stable offset (a read_committed
        reader cannot pass the LSO) as of the heartbeat before the newest one; with a single heartbeat so far, as of
        that one. Without a heartbeat nothing is known: not yet.

        Why not the newest: the heartbeat emitter and the source's batch planning run independently, so a batch can
        carry a heartbeat whose LSO was read after the batch's offset range was planned. Against the newest LSO a
        job that is live on a busy cluster would look behind every few batches, and every status and alert gated on
        being caught up would flap. Against the previous one, caught up means "everything written up to one
        heartbeat interval ago is applied", which replaying history never is.

        Even so, on a loaded job a batch can bring two heartbeats newer than its records; a shard that was caught
        up within ``caught_up_grace_ms`` therefore stays caught up (see ``StepConfig``).
        """
        m = self.meta
        lso = m.stable_end
        if lso < 0:
            return False
        if m.previous_lso >= 0:
            lso = min(lso, m.previous_lso)
        if m.position + self.config.caught_up_slack >= lso:
            m.last_caught_up_ms = max(m.last_caught_up_ms, now_ms)
            return True
        return m.last_caught_up_ms >= 0 and now_ms - m.last_caught_up_ms <= self.config.caught_up_grace_ms

    @staticmethod
    def _decode_heartbeats(heartbeats: pa.Table) -> list[Heartbeat]:
        """The batch's heartbeats, oldest first."""
        decoded = []
        for value in heartbeats.column("value").to_pylist() if heartbeats.num_rows else ():
            try:
                decoded.append(decode_heartbeat(value))
            except HeartbeatError:
                continue  # not ours: a heartbeat topic shared with something else is not an error of the data
        decoded.sort(key=lambda hb: hb.timestamp_ms)
        return decoded

    def _apply_heartbeat(self, hb: Heartbeat) -> None:
        offsets_topic = self.config.offsets_topic
        self._learn_topic_ids(hb.topic_ids)
        samples = {}
        quiet = {(t, p): (end, q) for t, p, end, q in hb.quiet} if hb.quiet else None
        oldest: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        for o in hb.oldest:
            oldest.setdefault((o.topic, o.partition), []).append((o.from_offset, o.offset, o.timestamp_ms))
        for topic, partition, hw, lso, lw in hb.ends:
            if topic == offsets_topic:
                if partition == self.shard:
                    m = self.meta
                    if m.stable_end >= 0:
                        m.previous_lso = m.stable_end
                    m.offsets_hw, m.offsets_lso = hw, lso
                    m.quiet_end, m.quiet_from = (quiet or {}).get((topic, partition), (-1, -1))
                continue
            tail = quiet.get((topic, partition)) if quiet else None
            samples[(topic, partition)] = EndOffsetSample(
                hw, lso, lw, hb.timestamp_ms, quiet_from=tail[1] if tail and tail[0] == hw else -1,
                oldest=tuple(oldest.get((topic, partition), ())))
        self.model.apply_heartbeat(hb.timestamp_ms, samples)

    def _learn_topic_ids(self, pairs: tuple[tuple[str, str], ...]) -> None:
        """Topic names of the ids the heartbeat announces (``streaming.kafka.topic_ids``): what lets a Kafka 4.1+
        consumer-protocol group's assignment name a topic it never committed to. The broker's metadata is current,
        so it overrides a name learnt from an older record (a topic deleted and created again)."""
        names = self.model.topic_names
        for topic, text in pairs:
            try:
                names[Uuid.parse(text)] = topic
            except ValueError:
                continue  # not a topic id: one bad pair leaves the others alone

    def _apply_records(self, records: pa.Table, wall: int, beats: list[Heartbeat]):
        decoded = decode_arrow(records.column("key"), records.column("value"))
        error = decoded.column("decode_error")
        ok = pc.is_null(error)
        errors = len(error) - error.null_count
        unknown_mask = decoded.column("is_unknown").to_numpy(zero_copy_only=False)
        record_type = decoded.column("record_type").to_numpy(zero_copy_only=False)
        ok_np = ok.to_numpy(zero_copy_only=False)
        is_offset = ok_np & ~unknown_mask & np.isin(np.nan_to_num(record_type.astype(float), nan=-1), (0, 1))

        quarantine = None
        if errors:
            bad = pc.invert(ok)
            src = records.filter(bad)
            qd = decoded.filter(bad)
            n = src.num_rows
            quarantine = pa.Table.from_arrays(
                [src.column("topic"), src.column("partition"), src.column("offset"), src.column("timestamp"),
                 src.column("key"), src.column("value"), qd.column("decode_error"), qd.column("record_type"),
                 qd.column("value_version"), pa.array(np.full(n, wall, np.int64)).cast(pa.timestamp("ms", "UTC")),
                 pa.array(np.full(n, wall, np.int64)).cast(pa.timestamp("ms", "UTC")).cast(pa.date32())],
                schema=QUARANTINE)

        commits = None
        offsets_col = records.column("offset").to_numpy()
        if is_offset.any():
            if is_offset.all():  # the common case: nothing to filter out (filtering copies every string column)
                src, d = records, decoded
            else:
                mask = pa.array(is_offset)
                src, d = records.filter(mask), decoded.filter(mask)
            ts = src.column("timestamp")
            commits = pa.Table.from_arrays(
                [pa.array(np.full(src.num_rows, self.shard, np.int32)), src.column("offset"), ts,
                 d.column("group_id"), d.column("topic"), d.column("partition"), d.column("committed_offset"),
                 d.column("leader_epoch"), d.column("metadata"),
                 pc.cast(d.column("commit_timestamp"), pa.timestamp("ms", "UTC")),
                 pc.cast(pc.if_else(pc.less(d.column("expire_timestamp"), 0), None, d.column("expire_timestamp")),
                         pa.timestamp("ms", "UTC")),
                 d.column("is_tombstone"), d.column("value_version"), pc.cast(ts, pa.date32())],
                schema=COMMITS)

        # Replay order: the last record per offset key (commit or tombstone), and every other record, by offset.
        touched: set[str] = set()
        model = self.model
        ts_ms = records.column("timestamp").cast(pa.int64()).to_numpy()
        positions = np.flatnonzero(ok_np)
        tombstone = decoded.column("is_tombstone").to_numpy(zero_copy_only=False)
        if is_offset.any():
            offset_pos = np.flatnonzero(is_offset)
            offset_keys = records.column("key")
            if len(offset_pos) < records.num_rows:
                offset_keys = offset_keys.take(pa.array(offset_pos))
            key_idx = pc.dictionary_encode(offset_keys).combine_chunks()
            idx = key_idx.indices.to_numpy()
            _, last_rev = np.unique(idx[::-1], return_index=True)
            keep = offset_pos[len(idx) - 1 - last_rev]
            # A key whose last record is a tombstone keeps its last commit too: the model must hold the offset
            # before the tombstone removes it, or no OffsetDeleted is emitted (a live run reading the two records in
            # different batches would emit one).
            if tombstone[keep].any():
                live = np.flatnonzero(~tombstone[offset_pos])
                if len(live):
                    _, live_rev = np.unique(idx[live][::-1], return_index=True)
                    keep = np.union1d(keep, offset_pos[live[len(live) - 1 - live_rev]])
            positions = np.union1d(np.flatnonzero(ok_np & ~is_offset), keep)
        # Only the replayed rows become Python values (a catch-up batch replays one row in ~40).
        keys = records.column("key")
        values = records.column("value")
        replayed = decoded.select(["group_id", "topic", "partition", "committed_offset", "leader_epoch", "metadata",
                                   "commit_timestamp", "topic_id"]).take(pa.array(positions, pa.int64()))
        group, topic, partition, committed, epoch, metadata, commit_ts, topic_id = (
            c.to_pylist() for c in replayed.columns)
        is_commit = (is_offset & ~tombstone)[positions].tolist()
        offsets = offsets_col[positions].tolist()
        stamps = ts_ms[positions].tolist()
        # The batch's heartbeats go between the records in time order: heartbeat k before the first record stamped
        # at or after it. Applied after all the records instead, a heartbeat taken just before a broker outage would
        # follow the first commits after it, and the model would see the outage end before it began.
        if beats and len(positions):
            cuts = np.searchsorted(np.maximum.accumulate(ts_ms[positions]),
                                   np.array([hb.timestamp_ms for hb in beats], np.int64), side="left").tolist()
        else:
            cuts = [len(positions)] * len(beats)
        cuts.append(len(positions) + 1)  # a sentinel: no heartbeat is due within the records
        next_beat, due = 0, cuts[0]
        for j, i in enumerate(positions.tolist()):
            while j == due:
                self._apply_heartbeat(beats[next_beat])
                next_beat += 1
                due = cuts[next_beat]
            if is_commit[j]:
                if topic_id[j] is not None:  # a v4 commit (Kafka 4.1+) names the id KIP-848 assignments use
                    model.topic_names.setdefault(Uuid.parse(topic_id[j]), topic[j])
                model.replay_offset_commit(offsets[j], group[j], topic[j], partition[j], committed[j], epoch[j],
                                           metadata[j], commit_ts[j], stamps[j])
                touched.add(group[j])
                continue
            try:
                record = decode_record(keys[i].as_py(), values[i].as_py())
            except CodecError:
                continue  # already quarantined by the vectorized decode
            model.replay(offsets[j], stamps[j], record)
            record_group = getattr(record, "group_id", None)
            if record_group:
                touched.add(record_group)
        for hb in beats[next_beat:]:
            self._apply_heartbeat(hb)
        unknown = int(unknown_mask.sum())
        return commits, quarantine, touched, errors, unknown


def _deleted_row(group_id: str, shard: int, now: int) -> dict[str, Any]:
    row = dict.fromkeys(GROUPS.names)
    row.update(group_id=group_id, shard=shard, state="DEAD", deleted=True, updated_time=now, member_count=0,
               partition_count=0, members=[], topics=[])
    return row
