"""The streaming job: ``runner.py`` starts and stops it, ``step.py`` is one ``__consumer_offsets`` shard's work per
micro-batch (plain Python, run inside Spark's stateful operator), ``batch_sink.py`` hands a batch's tables to the
sinks, ``metrics_feed.py`` feeds ``/metrics``, ``packed.py`` carries state rows through Spark. Uses ``model``,
``schema``, ``spark``, ``kafka`` and ``sinks``; never ``commands``.
"""
