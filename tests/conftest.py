"""Shared fixtures: where the real Kafka captures live.

They ship with the repository as ``tests/data/conformance.tar.zst`` (see ``tests/data/README.md``) and are unpacked
once into ``tests/data/unpacked/`` (ignored by git) the first time a test asks for them; a changed archive is
unpacked again. Tests that need them fail when they cannot be read: a conformance suite that silently skips proves
nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
from pathlib import Path

import cramjam
import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
ARCHIVE = DATA / "conformance.tar.zst"
UNPACKED = DATA / "unpacked"


def unpack(archive: Path, into: Path) -> Path:
    """Unpack a ``.tar.zst`` into ``into`` unless the same archive (by content hash) is already there.

    Unpacks into a temporary sibling and renames it into place, so a run interrupted half-way never leaves a
    half-filled folder that a later run would trust.
    """
    data = archive.read_bytes()
    stamp = hashlib.sha256(data).hexdigest()
    marker = into / ".archive-sha256"
    if marker.is_file() and marker.read_text() == stamp:
        return into
    tmp = into.with_name(into.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(bytes(cramjam.zstd.decompress(data))), mode="r:") as tar:
        if hasattr(tarfile, "data_filter"):  # refuses links and paths that leave the folder
            tar.extractall(tmp, filter="data")
        else:
            tar.extractall(tmp)
    (tmp / ".archive-sha256").write_text(stamp)
    shutil.rmtree(into, ignore_errors=True)
    tmp.rename(into)
    return into


def captures_dir() -> Path:
    """The folder holding ``conformance/`` (``kafka-4.0/``, ``verdicts/``, ``assignors.json``)."""
    try:
        root = unpack(ARCHIVE, UNPACKED)
    except (OSError, tarfile.TarError, cramjam.DecompressionError) as exc:
        pytest.fail(f"cannot unpack the Kafka captures {ARCHIVE}: {exc}")
    if not (root / "conformance" / "kafka-4.0").is_dir():
        pytest.fail(f"{ARCHIVE} holds no conformance/kafka-4.0 folder")
    return root


@pytest.fixture(scope="session")
def captures() -> Path:
    return captures_dir()


def pytest_collection_modifyitems(config, items) -> None:
    """Every test under ``tests/realkafka/`` runs against a real broker: marked ``kafka`` so a loop can leave them
    out (``-m 'not kafka'``) without a list of files to keep up to date."""
    for item in items:
        if "realkafka" in item.path.parts:
            item.add_marker(pytest.mark.kafka)
