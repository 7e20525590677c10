"""``groupscope record OUT_DIR``: captures a recording of a live cluster for ``groupscope replay``.

Why a command: the verdicts are checked on what real clusters write, and the person who saw a verdict go wrong
is the one who can capture the evidence. One command, pointed at the cluster, leaves a folder that replays on
any machine. Bad input is one line and exit status 2; Ctrl-C (or SIGTERM) ends the capture cleanly, and every
ending prints one summary line.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from pathlib import Path

import click

from streaming.kafka.capture import CaptureError, CaptureOptions, capture, check_out_dir

__all__ = ["record"]

DEFAULT_MAX_BYTES = 256 * 1024 * 1024


def _fail(message: str) -> None:
    click.echo(f"groupscope record: {message}", err=True)
    sys.exit(2)


def _patterns(groups: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    out = []
    for g in groups:
        try:
            out.append(re.compile(g))
        except re.error as exc:
            _fail(f"--group {g!r} is not a regular expression: {exc}")
    return tuple(out)


def _kafka_settings(bootstrap: str | None, config_path: str | None) -> dict[str, str]:
    """The ``kafka`` section of the config (security settings and the like), with ``--bootstrap`` over it."""
    kafka: dict[str, str] = {}
    if config_path:
        from streaming.config import ConfigError, load_settings

        try:
            kafka = dict(load_settings(config_path).kafka)
        except ConfigError as exc:
            _fail(str(exc))
    if bootstrap:
        kafka["bootstrap.servers"] = bootstrap
    if not kafka.get("bootstrap.servers"):
        _fail("no Kafka to record: give --bootstrap HOST:PORT (or a --config whose kafka section names "
              "bootstrap.servers)")
    return kafka


@click.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option("--bootstrap", metavar="HOST:PORT", help="Kafka's bootstrap servers (over the config's).")
@click.option("--duration", "duration_s", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Stop after S seconds (default: until Ctrl-C).")
@click.option("--group", "groups", multiple=True, metavar="REGEX",
              help="Only groups whose whole id matches REGEX (repeatable; default: every group).")
@click.option("--max-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_BYTES, show_default=True,
              metavar="N", help="Stop once the recording would exceed N bytes.")
@click.option("--from-beginning", is_flag=True,
              help="Read __consumer_offsets from its start (default: from its current end).")
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="groupscope YAML config whose kafka section (security, SASL, SSL...) to use.")
def record(out_dir: str, bootstrap: str | None, duration_s: float | None, groups: tuple[str, ...], max_bytes: int,
           from_beginning: bool, config_path: str | None) -> None:
    """Capture a recording of a live cluster into OUT_DIR (new or empty), for `groupscope replay OUT_DIR`:
    the __consumer_offsets records as a read_committed consumer reads them (records.jsonl) and, every second, the
    log ends of the watched groups' partitions and of __consumer_offsets (end_offsets.jsonl)."""
    from streaming.kafka.client import KafkaAccess, KafkaUnavailable

    patterns = _patterns(groups)
    folder = Path(out_dir)
    try:
        check_out_dir(folder)
    except CaptureError as exc:
        _fail(str(exc))
    access = KafkaAccess(_kafka_settings(bootstrap, config_path))
    try:
        access.wait_reachable()
    except KafkaUnavailable as exc:
        _fail(str(exc))
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    watched = ", ".join(groups) if groups else "every group"
    click.echo(f"groupscope record: recording {watched} at {access.bootstrap} into {folder} (Ctrl-C ends it)",
               err=True)
    try:
        summary = capture(access, CaptureOptions(folder, patterns, duration_s, max_bytes, from_beginning), stop)
    except CaptureError as exc:
        _fail(str(exc))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(summary.line(folder))
