"""The demo's folder: where it is, whether this run may use it, and clearing what the last run left there.

Every demo run starts a brand-new embedded broker, so a checkpoint left by an earlier run would point at offsets of
a broker that is gone and old tables would mix old groups with new ones: each run clears the folder. Clearing is the
last of the checks, never the first: a run that is going to fail (a bad ``GROUPSCOPE_*`` variable, a busy port, a
folder another demo is using) leaves the last demo's data as it was. A running demo holds an exclusive lock on the
folder's marker file for as long as it runs (the system drops it when the process ends, however it ends), so a
second demo never clears a folder a running one writes to.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
from pathlib import Path

try:
    import fcntl
except ImportError:  # not a POSIX system: no lock, the other checks still hold
    fcntl = None  # type: ignore[assignment]

__all__ = ["MARKER", "DemoDirError", "PortInUse", "claim_demo_dir", "clear_demo_dir", "default_demo_dir",
           "ensure_ports_free", "state_demo_dir"]

MARKER = ".groupscope-demo"  # marks a folder the demo created, so clearing it never touches anything else
_MARKER_TEXT = "groupscope demo data; cleared at the start of every groupscope demo run\n"


class DemoDirError(RuntimeError):
    """The demo folder cannot be used: it holds something the demo did not create, or a running demo holds it."""


class PortInUse(RuntimeError):
    """A port the demo would serve on is taken."""


def default_demo_dir() -> Path:
    """Where the demo keeps its data by default: outside any working tree, in the user's state folder
    (``$GROUPSCOPE_DEMO_DIR``, else ``$XDG_STATE_HOME/groupscope/demo``, else ``~/.local/state/groupscope/demo``).
    ``groupscope status`` and ``groupscope maintain`` look there when no tables are configured."""
    if os.environ.get("GROUPSCOPE_DEMO_DIR"):
        return Path(os.environ["GROUPSCOPE_DEMO_DIR"]).expanduser()
    return state_demo_dir()


def state_demo_dir() -> Path:
    """The demo folder in the user's state folder, whatever ``$GROUPSCOPE_DEMO_DIR`` says: the one a shell without
    that variable finds."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "groupscope" / "demo"


def claim_demo_dir(root: Path) -> int:
    """Makes ``root`` this run's, without removing anything: creates it if needed and locks its marker file.
    Returns the lock's file descriptor (closing it, or the process ending, lets the folder go).

    Refused (:class:`DemoDirError`): a file, a non-empty folder without the marker, or a folder a running demo
    holds (named by its process id)."""
    if root.exists():
        if not root.is_dir():
            raise DemoDirError(f"{root} is not a folder")
        if any(root.iterdir()) and not (root / MARKER).exists():
            raise DemoDirError(f"{root} is not empty and was not made by groupscope demo; pick another --dir")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / MARKER, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DemoDirError(f"cannot use {root}: {exc.strerror or exc}") from None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = re.search(r"^pid (\d+)$", (root / MARKER).read_text(errors="replace"), re.M)
            os.close(fd)
            raise DemoDirError(f"another groupscope demo{f' (pid {holder.group(1)})' if holder else ''} is running "
                               f"in {root}; stop it first, or give this one another --dir and --metrics-port") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{_MARKER_TEXT}pid {os.getpid()}\n".encode())
    return fd


def ensure_ports_free(ports: dict[str, int | None], host: str = "127.0.0.1") -> None:
    """Raises :class:`PortInUse` for the first of ``ports`` (``{"metrics": 9308, ...}``; 0 or None: any port, not
    checked) that something already listens on, so the run fails before it clears the last demo's data. A port
    taken between this check and the bind still fails the run, later."""
    for name, port in ports.items():
        if not port:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is free
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                raise PortInUse(f"{name} port {port} is already in use (another groupscope demo?); pick another with "
                                f"--{name}-port, 0 for any free port") from None


def clear_demo_dir(root: Path) -> None:
    """Removes what an earlier run left in ``root`` (checkpoint, tables, logs), keeping the marker this run holds,
    and keeps git out of it. Call only after :func:`claim_demo_dir`."""
    for child in root.iterdir():
        if child.name == MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    (root / ".gitignore").write_text("*\n")
