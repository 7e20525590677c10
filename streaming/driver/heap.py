"""The driver's Python heap, settled once the job runs: what the cyclic garbage collector no longer walks.

Why: a job's driver holds a large, long-lived heap (PySpark, pandas, pyarrow, Delta and their modules; py4j's
proxies; the Spark session) next to a read model it replaces every batch. Python's collector walks every
tracked object of the heap on each full collection, and the batches' allocations trigger one every few seconds:
at 10,000 groups a full collection took ~130 ms, on the path between a commit and its series (the batch's
hand-over and the page's rendering wait for it). Nothing allocated before the first batch completed is garbage
later (modules, classes, the session), so it is moved out of the collector's sight once (:func:`gc.freeze`); the
read model's objects hold no cycles and are freed by reference counting as before.
"""

from __future__ import annotations

import gc

__all__ = ["settle"]


def settle() -> None:
    """Collects what is garbage now, then leaves every surviving object out of later collections."""
    gc.collect()
    gc.freeze()
