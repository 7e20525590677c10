"""The driver's heap settled once the job runs (``streaming.driver.heap``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from streaming.driver import heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture(autouse=True)
def _unfrozen():
    yield
    gc.unfreeze()  # the rest of the test run collects as usual


def test_garbage_is_collected_and_what_survives_is_left_out_of_later_collections():
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    gone = weakref.ref(a)
    kept = _Node()
    del a, b
    heap.settle()
    assert gone() is None, "the cycle that was garbage is collected first"
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects()), "a survivor is in no generation the collector walks"
