"""One job per checkpoint (``streaming.driver.checkpoint_lock``): the second holder of a local checkpoint is refused
in one line naming the first, the lock goes with its holder (released, or the process gone, even by SIGKILL), and a
remote checkpoint is not locked here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from streaming.driver.checkpoint_lock import LOCK_FILE, CheckpointInUse, CheckpointLock


def test_a_second_lock_on_a_checkpoint_is_refused_naming_the_holder_until_the_first_is_released(tmp_path):
    first = CheckpointLock(str(tmp_path / "cp"))
    assert first.acquire()
    assert (tmp_path / "cp" / LOCK_FILE).read_text() == str(os.getpid())
    with pytest.raises(CheckpointInUse) as refused:
        CheckpointLock(str(tmp_path / "cp")).acquire()
    message = str(refused.value)
    assert "\n" not in message and f"process {os.getpid()}" in message and str(tmp_path / "cp") in message
    first.release()
    again = CheckpointLock(f"file:{tmp_path / 'cp'}")
    assert again.acquire(), "a file: URI names the same folder, free again"
    again.release()


def test_the_lock_of_a_killed_process_is_gone_with_it(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from streaming.driver.checkpoint_lock import CheckpointLock; "
         f"CheckpointLock({str(tmp_path / 'cp')!r}).acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(CheckpointInUse, match=f"process {holder.pid}"):
            CheckpointLock(str(tmp_path / "cp")).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    lock = CheckpointLock(str(tmp_path / "cp"))
    assert lock.acquire()
    lock.release()


def test_a_remote_checkpoint_is_not_locked_here(tmp_path):
    lock = CheckpointLock("hdfs://nn:8020/groupscope/checkpoint")
    assert not lock.acquire()
    lock.release()  # nothing to release: harmless
