"""One job per checkpoint: an exclusive lock on a local checkpoint folder for as long as the job runs.

Two jobs resuming from one checkpoint would each write the same micro-batch ids into its offset log and state, and
each replay into the same Delta tables. Spark's FileContext-based checkpoint writer refused the second one's first
log entry, but the job writes local checkpoints through the FileSystem API (:mod:`streaming.spark.checkpoint_files`),
whose rename does not refuse, so the job takes a lock of its own instead: the second job stops at start with one
line naming the process that holds it. The operating system drops the lock when its holder exits, even on
``kill -9``, so a crashed job never leaves a stale lock behind. Remote checkpoints (HDFS, object stores) are not
locked here: Spark's own writer for them still refuses a concurrent update.
"""

from __future__ import annotations

import os
from streaming.spark.checkpoint_files import local_path

__all__ = ["CheckpointInUse", "CheckpointLock", "LOCK_FILE"]

LOCK_FILE = ".groupscope.lock"


class CheckpointInUse(RuntimeError):
    """Another running job holds the checkpoint; the message is one line saying which."""


class CheckpointLock:
    """Holds ``<checkpoint>/.groupscope.lock`` locked (``flock``) from :meth:`acquire` to :meth:`release`."""

    def __init__(self, checkpoint: str) -> None:
        self.checkpoint = checkpoint
        folder = local_path(checkpoint)
        self.path = None if folder is None else folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Takes the lock; False where there is nothing to lock (a remote checkpoint, a system without ``flock``).

        Raises:
            CheckpointInUse: another process holds it.
        """
        try:
            import fcntl
        except ImportError:  # not a POSIX system
            return False
        if self.path is None or self._fd is not None:
            return self._fd is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise CheckpointInUse(f"the checkpoint {self.checkpoint} is in use by another groupscope job (process "
                                  f"{holder}): stop that job first, or give this one a checkpoint of its own "
                                  "(spark.checkpoint)") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return True

    def release(self) -> None:
        """Lets the lock go (the file stays: removing it would race a job that just opened it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
