"""groupscope's running parts, one sub-package per concern (``protocol/`` beside it is the sans-IO codec).

- ``model/``: the plain-Python group model (coordinator replay, offsets, lag, statuses, rebalance verdicts). No Spark,
  no Kafka client; may use ``protocol`` only.
- ``schema/``: the shapes groupscope writes and reads (Delta table schemas and row builders, the heartbeat message).
  May use ``model``.
- ``job/``: the streaming job's per-batch work (one shard's step, what a batch hands to the sinks, the metrics feed)
  and ``runner.py``, which starts and stops it. May use everything below except ``commands``.
- ``spark/``: the thin Spark glue (session, Kafka source, ``applyInPandasWithState``, the query).
- ``kafka/``: Kafka clients (admin, heartbeat emitter, range reader, the embedded mock cluster).
- ``sinks/``: Delta tables (and their maintenance) and the Prometheus endpoint.
- ``api/``: the read-only HTTP API (Burrow's ``/v3`` paths, groupscope's ``/v1``) over the metrics state. May use
  ``sinks.prometheus``, ``schema`` and ``model``.
- ``offline/``: reading without a job: broker segment files and real-Kafka recordings, replayed through the model.
- ``simulator/``: the workload simulator behind ``groupscope simulate`` and the demo.
- ``commands/``: the ``groupscope`` command line, one module per command; nothing else imports it.
- ``config.py``: the settings file and its validation, used by the commands and the job.
"""
