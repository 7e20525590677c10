"""Every label of every corpus recording (``tests/data/corpus.tar.zst``, made on a real broker with real clients by
``tests/realkafka/corpus.py``; labels derived from the client log alone) is met by a replay of the recording.

``python -m tests.verdicts.corpus_check`` prints the same check label by label.
"""

from __future__ import annotations

import pytest

from tests.verdicts.corpus_check import check_recording, corpus_recordings

RECORDINGS = corpus_recordings()


def test_the_corpus_is_all_there() -> None:
    # 25 recordings with 85 labels: a lost folder must not pass by checking nothing.
    assert len(RECORDINGS) == 25


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_label_is_met(path) -> None:
    check = check_recording(path)
    assert check.results, f"{path} has no labels"
    missed = [r.describe(check.t0_ms) for r in check.missed]
    assert not missed, "labels missed:\n" + "\n".join(missed)
