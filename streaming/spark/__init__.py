"""Thin Spark glue: the session (``session.py``), the Kafka source that reads explicit offset ranges
(``source.py``), the ``applyInPandasWithState`` wrapper around ``job.step`` (``stateful.py``) and the query that
ties them to the sinks (``job.py``). Domain logic lives in ``model`` and ``job``, not here. Uses ``job``, never
``driver``: the driver starts what this package builds.
"""
