"""Replays every corpus recording (``tests/data/corpus.tar.zst``, made with ``groupscope record`` by
``tests/realkafka/corpus.py``) and prints, for every label, whether the model meets it.

The test is ``tests/verdicts/test_corpus.py`` (every label of every recording met); this script prints the
table of labels met and missed, for a change of the model or a new recording.

    python -m tests.verdicts.corpus_check [RECORDING_FOLDER ...]

Without arguments, every recording of the archive. Exit status 1 when a label is missed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from streaming.offline.recording import load_recording, replay_recording
from tests.conftest import DATA, UNPACKED, unpack
from tests.verdicts.labels import LabelResult, check_labels

__all__ = ["CORPUS_ARCHIVE", "RecordingCheck", "corpus_recordings", "check_recording"]

CORPUS_ARCHIVE = DATA / "corpus.tar.zst"


@dataclass(frozen=True)
class RecordingCheck:
    path: Path
    t0_ms: int
    results: list[LabelResult]

    @property
    def missed(self) -> list[LabelResult]:
        return [r for r in self.results if not r.ok]


def corpus_recordings() -> list[Path]:
    """Every recording folder (with ``labels.json``) of the corpus archive, unpacked on first use."""
    root = unpack(CORPUS_ARCHIVE, UNPACKED / "corpus")
    return sorted(p.parent for p in root.rglob("labels.json"))


def check_recording(path: Path) -> RecordingCheck:
    labels = json.loads((path / "labels.json").read_text())
    timeline = replay_recording(load_recording(path))
    return RecordingCheck(path, labels["t0_ms"], check_labels(timeline, labels))


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or corpus_recordings()
    missed = 0
    for path in paths:
        check = check_recording(path)
        missed += len(check.missed)
        name = f"{path.parent.name}/{path.name}"
        print(f"== {name}: {len(check.results) - len(check.missed)}/{len(check.results)} labels met")
        for r in check.results:
            print("  " + r.describe(check.t0_ms))
    print(f"{missed} labels missed in {len(paths)} recordings")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
