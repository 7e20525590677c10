"""Apache Kafka's jars, fetched from Maven Central by version and cached outside the repository.

The broker (``kafka_2.13``) and its tools (``kafka-tools``) are plain Maven artifacts; ``pom.xml`` beside this file
names them with the version as a property, and ``tests.maven_cache`` lays every jar they need into one folder, which
is all ``java -cp`` needs.

The cache lives in ``$REALKAFKA_CACHE`` (default ``~/.cache/groupscope/kafka``), one folder per version.
Nothing here is ever written inside the repository.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.maven_cache import JarsUnavailable, MavenJars, fetch_jars

POM = Path(__file__).with_name("pom.xml")

#: The versions the suite runs against: the first release of Kafka 4 and the newest 4.x that resolves. 4.1 changed
#: the offset-commit value format, so both ends of the range are covered.
DEFAULT_VERSIONS = ("4.0.0", "4.4.0")


class KafkaUnavailable(RuntimeError):
    """Kafka's jars cannot be had: the message is one line saying what to install or what failed."""


def cache_root() -> Path:
    return Path(os.environ.get("REALKAFKA_CACHE", Path.home() / ".cache" / "groupscope" / "kafka"))


def tested_versions() -> tuple[str, ...]:
    """The Kafka versions the real-broker tests run against: ``$REALKAFKA_VERSIONS`` (comma-separated;
    one version for the everyday fast loop) or both ends of the supported range."""
    raw = os.environ.get("REALKAFKA_VERSIONS", "")
    versions = tuple(v.strip() for v in raw.split(",") if v.strip())
    return versions or DEFAULT_VERSIONS


@dataclass(frozen=True)
class KafkaInstall:
    """One Kafka version's jars in a folder, and how to run a class from them."""

    version: str
    lib: Path

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.version.split(".")[:3])

    @property
    def dump_log_class(self) -> str:
        # kafka-dump-log moved from the Scala core to the tools module in 4.3.
        if self.version_tuple >= (4, 3):
            return "org.apache.kafka.tools.DumpLogSegments"
        return "kafka.tools.DumpLogSegments"

    def java_command(self, main_class: str, *args: str, heap: str = "256m") -> list[str]:
        """The command line running ``main_class`` with this version's jars, as Kafka's ``bin/`` scripts do."""
        return [java_binary(), f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", f"{self.lib}/*", main_class, *args]

    def run_tool(self, main_class: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Runs one of Kafka's command-line tools to its end; stdout and stderr are captured as text."""
        return subprocess.run(self.java_command(main_class, *args), capture_output=True, text=True,
                              timeout=timeout, check=False)

    def client_command(self, source: Path, *args: str, heap: str = "256m") -> list[str]:
        """The command line running the client program in ``source`` (a one-class Java file under ``java/``),
        compiled against this version's jars on first use and cached beside them by the source's hash."""
        classes = self.lib.parent / "classes" / hashlib.sha256(source.read_bytes()).hexdigest()[:16]
        if not (classes / f"{source.stem}.class").is_file():
            javac = shutil.which("javac")
            if javac is None:
                raise KafkaUnavailable("javac not found: the real-broker tests compile their Kafka Streams client "
                                       "(Debian: apt-get install openjdk-17-jdk-headless)")
            tmp = classes.with_name(f"{classes.name}.tmp-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            done = subprocess.run([javac, "-cp", f"{self.lib}/*", "-d", str(tmp), str(source)],
                                  capture_output=True, text=True, timeout=300, check=False)
            if done.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise KafkaUnavailable(f"javac failed on {source.name}: {(done.stdout + done.stderr).strip()[:500]}")
            shutil.rmtree(classes, ignore_errors=True)
            tmp.rename(classes)
        command = self.java_command(source.stem, *args, heap=heap)
        at = command.index("-cp") + 1
        command[at] = f"{self.lib}/*{os.pathsep}{classes}"
        return command


def java_binary() -> str:
    java = shutil.which("java")
    if java is None:
        raise KafkaUnavailable("java not found: the real-broker tests need Java 17 or newer "
                               "(Debian: apt-get install openjdk-17-jre-headless)")
    return java


def kafka_install(version: str) -> KafkaInstall:
    """The jars of Kafka ``version``, fetched with Maven on first use and cached."""
    java_binary()
    spec = MavenJars(POM, f"Apache Kafka {version}", {"kafka.version": version})
    try:
        lib = fetch_jars(spec, cache_root() / version / "lib", lambda folder: _complete(folder, version))
    except JarsUnavailable as exc:
        raise KafkaUnavailable(str(exc)) from None
    return KafkaInstall(version, lib)


def _complete(lib: Path, version: str) -> bool:
    return all((lib / f"{name}-{version}.jar").is_file() for name in ("kafka_2.13", "kafka-tools", "kafka-streams"))
