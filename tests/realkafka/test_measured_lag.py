"""Measured time lag on a real broker: the job's ``lag_seconds`` against the truth the test knows.

The test writes the records itself, with timestamps it chooses (the last ten minutes, before the job starts, so the
job's end-offset history cannot know them), and commits a group behind them:

* partition 0: plain records, the group committed at offset 20: the oldest record it has not processed is the
  record at 20;
* partition 1: a committed transaction (offsets 0-4, marker 5), an aborted one (6-10, marker 11) and a committed one
  (12-16, marker 17), the group committed at 6: a ``read_committed`` consumer gets 12 next, so the truth is the
  timestamp of 12, not of the aborted record at 6.

The real job (heartbeat emitter, local Spark, Delta tables) runs until its ``lag`` table says ``measured`` for
both partitions; that figure must be within 1 s of ``snapshot_time − the record's timestamp``, and the ``groups``
table must say the group's largest time lag is measured too. The interpolated
figures the job wrote before measuring are printed beside it with their error: they can only say "at least since
the first heartbeat". 10-15 s per broker version, most of it Spark's start.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from streaming.driver.runner import GroupscopeJob
from streaming.schema.read_model import epoch_ms
from streaming.sinks.delta import DeltaSink
from tests.realkafka.clients import wait_until
from tests.spark.harness import job_settings

MINUTE = 60_000
_COORDINATOR_NOT_READY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                          KafkaError.COORDINATOR_NOT_AVAILABLE}


def _write(bootstrap: str, topic: str, now_ms: int) -> dict[int, int]:
    """The records of both partitions; returns the timestamp of the oldest unprocessed record per partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "linger.ms": 5})
    stamps = [now_ms - 10 * MINUTE + i * 10_000 for i in range(60)]  # one every 10 s
    for i, ts in enumerate(stamps):
        plain.produce(topic, value=b"%d" % i, partition=0, timestamp=ts)
    assert plain.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "log_level": 3, "transactional.id": f"{topic}-tx"})
    txn.init_transactions(30)
    third = []
    for n, (commit, base) in enumerate([(True, 9 * MINUTE), (False, 8 * MINUTE), (True, 7 * MINUTE)]):
        txn.begin_transaction()
        for i in range(5):
            ts = now_ms - base + i * 1_000
            txn.produce(topic, value=b"t%d-%d" % (n, i), partition=1, timestamp=ts)
            if n == 2:
                third.append(ts)
        assert txn.flush(30) == 0  # an abort drops what is still queued: the aborted records must be in the log
        (txn.commit_transaction if commit else txn.abort_transaction)(30)
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-ends", "log_level": 3})
    try:
        wait_until(lambda: reader.get_watermark_offsets(TopicPartition(topic, 1), 10, cached=False) == (0, 18), 10,
                   "partition 1 to end at 18 (three transactions of five records and their markers)")
    finally:
        reader.close()
    return {0: stamps[20], 1: third[0]}


def _commit(bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    """Commits ``offsets`` for ``group`` (a group that never joins), retrying while a fresh broker's coordinator
    loads."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3,
                       "enable.auto.commit": False})
    try:
        def committed() -> bool:
            try:
                reader.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:  # a fresh broker's coordinator is still loading: retriable
                if exc.args[0].code() not in _COORDINATOR_NOT_READY:
                    raise
                return False
            return True

        wait_until(committed, 30, "the group's commit")
    finally:
        reader.close()


def test_the_jobs_measured_time_lag_is_within_a_second_of_the_truth(kafka, tmp_path):
    prefix = f"mlag{kafka.version.replace('.', '')}"
    topic, group = f"{prefix}-orders", f"{prefix}-behind"
    truth = _write(kafka.bootstrap, topic, int(time.time() * 1000))
    # Another group's commit first: a fresh broker has no __consumer_offsets until one, and the job waits for it.
    _commit(kafka.bootstrap, f"{prefix}-other", [TopicPartition(topic, 0, 60)])

    # From the end of __consumer_offsets: the shared broker's history is not this test's, and the group commits once
    # the job runs.
    # Lag rows at every full refresh: the one that first lists the group as lagging writes its interpolated figure
    # before any measurement can exist, so there is always one to compare with.
    settings = job_settings(kafka.bootstrap, tmp_path, metrics={"enabled": False},
                            heartbeat={"include_topics": f"^{prefix}-"}, source={"starting_offsets": "latest"},
                            model={"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 0.5})
    delta = DeltaSink(settings.delta.path, app_id=f"groupscope-{settings.cluster}")
    job = GroupscopeJob(settings, install_signal_handlers=False)
    rows: list[dict] = []

    def measured() -> bool:
        nonlocal rows
        try:
            lag = delta.read("lag")
        except Exception:  # noqa: BLE001 - not written yet
            return False
        rows = [r for r in lag.to_pylist() if r["group_id"] == group]
        return {r["partition"] for r in rows if r["lag_seconds_method"] == "measured"} == {0, 1}

    def so_far() -> list[tuple]:
        return [(r["partition"], r["lag_seconds"], r["lag_seconds_method"]) for r in rows]

    job.start()
    try:
        wait_until(lambda: job.status.batches, 60, "the job's first batch",
                   lambda: f"; last error {job.status.last_error!r}")
        _commit(kafka.bootstrap, group, [TopicPartition(topic, 0, 20), TopicPartition(topic, 1, 6)])
        wait_until(measured, 120, "the job's lag table to say measured for both partitions",
                   lambda: f"; rows so far: {so_far()}; last error {job.status.last_error!r}")
        (summary,) = [g for g in delta.read("groups").to_pylist() if g["group_id"] == group]
    finally:
        job.request_stop()
        job.stop()
    assert summary["max_lag_seconds_method"] == "measured", summary

    print()
    for partition in (0, 1):
        def error(r: dict) -> float:
            return r["lag_seconds"] - (epoch_ms(r["snapshot_time"]) - truth[partition]) / 1000

        mine = sorted((r for r in rows if r["partition"] == partition), key=lambda r: epoch_ms(r["snapshot_time"]))
        first = next(r for r in mine if r["lag_seconds_method"] == "measured")
        before = [r for r in mine if r["lag_seconds_method"] == "interpolated"]
        print(f"Kafka {kafka.version} {topic}-{partition}: measured {first['lag_seconds']:.1f} s, error "
              f"{error(first):+.3f} s; interpolated before it: "
              + (", ".join(f"{r['lag_seconds']:.1f} s (error {error(r):+.1f} s"
                           f"{', a lower bound' if r['lag_seconds_lower_bound'] else ''})" for r in before[-2:])
                 or "none"))
        assert abs(error(first)) <= 1.0, first
        assert all(abs(error(r)) <= 1.0 for r in mine if r["lag_seconds_method"] == "measured"), mine
        assert first["lag_seconds_lower_bound"] is False
    assert any(r["lag_seconds_method"] == "interpolated" for r in rows), "nothing to compare the measured figure with"
