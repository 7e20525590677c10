"""Reading without a running job: broker segment files (``segments.py``) replayed through the model
(``segment_replay.py``, behind ``groupscope describe`` and ``decode``), and real-Kafka recordings replayed through the
job's own step (``recording/``, behind ``groupscope replay`` and the verdict tests). Uses ``protocol``, ``model``,
``schema`` and ``job.step``; no Spark, no Kafka client.
"""
