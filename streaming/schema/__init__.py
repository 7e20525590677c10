"""The shapes groupscope writes and reads: the Delta tables' schemas and the row builders that fill them
(``tables.py``), and the heartbeat message the job reads from its heartbeat topic (``heartbeat_format.py``). Uses
``model`` only.
"""
