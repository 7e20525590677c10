"""What runs in the driver process and starts Spark: ``runner.py`` starts the job's services and supervises each
cluster's query, ``backfill.py`` runs the same query once over segment files, ``metrics_feed.py`` feeds each
batch's results to ``/metrics`` and the HTTP API, ``progress.py`` says where a starting job stands.

Kept apart from ``job`` (what Spark's Python workers run) so the workers never import the driver's services, and
from ``spark`` (the glue) so the glue stays below both: ``driver`` may use ``spark``, ``job`` and the packages
under them; nothing but ``commands`` uses ``driver``.
"""
