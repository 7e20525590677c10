"""The shapes groupscope writes and reads: the Delta tables' schemas and the row builders that fill them
(``tables.py``), the heartbeat message the job reads from its heartbeat topic (``heartbeat_format.py``), and the
driver's read model (``read_model.py``): those rows typed once per batch for every reader of the job's state.
Uses ``model`` only.
"""
