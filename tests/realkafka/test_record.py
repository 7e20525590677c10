"""``groupscope record`` against a real broker, with real consumers, then ``groupscope replay`` on what it wrote.

Why: the capture is only useful if what it writes replays into the verdicts the clients earned. Two watched groups
(one member consuming and committing throughout; one whose only member leaves while production goes on) and one
group outside the ``--group`` pattern; the recorder is ended with SIGINT, as Ctrl-C ends it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cli_helpers import REPO, run_cli


def _consume(bootstrap: str, group: str, topic: str, stop: threading.Event) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "auto.commit.interval.ms": 1000, "session.timeout.ms": 6000, "log_level": 3})
    consumer.subscribe([topic])
    while not stop.is_set():
        consumer.poll(0.2)
    consumer.close()


def test_a_recording_of_real_consumers_replays_into_their_verdicts(kafka, tmp_path):
    prefix = f"rec{kafka.version.replace('.', '')}"
    topic = f"{prefix}-orders"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for f in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        f.result(30)
    out = tmp_path / "recording"
    recorder = subprocess.Popen([sys.executable, "-m", "streaming.commands.cli", "record", "--bootstrap",
                                 kafka.bootstrap, "--group", f"{prefix}-(steady|gone)", str(out)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 10, "log_level": 3})
    stops = {g: threading.Event() for g in ("steady", "gone", "other")}
    threads = [threading.Thread(target=_consume, args=(kafka.bootstrap, f"{prefix}-{g}", topic, stops[g]))
               for g in stops]
    try:
        time.sleep(3)  # the recorder reads before the consumers join
        for t in threads:
            t.start()
        started = time.monotonic()
        while time.monotonic() - started < 32:
            if time.monotonic() - started > 8:
                stops["gone"].set()  # its only member leaves; production goes on
            for i in range(20):
                producer.produce(topic, b"x" * 32, partition=i % 2)
            producer.poll(0.5)
        recorder.send_signal(signal.SIGINT)
        stdout, stderr = recorder.communicate(timeout=30)
    finally:
        for e in stops.values():
            e.set()
        for t in threads:
            t.join(15)
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait(10)
        producer.flush(10)
    assert recorder.returncode == 0, stderr
    summary = stdout.strip().splitlines()
    assert len(summary) == 1 and summary[0].startswith("groupscope record: stopped after"), stdout
    assert "2 groups" in summary[0], summary
    assert "Traceback" not in stderr
    samples = [json.loads(line) for line in (out / "end_offsets.jsonl").read_text().splitlines()]
    assert len(samples) >= 25, "one sample a second"
    assert f"{topic}:0" in samples[-1]["offsets"] and "__consumer_offsets:0" in samples[-1]["offsets"]

    replay = run_cli("replay", str(out), "--format", "json")
    assert replay.returncode == 0, replay.stderr
    timeline = [json.loads(line) for line in replay.stdout.splitlines()]
    by_group: dict[str, list[dict]] = {}
    for e in timeline:
        by_group.setdefault(e["group"], []).append(e)
    assert set(by_group) == {f"{prefix}-steady", f"{prefix}-gone"}, "only the watched groups were recorded"

    def last_status(group: str) -> dict[int, str]:
        return {e["partition"]: e["verdict"] for e in by_group[group] if e["scope"] == "partition"}

    assert last_status(f"{prefix}-steady") == {0: "OK", 1: "OK"}, by_group[f"{prefix}-steady"]
    assert last_status(f"{prefix}-gone") == {0: "STOP", 1: "STOP"}, by_group[f"{prefix}-gone"]
    assert any(e["verdict"] == "formation" for e in by_group[f"{prefix}-steady"]), by_group[f"{prefix}-steady"]
