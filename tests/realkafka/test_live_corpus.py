"""Shapes of the corpus played live: real clients on a real broker while ``groupscope run`` watches, and every label
the client log gives met by the job's own ``group_events`` table.

The corpus (``tests/data/corpus.tar.zst``) holds these shapes as recordings, and ``tests/verdicts/test_corpus.py``
holds their replay to the labels. This test plays three of them again, live, the ones no shared recording shows:
members thrown out by the poll interval (a storm, never a rolling restart), static members back within the session
timeout (replaced without a rebalance) and a group growing one member at a time (a scale-out, not a formation).
They play at once, on one broker, each under its own names (``corpus.play``), each recorded by ``groupscope
record`` as the corpus was; the job runs from before the first client acts to after the last stops. Labels come
from ``client_events.jsonl`` alone (``corpus_shapes``), as for the corpus. Each shape is checked twice: the job's
table and the replay of the recording made beside it.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable

from streaming.offline.recording import load_recording, replay_recording
from streaming.offline.recording.replay import timeline_from_events
from tests.realkafka.broker import KafkaBroker
from tests.realkafka.clients import wait_until
from tests.realkafka.corpus import BROKER_SETTINGS, play
from tests.realkafka.test_kill_job import free_port, kill_tree, start_job
from tests.spark.harness import HEARTBEAT
from tests.verdicts.labels import check_labels

SHAPES = ("maxpoll_evictions", "static_members", "scale_out")
SETTLE_S = 8.0  # after the last shape ends: a few heartbeats and batches for the job to apply what it wrote


def test_shapes_no_shared_recording_shows_meet_their_labels_live(newest_kafka_install, tmp_path):
    broker = KafkaBroker(newest_kafka_install, tmp_path / "kafka", settings=BROKER_SETTINGS)
    broker.start()
    job = None
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        for f in admin.create_topics([NewTopic(HEARTBEAT, 1, 1)]).values():
            f.result(30)
        # Kafka creates __consumer_offsets with the first group: one commit, so the job reads it from its start.
        warmup = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "warmup", "log_level": 3})

        def committed() -> bool:
            try:  # NOT_COORDINATOR until the new topic's partitions are loaded
                warmup.commit(offsets=[TopicPartition(HEARTBEAT, 0, 0)], asynchronous=False)
                return True
            except KafkaException:
                return False

        wait_until(committed, 60, "a first group commit")
        warmup.close()
        port = free_port()
        delta = tmp_path / "delta"
        config = tmp_path / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "corpus-live",
            "kafka": {"bootstrap.servers": broker.bootstrap},
            "spark": {"checkpoint": str(tmp_path / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
            "delta": {"path": str(delta)},
            "metrics": {"host": "127.0.0.1", "port": port},
            "heartbeat": {"interval_seconds": 1.0},  # the recorder samples log ends every second too
            "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 2.0},
        }))
        job_log = tmp_path / "job.log"
        job = start_job(config, job_log)

        def ready() -> bool:
            import urllib.request
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as resp:
                    return resp.status == 200
            except OSError:
                return False

        wait_until(ready, 180, "the job's first /ready 200",
                   lambda: f"; job log ends:\n{job_log.read_text(errors='replace')[-3000:]}")

        out = tmp_path / "shapes"
        failures: list[str] = []

        def lane(shape: str) -> None:
            try:
                play(broker, shape, out)
            except Exception as exc:  # noqa: BLE001 - reported with the shape's name below
                failures.append(f"{shape}: {type(exc).__name__}: {exc}")

        lanes = [threading.Thread(target=lane, args=(s,)) for s in SHAPES]
        for t in lanes:
            t.start()
        for t in lanes:
            t.join(600)
        assert not failures, failures
        time.sleep(SETTLE_S)
    finally:
        if job is not None and job.poll() is None:
            job.send_signal(signal.SIGTERM)
            try:
                job.wait(90)
            except Exception:  # noqa: BLE001 - it did not stop in time: its whole process group goes
                kill_tree(job)
        broker.stop()

    rows = DeltaTable(str(delta / "group_events")).to_pyarrow_table().to_pylist()
    live = timeline_from_events(rows)
    report: list[str] = []
    for shape in SHAPES:
        folder = out / shape
        labels = json.loads((folder / "labels.json").read_text())
        assert labels["labels"], f"{shape}: the client log gave no labels"
        for source, timeline in (("live", live), ("replay", replay_recording(load_recording(folder)))):
            for result in check_labels(timeline, labels):
                if not result.ok:
                    report.append(f"{shape} ({source}): {result.describe(labels['t0_ms'])}")
    assert not report, "labels not met:\n" + "\n".join(report)
