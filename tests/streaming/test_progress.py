"""Progress of long work (``streaming.progress``): under a pipe and in logs a line every few seconds with records
and bytes done of their totals, the rate and the time left; on a terminal a bar with the same figures; nothing at
all for short work. The intervals are shortened here (the commands use a line every 15 s, nothing for 3 s)."""

from __future__ import annotations

import io
import logging
import os
import re
import time

from streaming.progress import OffsetsRead, Progress
from tests.cli_helpers import run_cli

LINE = re.compile(r"^backfill: ([\d,]+) of 1,000,000 records, ([\d.]+) MB of 50\.0 MB \((\d+)%\), ([\d,]+) records/s, "
                  r"[\d.]+ MB/s, about (\d+ s|\d+ min \d+ s) left$")


def _work(progress: Progress, seconds: float, with_bytes: bool = True) -> None:
    """Steady work: a fiftieth of the total every ``seconds / 50``."""
    for step in range(1, 51):
        time.sleep(seconds / 50)
        progress.update(records=step * 20_000, bytes=step * 1_000_000 if with_bytes else None)


def test_under_a_pipe_a_line_every_interval_with_the_figures():
    out = io.StringIO()
    started = time.monotonic()
    with Progress("backfill", total_records=1_000_000, total_bytes=50_000_000, stream=out, every_s=0.4,
                  quiet_s=0.1) as progress:
        _work(progress, 2.0)
    took = time.monotonic() - started
    lines = out.getvalue().splitlines()
    assert 3 <= len(lines) <= took / 0.4, (took, lines)  # one every 0.4 s, the first after 0.4 s
    found = [LINE.match(line) for line in lines]
    assert all(found), lines
    done = [int(m.group(1).replace(",", "")) for m in found]
    assert done == sorted(done) and 0 < done[0] < 1_000_000
    for m in found:
        assert 10_000 < int(m.group(4).replace(",", "")) < 1_000_000  # about 500,000 records/s
        assert int(m.group(3)) == round(float(m.group(2)) / 50 * 100)


def test_short_work_says_nothing():
    out = io.StringIO()
    with Progress("decode", total_bytes=1_000, stream=out, every_s=0.4, quiet_s=0.1) as progress:
        progress.update(records=10, bytes=1_000)
    with Progress("decode", total_bytes=1_000, stream=out, terminal=True, quiet_s=0.3) as progress:
        time.sleep(0.1)
    assert out.getvalue() == ""


def test_in_logs_the_lines_go_to_the_logger(caplog):
    logger = logging.getLogger("groupscope.test-progress")
    with caplog.at_level(logging.INFO, logger=logger.name):
        with Progress("catching up", total_records=1_000_000, logger=logger, every_s=0.3, quiet_s=0.1) as progress:
            _work(progress, 1.0, with_bytes=False)
    messages = [r.getMessage() for r in caplog.records if r.name == logger.name]
    assert messages and all(re.match(r"catching up: [\d,]+ of 1,000,000 records \(\d+%\), [\d,]+ records/s, about \d+ s left$",
                                     m) for m in messages), messages


def test_on_a_terminal_a_bar_with_the_figures():
    primary, secondary = os.openpty()
    terminal = os.fdopen(secondary, "w")
    try:
        with Progress("decode", total_records=1_000_000, total_bytes=50_000_000, stream=terminal,
                      quiet_s=0.1) as progress:
            _work(progress, 1.5)
        terminal.flush()
        shown = b""
        os.set_blocking(primary, False)
        while True:
            try:
                chunk = os.read(primary, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        terminal.close()
        os.close(primary)
    text = shown.decode(errors="replace")
    assert "━" in text and "decode" in text, text[-500:]
    last = re.findall(r"decode .*?(\d+)%  (\d+)k/1\.0M records  ([\d.]+)/50\.0 MB  \d+k rec/s  \d+ s left", text)
    assert last, text[-500:]  # every figure, within 80 columns
    share, records, megabytes = last[-1]
    assert int(share) == round(float(megabytes) * 2) and abs(int(records) / 10 - int(share)) <= 2


def test_a_catch_up_counts_offsets_read_of_the_ranges():
    read = OffsetsRead({0: (100, 200), 1: (0, 50), 2: (10, 10)})
    assert read.total == 150
    assert read.read_to({0: 150}) == 50
    assert read.read_to({1: 60, 7: 1_000}) == 100  # past the end counts to the end; unknown partitions do not count
    assert read.read_to({0: 90}) == 50  # before the start counts nothing


def test_decode_of_a_small_directory_shows_no_progress(segment_dirs):
    result = run_cli("decode", str(segment_dirs["d_transactions"]))
    assert result.returncode == 0 and result.stderr == "", result.stderr
