"""``groupscope run`` deployed beside a brand-new cluster: ``__consumer_offsets`` does not exist until the first
consumer group commits. The job must wait for it (saying so once), not exit and crash-loop, and become ready once
it appears."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer

from protocol import partition_for
from protocol.builders import new_offset_commit
from protocol.codec import encode_record
from streaming.kafka.mock_cluster import MockCluster
from streaming.sinks.delta import DeltaSink

from tests.cli_helpers import stop_job

from .harness import HEARTBEAT, OFFSETS

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def _ready(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_job_waits_for_consumer_offsets_and_becomes_ready_when_it_appears(tmp_path):
    with MockCluster(1) as mc:
        mc.create_topic(HEARTBEAT, 1)
        mc.create_topic("events", 1)
        config = tmp_path / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "cluster": "fresh",
            "kafka": {"bootstrap.servers": mc.bootstrap_servers},
            "spark": {"checkpoint": str(tmp_path / "cp"), "trigger_seconds": 0.5, "shuffle_partitions": 2},
            # Maintenance from the job itself, every few batches (tests/sinks/test_delta_maintenance.py has the rest).
            "delta": {"path": str(tmp_path / "delta"),
                      "maintenance": {"every_batches": 5, "vacuum_retention_hours": 0, "log_retention_hours": 0}},
            "metrics": {"port": 0, "host": "127.0.0.1"},
            "heartbeat": {"interval_seconds": 1.0},
            "model": {"snapshot_interval_seconds": 1.0, "lag_interval_seconds": 1.0},
        }))
        log = tmp_path / "job.log"
        job = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "run", "--config", str(config)], cwd=REPO,
                               stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            time.sleep(12)  # several polls of the metadata
            text = log.read_text()
            assert job.poll() is None, f"the job exited instead of waiting: {text[-2000:]}"
            waiting = [line for line in text.splitlines() if "waiting for it" in line]
            assert len(waiting) == 1, text
            assert f"topic {OFFSETS} does not exist yet at {mc.bootstrap_servers}" in waiting[0]
            assert "Traceback" not in text and "not found" not in text

            # The first group commits: Kafka creates the topic, the job goes on.
            mc.create_topic(OFFSETS, 50)
            key, value = encode_record(new_offset_commit("first", "events", 0, 7,
                                                         commit_timestamp=1_767_225_600_000))
            p = Producer({"bootstrap.servers": mc.bootstrap_servers, "log_level": 3})
            p.produce(OFFSETS, key=key, value=value, partition=partition_for("first", 50))
            p.flush(30)

            deadline = time.time() + 180
            port = None
            while time.time() < deadline and port is None:
                found = re.search(r"running; metrics on :(\d+)", log.read_text())
                port = int(found.group(1)) if found else None
                time.sleep(0.5)
            assert port, f"the job did not start after the topic appeared: {log.read_text()[-2000:]}"
            delta = DeltaSink(tmp_path / "delta", app_id="groupscope-fresh")
            status = (0, "")
            while time.time() < deadline:
                status = _ready(port)
                if status[0] == 200 and delta.read("commits").num_rows:
                    break
                time.sleep(1)
            assert status[0] == 200, status
            assert delta.read("commits").column("committed_offset").to_pylist() == [7]
            while time.time() < deadline and "delta maintenance: commits:" not in log.read_text():
                time.sleep(1)
            assert "delta maintenance: commits: " in log.read_text(), log.read_text()[-2000:]
            assert "maintenance failed" not in log.read_text()
            assert delta.read("commits").column("committed_offset").to_pylist() == [7]
            assert delta.written_version("commits") is not None
            assert len([line for line in log.read_text().splitlines() if "waiting for it" in line]) == 1
        finally:
            stop_job(job)
