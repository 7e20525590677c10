"""groupscope's running parts, one sub-package per concern (``protocol/`` beside it is the sans-IO codec).

- ``model/``: the plain-Python group model (coordinator replay, offsets, lag, statuses, rebalance verdicts). No Spark,
  no Kafka client; may use ``protocol`` only.
- ``schema/``: the shapes groupscope writes and reads (Delta table schemas and row builders, the heartbeat message).
  May use ``model``.
- ``job/``: what Spark's Python workers run: one shard's step per batch, the packed rows, the executors' data files,
  and the batch hand-off the driver decodes. Never uses ``spark`` or ``driver``.
- ``spark/``: the thin Spark glue (session, Kafka source, ``applyInPandasWithState``, the query). Uses ``job``.
- ``driver/``: what runs on the driver and starts Spark: the runner and its supervisor, backfill, the metrics feed,
  start-up progress lines. Uses ``spark`` and ``job``; only ``commands`` uses it.
- ``kafka/``: Kafka clients (admin, heartbeat emitter, range reader, the embedded mock cluster).
- ``sinks/``: Delta tables (and their maintenance) and the Prometheus endpoint.
- ``api/``: the read-only HTTP API (Burrow's ``/v3`` paths, groupscope's ``/v1``) over the metrics state. May use
  ``sinks.prometheus``, ``schema`` and ``model``.
- ``offline/``: reading without a job: broker segment files and real-Kafka recordings, replayed through the model.
- ``simulator/``: the workload simulator behind ``groupscope simulate`` and the demo.
- ``commands/``: the ``groupscope`` command line, one module per command; nothing else imports it.
- ``config.py``: the settings file and its validation, read by the commands, the driver, the Spark glue, the Kafka
  clients and the sinks. Uses ``model`` only (the ``model:`` section comes from the knobs declared there), so all
  of them can.
- ``progress.py``: how far long work has come (a bar or log lines). Uses nothing of the project.
"""
