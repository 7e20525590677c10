"""librdkafka's own lines from the simulator's clients (the demo's and ``groupscope simulate``'s) go through Python
logging, as the job's do, and never straight to the terminal, where they would tear the demo's live view apart."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# A broker nobody listens on: every client logs its failed connections.
SCRIPT = textwrap.dedent("""
    import json, logging, sys, time
    from confluent_kafka import Producer
    from streaming.simulator.kafka_sink import KafkaSink
    from streaming.simulator.real_consumers import RealConsumerRunner, RealConsumerSpec

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("groupscope.librdkafka")
    logger.addHandler(Keep())
    logger.setLevel(logging.DEBUG)  # connection failures pass groupscope's filter only when debugging
    logger.propagate = False

    if sys.argv[1] == "sink":  # the demo's: the producers of the KafkaSink
        producer = Producer(KafkaSink("127.0.0.1:1")._conf())
        producer.produce("t", b"x")
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            producer.poll(0.2)
    else:  # groupscope simulate --mode real-consumers
        runner = RealConsumerRunner("127.0.0.1:1", [], [RealConsumerSpec("g", "sim-consumer", ("t",))],
                                    create_topics=False).start()
        time.sleep(4)
        runner.stop(timeout=10)
    print(json.dumps(records))
""")


@pytest.mark.parametrize("clients, name", [("sink", "#producer-"), ("real-consumers", "sim-consumer#consumer-")])
def test_simulator_clients_log_through_python_logging(clients, name):
    result = subprocess.run([sys.executable, "-c", SCRIPT, clients], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout.strip().splitlines()[-1])
    # librdkafka's lines reached the Python logger, from the client under test
    assert any(name in r and "127.0.0.1:1" in r for r in records), records
    raw = [line for line in result.stderr.splitlines() if line.startswith("%") and "|" in line]
    assert raw == [], raw  # librdkafka's own format (%3|time|FAIL|rdkafka#producer-1| ...) never shows
