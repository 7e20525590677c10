"""A class-data-sharing archive for the driver's JVM, so that every start after the first loads Spark faster.

Spark's driver loads about 14,000 classes from some 250 jars before the first micro-batch is planned: finding,
reading, verifying and linking them is most of the JVM's start-up. HotSpot (JDK 13 and later) can write the
classes a run loaded into an archive when the JVM exits (``-XX:ArchiveClassesAtExit``) and map that archive, already
parsed and verified, into later JVMs (``-XX:SharedArchiveFile``). On a 2-core machine the session then starts about
1.1 s sooner and the first query runs 0.7 s sooner; the cold catch-up plans its first batch about 1.5 s sooner
(``benchmarks/README.md``).

How it is used:

- No archive yet for this Java and this Spark installation: the JVM records one. Recording costs that run about
  2.5 s at start-up and about 5 s when its JVM exits, once. The JVM writes to a file of its own (``*.part``); only
  an orderly stop (:meth:`ClassArchive.finish`, which waits for the JVM to exit) moves it into place, so a killed
  run leaves no half-written archive in use.
- An archive exists: the JVM maps it. If anything no longer matches (another Java, another class path), HotSpot
  checks that itself and starts without it, as fast as before.
- JVM messages about the archive are turned off: they are about the cache, never about the job.

The archive is keyed by the Java installation and Spark's jars (names, sizes, times), so upgrading either records
a new one; archives whose Java or Spark installation is gone or has changed are removed when a new one is kept.
Where the Java is not HotSpot 13+ with its own base archive (``lib/server/classes.jsa``), or the cache folder
cannot be written, nothing is added. ``spark.class_archive: false`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ClassArchive", "default_cache_dir", "java_home"]

log = logging.getLogger("groupscope.spark")

_QUIET = "-Xlog:cds*=off"  # HotSpot logs archive mismatches and skipped classes as warnings on stdout
_STALE_PART_S = 24 * 3600.0  # a recording no orderly stop kept (the run was killed): removed after a day
_EXIT_WAIT_S = 120.0  # writing the archive at the JVM's exit takes ~5 s on 2 cores


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "groupscope" / "jvm"


def java_home() -> Path | None:
    """The Java installation Spark's launcher will run: ``JAVA_HOME`` if set, else the ``java`` on ``PATH``."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def _java_release(home: Path) -> str | None:
    """The installation's ``release`` file when it is a HotSpot JVM that can record dynamic archives."""
    try:
        release = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    version = ""
    for line in release.splitlines():
        if line.startswith("JAVA_VERSION="):
            version = line.split("=", 1)[1].strip().strip('"')
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return None
    if major < 13 or not (home / "lib" / "server" / "classes.jsa").is_file():
        return None
    return release


def _spark_jars() -> Path | None:
    """The jars Spark's launcher puts on the driver's class path: ``$SPARK_HOME/jars``, else PySpark's own."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        from importlib.util import find_spec

        spec = find_spec("pyspark")
        if spec is None or spec.origin is None:
            return None
        home = os.path.dirname(spec.origin)
    jars = Path(home) / "jars"
    return jars if jars.is_dir() else None


def _key(home: Path, release: str, jars: Path, extra_class_path: str) -> str:
    h = hashlib.sha256()
    listing = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(jars) if e.is_file())
    for part in (str(home), release, str(jars), json.dumps(listing), extra_class_path,
                 os.environ.get("SPARK_DIST_CLASSPATH", ""), os.environ.get("SPARK_CLASSPATH", "")):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one Java and Spark installation: ``path`` once recorded; ``recording`` is where this run's
    JVM writes one when there is none yet."""

    path: Path
    recording: Path | None
    home: Path
    jars: Path
    extra_class_path: str = ""

    @classmethod
    def for_driver(cls, cache_dir: Path | None = None, *, extra_class_path: str = "") -> "ClassArchive | None":
        """The archive for a driver JVM started from here, or None where none can be used."""
        home = java_home()
        release = _java_release(home) if home is not None else None
        jars = _spark_jars()
        if home is None or release is None or jars is None:
            return None
        folder = cache_dir or default_cache_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{_key(home, release, jars, extra_class_path)}.jsa"
            if path.is_file():
                return cls(path, None, home, jars, extra_class_path)
            _remove_stale_parts(folder)
            recording = folder / f"{path.stem}.{os.getpid()}.{time.monotonic_ns() % 10**9}.part"
            recording.touch()  # the folder is writable: the JVM will be able to write here
            recording.unlink()
        except OSError as exc:
            log.debug("no JVM class archive: %s", exc)
            return None
        return cls(path, recording, home, jars, extra_class_path)

    def java_options(self) -> str:
        if self.recording is not None:
            return f"-XX:ArchiveClassesAtExit={self.recording} {_QUIET}"
        return f"-XX:SharedArchiveFile={self.path} {_QUIET}"

    def finish(self, proc: subprocess.Popen | None) -> bool:
        """After the session stopped, in a recording run: lets the JVM exit (it exits when its standard input
        closes, writing the archive first), waits for it, and keeps what it wrote. True if an archive was kept."""
        if self.recording is None or proc is None:
            return False
        log.info("keeping the JVM's class archive for faster starts (once: a few seconds)")
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            status = proc.wait(_EXIT_WAIT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.debug("JVM class archive not kept: %s", exc)
            return False
        try:
            if status == 0 and self.recording.is_file() and self.recording.stat().st_size > 0:
                os.replace(self.recording, self.path)
                self.path.with_suffix(".json").write_text(
                    json.dumps({"java": str(self.home), "spark_jars": str(self.jars),
                                "extra_class_path": self.extra_class_path}), encoding="utf-8")
                _remove_orphans(self.path.parent, keep=self.path)
                log.debug("JVM class archive kept: %s", self.path)
                return True
            self.recording.unlink(missing_ok=True)
        except OSError as exc:
            log.debug("JVM class archive not kept: %s", exc)
        return False


def _remove_stale_parts(folder: Path) -> None:
    now = time.time()
    for part in folder.glob("*.part"):
        try:
            if now - part.stat().st_mtime > _STALE_PART_S:
                part.unlink()
        except OSError:
            pass


def _remove_orphans(folder: Path, keep: Path) -> None:
    """Removes archives whose Java or Spark installation is gone or has changed since (a removed or reinstalled
    virtualenv, an upgrade): no JVM would use them again."""
    for meta in folder.glob("*.json"):
        archive = meta.with_suffix(".jsa")
        if archive == keep:
            continue
        try:
            where = json.loads(meta.read_text(encoding="utf-8"))
            home, jars = Path(where["java"]), Path(where["spark_jars"])
            release = _java_release(home)
            gone = release is None or not jars.is_dir() or \
                _key(home, release, jars, where.get("extra_class_path", "")) != archive.stem
        except (OSError, ValueError, KeyError, TypeError):
            gone = True
        if gone:
            archive.unlink(missing_ok=True)
            meta.unlink(missing_ok=True)
