"""Shared fixtures: where the real Kafka captures live.

They ship with the repository as ``tests/data/conformance.tar.zst`` (see ``tests/data/README.md``) and are unpacked
once into ``tests/data/unpacked/captures/`` (ignored by git) the first time a test asks for them; a changed archive is
unpacked again. Tests that need them fail when they cannot be read: a conformance suite that silently skips proves
nothing.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tarfile
import time
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
    """The folder holding ``conformance/`` (``kafka-4.0/``, ``verdicts/``, ``assignors.json``).

    Each archive has a folder of its own under ``unpacked/``: unpacking one replaces its folder whole, so one that
    held the others (as this one did) took them away whenever it was unpacked after them, in the middle of a run."""
    try:
        root = unpack(ARCHIVE, UNPACKED / "captures")
    except (OSError, tarfile.TarError, cramjam.DecompressionError) as exc:
        pytest.fail(f"cannot unpack the Kafka captures {ARCHIVE}: {exc}")
    if not (root / "conformance" / "kafka-4.0").is_dir():
        pytest.fail(f"{ARCHIVE} holds no conformance/kafka-4.0 folder")
    return root


@pytest.fixture(scope="session")
def captures() -> Path:
    return captures_dir()


#: The tiers a test can be in besides ``unit``: a test in none of them is a unit test.
HEAVY_TIERS = ("spark", "kafka", "slow")
#: Fixtures that start a Spark session: a test using one is in the ``spark`` tier whatever its module says.
SPARK_FIXTURES = frozenset({"delta_spark_session"})
#: Modules whose tests take seconds each (they run the command line in a subprocess, a real Prometheus, minutes of
#: simulated clients, or a whole recording's replay at every snapshot): the ``slow`` tier, so ``-m unit`` stays the
#: loop of a few minutes. A module here needs no marker of its own; ``--durations`` shows what else belongs here.
SLOW_MODULES = frozenset({
    "tests/api/test_load.py",
    "tests/commands/test_decode.py",
    "tests/commands/test_describe.py",
    "tests/commands/test_maintain.py",
    "tests/commands/test_record.py",
    "tests/commands/test_run.py",
    "tests/commands/test_simulate.py",
    "tests/dashboards/test_compat_live.py",
    "tests/dashboards/test_compose.py",
    "tests/dashboards/test_dashboards_live.py",
    "tests/dashboards/test_several_clusters_live.py",
    "tests/kafka/test_heartbeat.py",
    "tests/model/test_state_v1.py",
    "tests/simulator/test_calibration.py",
    "tests/sinks/test_delta_maintenance.py",
    "tests/streaming/test_demo_checks.py",
    "tests/streaming/test_demo_logs.py",
    "tests/streaming/test_job_log_lines.py",
    "tests/streaming/test_kafka_unreachable.py",
    "tests/streaming/test_record_command.py",
    "tests/streaming/test_without_java.py",
    "tests/verdicts/test_replay_command.py",
})


def pytest_collection_modifyitems(config, items) -> None:
    """Every test under ``tests/realkafka/`` runs against a real broker: marked ``kafka`` so a loop can leave them
    out (``-m 'not kafka'``) without a list of files to keep up to date; a test using a Spark-session fixture is
    marked ``spark``. Every test in no heavy tier is marked ``unit``: the everyday loop is ``-m unit``."""
    for item in items:
        if "realkafka" in item.path.parts:
            item.add_marker(pytest.mark.kafka)
        if SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
        if item.path.relative_to(REPO).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if not any(item.get_closest_marker(tier) for tier in HEAVY_TIERS):
            item.add_marker(pytest.mark.unit)


def _java_descendants() -> set[int]:
    """Live JVM processes started from this test process, at any depth (Linux ``/proc``: each thread's
    ``children`` file lists the processes it started, so only this process's own tree is read; empty elsewhere)."""
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                kids = [int(k) for k in children.read_text().split()]
            except OSError:
                continue
            todo.extend(kids)
            for kid in kids:
                try:
                    if Path(f"/proc/{kid}/comm").read_text().strip() == "java":
                        found.add(kid)
                except OSError:
                    pass
    return found


def _spark_context():
    """The process's active SparkContext, if pyspark is loaded at all (importing it here would cost every test)."""
    import sys

    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    return None if context is None else getattr(context, "_active_spark_context", None)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_jvm(request):
    """A ``unit`` test leaves no JVM behind and no Spark session open: one that does belongs in the ``spark`` (or
    ``kafka``, ``slow``) tier, and the everyday loop would wait for it. Checked after the test, so a test that
    starts a JVM and fails its own assertions is still reported for what it asserted."""
    if request.node.get_closest_marker("unit") is None:
        yield
        return
    before = _java_descendants()
    spark_before = _spark_context()
    yield
    if spark_before is None and _spark_context() is not None:
        pytest.fail("this unit test left a Spark session open: mark it spark", pytrace=False)
    started = _java_descendants() - before
    if started:
        pytest.fail(f"this unit test left JVM processes running ({sorted(started)}): mark it spark, kafka or slow",
                    pytrace=False)


@pytest.fixture
def keep():
    """A fresh logger and a handler keeping its records, whatever the root logger's configuration."""
    from tests.log_records import Keep

    logger = logging.getLogger(f"test.keep.{time.monotonic_ns()}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = Keep()
    logger.addHandler(handler)
    return logger, handler


@pytest.fixture(scope="session")
def segment_dirs(captures: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Segment files rebuilt from the Kafka 4.0 captures, one directory per scenario, for the tests of what reads
    segments (``decode``, ``describe``, the progress lines); built once per run."""
    from tests.protocol.conformance import rebuild_segments, scenarios

    out = {}
    for scenario in scenarios(captures):
        directory = tmp_path_factory.mktemp(scenario.name)
        rebuild_segments(captures, scenario.name, directory)
        out[scenario.name] = directory
    return out
