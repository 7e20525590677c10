"""Kafka clients: configured confluent-kafka clients and end-offset queries (``client.py``), the heartbeat emitter
(``heartbeat.py``), the range reader behind the Spark source (``reader.py``, with its plain offset rules in
``planning.py``) and librdkafka's embedded mock cluster (``mock_cluster.py``) and the capture of a live cluster into a recording
(``capture.py``, behind ``groupscope record``). Uses ``schema`` for the heartbeat
message; no Spark.
"""
