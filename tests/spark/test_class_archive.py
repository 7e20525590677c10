"""The driver JVM's class-data-sharing archive (streaming.spark.class_archive): which Java gets one, what the JVM is
told, what an orderly stop keeps; and, with a real JVM, that the first session records it and the next maps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streaming.spark.class_archive import ClassArchive


def _java(root: Path, version: str = "17.0.9", base_archive: bool = True) -> Path:
    home = root / "jdk"
    (home / "lib" / "server").mkdir(parents=True)
    (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\n')
    if base_archive:
        (home / "lib" / "server" / "classes.jsa").write_bytes(b"base")
    return home


def _spark(root: Path) -> Path:
    jars = root / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"jar")
    return root / "spark"


@pytest.fixture
def installation(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(_java(tmp_path)))
    monkeypatch.setenv("SPARK_HOME", str(_spark(tmp_path)))
    return tmp_path


def test_first_run_records_then_runs_map_the_archive(installation):
    cache = installation / "cache"
    first = ClassArchive.for_driver(cache)
    assert first is not None and first.recording is not None
    assert f"-XX:ArchiveClassesAtExit={first.recording}" in first.java_options()
    assert "-Xlog:cds*=off" in first.java_options()  # the JVM's archive warnings stay off the terminal
    first.path.write_bytes(b"archive")
    later = ClassArchive.for_driver(cache)
    assert later is not None and later.recording is None and later.path == first.path
    assert later.java_options().startswith(f"-XX:SharedArchiveFile={first.path} ")


def test_another_spark_installation_gets_its_own_archive(installation):
    cache = installation / "cache"
    before = ClassArchive.for_driver(cache).path
    (installation / "spark" / "jars" / "delta.jar").write_bytes(b"another jar")
    assert ClassArchive.for_driver(cache).path != before
    assert ClassArchive.for_driver(cache, extra_class_path="/opt/x.jar").path != ClassArchive.for_driver(cache).path


@pytest.mark.parametrize("version, base_archive", [("1.8.0_392", True), ("11.0.21", True), ("17.0.9", False)])
def test_no_archive_where_the_java_cannot_use_one(tmp_path, monkeypatch, version, base_archive):
    monkeypatch.setenv("JAVA_HOME", str(_java(tmp_path, version, base_archive)))
    monkeypatch.setenv("SPARK_HOME", str(_spark(tmp_path)))
    assert ClassArchive.for_driver(tmp_path / "cache") is None


def test_no_archive_where_the_cache_cannot_be_written(installation):
    blocker = installation / "not-a-folder"
    blocker.write_text("")
    assert ClassArchive.for_driver(blocker / "jvm") is None


def _stand_in_jvm(writes: Path | None, status: int = 0) -> subprocess.Popen:
    """A stand-in for Spark's JVM (a shell, not a JVM): it exits when its standard input closes, first writing the
    file the JVM would write its archive to."""
    write = f"printf archive > '{writes}'; " if writes is not None else ""
    return subprocess.Popen(["sh", "-c", f"cat > /dev/null; {write}exit {status}"], stdin=subprocess.PIPE)


def test_an_orderly_stop_keeps_the_recording_and_drops_archives_of_removed_installations(installation):
    cache = installation / "cache"
    cache.mkdir()
    (cache / "old.jsa").write_bytes(b"old")
    (cache / "old.json").write_text(json.dumps({"java": str(installation / "gone"), "spark_jars": "/nowhere"}))
    archive = ClassArchive.for_driver(cache)
    assert archive.finish(_stand_in_jvm(archive.recording)) is True
    assert archive.path.read_bytes() == b"archive" and not archive.recording.exists()
    assert json.loads(archive.path.with_suffix(".json").read_text())["java"] == os.environ["JAVA_HOME"]
    assert not (cache / "old.jsa").exists() and not (cache / "old.json").exists()


def test_the_archive_of_a_reinstalled_spark_goes_when_the_new_one_is_kept(installation):
    cache = installation / "cache"
    before = ClassArchive.for_driver(cache)
    assert before.finish(_stand_in_jvm(before.recording)) is True
    (installation / "spark" / "jars" / "spark-core.jar").write_bytes(b"jar of another release")
    after = ClassArchive.for_driver(cache)
    assert after.path != before.path and before.path.exists()  # kept until a new one is
    assert after.finish(_stand_in_jvm(after.recording)) is True
    assert sorted(cache.glob("*.jsa")) == [after.path]


def test_a_jvm_that_failed_leaves_no_archive(installation):
    archive = ClassArchive.for_driver(installation / "cache")
    assert archive.finish(_stand_in_jvm(archive.recording, status=1)) is False
    assert not archive.path.exists() and not archive.recording.exists()


_SESSION = textwrap.dedent("""
    import json, sys
    from streaming.spark.session import build_session, stop_session
    spark = build_session(master="local[1]")
    spark.range(10).selectExpr("sum(id)").collect()
    pid = spark.sparkContext._gateway.proc.pid
    with open(f"/proc/{pid}/maps") as f:
        mapped = sorted({line.split()[-1] for line in f if line.rstrip().endswith(".jsa")})
    stop_session(spark)
    print(json.dumps(mapped))
""")


@pytest.mark.spark
def test_a_real_jvm_records_the_archive_once_and_the_next_maps_it(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}

    def session() -> list[str]:
        done = subprocess.run([sys.executable, "-c", _SESSION], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    folder = tmp_path / "groupscope" / "jvm"
    recorded = session()
    kept = sorted(folder.glob("*.jsa"))
    assert len(kept) == 1, "the first session's orderly stop kept the archive its JVM wrote"
    assert str(kept[0]) not in recorded
    assert not list(folder.glob("*.part"))
    assert str(kept[0]) in session(), "the next JVM did not map the archive"
    assert sorted(folder.glob("*.jsa")) == kept
