"""Where a batch's results go: Delta tables written exactly once per batch (``delta.py`` with delta-rs,
``delta_spark.py`` with delta-spark) and kept small (``delta_maintenance.py``), and the Prometheus endpoint with
``/metrics`` and ``/ready`` (``prometheus.py``). Uses ``schema`` and ``model``.
"""
