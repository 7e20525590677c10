"""Where a batch's results go: Delta tables written exactly once per batch (``delta.py`` with delta-rs,
``delta_spark.py`` with delta-spark; executors write the bulk tables' files with ``delta_files.py``) and kept small
(``delta_maintenance.py``), and the Prometheus endpoint with ``/metrics`` and ``/ready`` (``prometheus.py`` names
its parts: the metric catalogue, the monitor's health and ``/ready`` policy, the state store the API reads too, the
collector and the server, served by ``http_server.py``, which the HTTP API shares). Uses ``schema`` and ``model``.
"""
