"""The shard step and what it needs, all of it run inside Spark's Python workers: ``step.py`` is one
``__consumer_offsets`` shard's work per micro-batch (plain Python, run inside Spark's stateful operator),
``packed.py`` carries records and state rows through Spark, ``bulk_files.py`` writes the bulk tables' data files
from the executors, ``lagging.py`` the partitions found lagging. ``batch_sink.py`` is the hand-off: the steps
encode their tables in its format and the driver's ``foreachBatch`` decodes them and hands them to the sinks.
Uses ``model``, ``schema``, ``kafka`` and ``sinks``; never ``spark``, ``driver`` or ``commands``.
"""
