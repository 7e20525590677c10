"""Is there a Java that Spark can start? Asked before a command that needs Spark does anything else.

Without one, PySpark fails only once the session is built, with ``[JAVA_GATEWAY_EXITED] Java gateway process exited
before sending its port number`` after the launcher's own ``java: not found`` -- neither says what to install, and
by then ``groupscope demo`` has already started its broker and cleared its folder. Spark 4 needs Java 17 or newer;
the launcher runs ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else the ``java`` on ``PATH``, and so does this
check.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["MIN_JAVA", "INSTALL_HINT", "java_problem"]

MIN_JAVA = 17
INSTALL_HINT = "install it (Debian, Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one"


def _major(version: str) -> int | None:
    """17 of ``17.0.9``, 8 of ``1.8.0_392``."""
    parts = re.findall(r"\d+", version)
    if not parts:
        return None
    major = int(parts[0])
    return int(parts[1]) if major == 1 and len(parts) > 1 else major


def _version(java: Path) -> int | None:
    """The major version of the installation ``java`` belongs to: its ``release`` file, else ``java -version``."""
    try:
        for line in (java.resolve().parent.parent / "release").read_text(encoding="utf-8").splitlines():
            if line.startswith("JAVA_VERSION="):
                return _major(line.split("=", 1)[1])
    except OSError:
        pass
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return _major(found.group(1)) if found else None


def java_problem() -> str | None:
    """None when Spark's launcher will find a Java 17 or newer; else the one line that says what is missing and how
    to install it. A Java whose version cannot be told is given the benefit of the doubt."""
    need = f"Spark needs Java {MIN_JAVA} or newer"
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            return f"{need}, and JAVA_HOME ({home}) holds no bin/java: {INSTALL_HINT}"
    else:
        found = shutil.which("java")
        if found is None:
            return f"{need}, and there is no java on PATH (nor a JAVA_HOME): {INSTALL_HINT}"
        java = Path(found)
    major = _version(java)
    if major is not None and major < MIN_JAVA:
        return f"{need}; {java} is Java {major}: {INSTALL_HINT}"
    return None
