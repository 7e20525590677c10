"""Jars fetched from Maven Central with Maven into a cache folder outside the repository.

The real-broker tests need Apache Kafka's jars, the Spark tests Delta's and Spark's Kafka connector: plain Maven
artifacts. A ``pom.xml`` names them (versions as properties) and ``mvn dependency:copy-dependencies`` lays the jars
into one folder. The folder is filled under a temporary name and renamed into place, so an interrupted fetch
never leaves a half-filled cache that a later run would trust; a file lock beside it keeps two test processes from
fetching the same folder at once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

__all__ = ["JarsUnavailable", "MavenJars", "fetch_jars"]


class JarsUnavailable(RuntimeError):
    """The jars cannot be had: the message is one line saying what to install or what failed."""


@dataclass(frozen=True)
class MavenJars:
    """What to fetch: the artifacts a pom names, with its properties set, and (optionally) only some of the jars
    they resolve to (``only``: artifact ids; the others are already on the classpath that will use them)."""

    pom: Path
    what: str  # for messages: "Apache Kafka 4.0.0"
    properties: Mapping[str, str] = field(default_factory=dict)
    only: Sequence[str] = ()


def fetch_jars(spec: MavenJars, lib: Path, complete: Callable[[Path], bool]) -> Path:
    """The folder ``lib`` holding ``spec``'s jars, fetched with Maven unless ``complete(lib)`` already holds."""
    if complete(lib):
        return lib
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable(f"mvn not found: the tests fetch {spec.what} from Maven Central with Maven "
                              "(Debian: apt-get install maven)")
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / f".{lib.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if complete(lib):
            return lib
        tmp = lib.with_name(f"{lib.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        command = [mvn, "-q", "-B", "-f", str(spec.pom), *(f"-D{k}={v}" for k, v in spec.properties.items()),
                   "dependency:copy-dependencies", f"-DoutputDirectory={tmp}"]
        if spec.only:
            command.append(f"-DincludeArtifactIds={','.join(spec.only)}")
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0 or not complete(tmp):
            errors = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
            reason = errors[0].replace("[ERROR]", "").strip() if errors else f"exit status {done.returncode}"
            shutil.rmtree(tmp, ignore_errors=True)
            raise JarsUnavailable(f"cannot fetch {spec.what} from Maven Central: {reason}")
        shutil.rmtree(lib, ignore_errors=True)
        tmp.rename(lib)
    return lib
