"""``groupscope demo`` as a person meets it: in an 80-column terminal (a pseudo-terminal) twice in the same folder,
and under a pipe. Groups appear; each scenario shows the verdict it exists to show in the live view (or the plain
summary), on /metrics and in the Delta tables; Ctrl-C ends it within seconds without a stack trace; a second run
starts clean; and ``groupscope status`` finds the demo's tables with no flags.

What each scenario must show (docs/verdicts.md): lagging is WARN with its lag growing; stalled (a member that
stops polling but stays in the group until max.poll.interval.ms) is STOP by the stuck-member rule, or STALL;
paused (a member that pauses its partitions and re-commits the same offsets while their lag grows) is STALL;
stopped (every member gone) is STOP; storm is a rebalance storm; rolling-restart is a rolling restart and never a
storm. The piped run lasts long enough (240 s) for the stopped group's lag seconds to outlive the end-offset
history, so they are shown, and stored, as a lower bound.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field

import pyarrow.compute as pc
import pytest

from streaming.commands.status_view import COMPACT_COLUMNS, WHY_INDENT
from streaming.sinks.delta import DeltaSink

pytestmark = pytest.mark.spark

CURSOR = re.compile(r"\x1b\[[0-9;]*[ABCDEFGHJK]|\r")  # moves and erasures: a frame's lines start over
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")
TRACE_MARKERS = ("Traceback", "py4j", "Exception", "\tat org.apache", "ERROR")
SCENARIOS = "lagging,stalled,paused,stopped,storm,rolling-restart"
PIPED_DURATION_S = 160
GROUP_WIDTH = COMPACT_COLUMNS[0][1]


def _slices() -> dict[str, slice]:
    out, at = {}, 0
    for name, width, _ in COMPACT_COLUMNS:
        out[name] = slice(at, at + width)
        at += width + 1
    return out


CELL = _slices()


@dataclass
class Metrics:
    """/metrics of a running demo, scraped every few seconds: every value each group's series took."""

    url: str | None = None
    last: float = 0.0
    scrapes: list[dict[tuple[str, str], float]] = field(default_factory=list)

    def maybe_scrape(self, text: str) -> None:
        if self.url is None:
            found = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", text)
            if not found:
                return
            self.url = found.group(1)
        if time.monotonic() - self.last < 2:
            return
        self.last = time.monotonic()
        try:
            with urllib.request.urlopen(self.url, timeout=3) as response:
                body = response.read().decode()
        except OSError:
            return  # not up yet, or stopping
        series: dict[tuple[str, str], float] = {}
        for name, labels, value in re.findall(r"^(kafka_consumergroup_\w+)\{([^}]*)\} (\S+)$", body, re.M):
            group = re.search(r'group="([^"]*)"', labels)
            verdict = re.search(r'verdict="([^"]*)"', labels)
            if group:
                key = name + (f":{verdict.group(1)}" if verdict else "")
                if not verdict or float(value) == 1:
                    series[(key, group.group(1))] = float(value)
        self.scrapes.append(series)

    def values(self, metric: str, group: str) -> list[float]:
        return [s[(metric, group)] for s in self.scrapes if (metric, group) in s]

    def groups(self) -> set[str]:
        return {g for s in self.scrapes for _, g in s}


@dataclass
class Run:
    proc: subprocess.Popen
    started: float
    fd: int | None = None
    output: bytearray = field(default_factory=bytearray)
    first_groups_s: float | None = None
    exit_after_sigint_s: float | None = None
    metrics: Metrics = field(default_factory=Metrics)

    @property
    def text(self) -> str:
        """What the terminal showed, one screen line per line (frames one after another), without styles."""
        return ANSI.sub("", CURSOR.sub("\n", self.output.decode(errors="replace")))


def _env(tmp_path) -> dict[str, str]:
    # XDG_STATE_HOME: the default demo folder (and what `groupscope status` falls back to) lives under tmp_path.
    return dict(os.environ, COLUMNS="80", LINES="60", TERM="xterm-256color", XDG_STATE_HOME=str(tmp_path / "state"),
                GROUPSCOPE_DEMO_DIR="")


def _demo_args(*extra: str) -> list[str]:
    return [sys.executable, "-m", "streaming.commands.cli", "demo", "--metrics-port", "0", *extra]


def _as_a_shell_starts_a_foreground_job() -> None:
    """Ctrl-C and Ctrl-\\ at their defaults, as a shell sets them for a job it starts in the foreground: a test run
    launched in the background (where SIGINT is ignored, and children inherit that) must still meet the demo as a
    person at a terminal does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def start_in_terminal(tmp_path, *extra: str) -> Run:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(_demo_args(*extra), cwd=tmp_path, stdin=secondary, stdout=secondary, stderr=secondary,
                            env=_env(tmp_path), close_fds=True, start_new_session=True,
                            preexec_fn=_as_a_shell_starts_a_foreground_job)
    os.close(secondary)
    return Run(proc, time.monotonic(), fd=primary)


def pump(run: Run, until, timeout_s: float) -> bool:
    """Reads the terminal (scraping /metrics meanwhile) until ``until(text)`` holds (True) or the time is up or
    the process ended (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([run.fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(run.fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                return until(run.text)
            run.output.extend(chunk)
            if run.first_groups_s is None and re.search(r"consumer groups \([1-9]", run.text):
                run.first_groups_s = time.monotonic() - run.started
        run.metrics.maybe_scrape(run.text)
        if until(run.text):
            return True
        if run.proc.poll() is not None and not ready:
            return until(run.text)
    return False


def ctrl_c(run: Run) -> None:
    """SIGINT to the whole foreground process group, as a terminal's Ctrl-C does; then read to the end."""
    sent = time.monotonic()
    os.killpg(run.proc.pid, signal.SIGINT)
    pump(run, lambda _: False, 20)
    try:
        run.proc.wait(20)
    except subprocess.TimeoutExpired:
        pass  # killed below; assert_clean_stop reports it with what the terminal showed
    finally:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
        os.close(run.fd)
    run.exit_after_sigint_s = time.monotonic() - sent


def renderings(text: str, group: str) -> list[dict[str, str]]:
    """Every rendering of a group's row in the live view, as cells by column name, oldest first."""
    return [{name: line[where].strip() for name, where in CELL.items()} for line in text.splitlines()
            if not line.startswith(WHY_INDENT) and line[:GROUP_WIDTH + 1].rstrip() == group]


def _lags(cells: list[dict[str, str]]) -> list[int]:
    return [int(c["LAG"].replace(",", "")) for c in cells if re.fullmatch(r"[\d,]+", c["LAG"])]


def live_verdicts(text: str) -> dict[str, bool]:
    """Whether the live view has shown each scenario's verdict yet."""
    lagging = renderings(text, "lagging")
    lags = _lags(lagging)
    return {
        "lagging": any(c["STATUS"] == "WARN" for c in lagging) and len(lags) > 1 and lags[-1] > lags[0],
        "stalled": any(c["STATUS"] in ("STOP", "STALL") for c in renderings(text, "stalled")),
        "paused": any(c["STATUS"] == "STALL" for c in renderings(text, "paused")),
        "stopped": any(c["STATUS"] == "STOP" for c in renderings(text, "stopped")),
        "storm": any(c["VERDICT"] == "STORM" for c in renderings(text, "storm")),
        "rolling": any(c["VERDICT"] == "rolling_restart" for c in renderings(text, "rolling")),
    }


def assert_metrics_show_the_verdicts(metrics: Metrics) -> None:
    status = "kafka_consumergroup_status"  # OK=0 WARN=1 STALL=2 STOP=3
    assert 1 in metrics.values(status, "lagging"), metrics.values(status, "lagging")
    lag = metrics.values("kafka_consumergroup_group_sum_lag", "lagging")
    assert len(lag) > 1 and lag[-1] > lag[0], lag
    assert {2, 3} & set(metrics.values(status, "stalled")), metrics.values(status, "stalled")
    assert 2 in metrics.values(status, "paused"), metrics.values(status, "paused")
    assert 3 in metrics.values(status, "stopped"), metrics.values(status, "stopped")
    assert max(metrics.values("kafka_consumergroup_rebalance_storms_total", "storm"), default=0) >= 1
    assert 1 in metrics.values("kafka_consumergroup_rebalance_storm_active", "storm")
    assert max(metrics.values("kafka_consumergroup_rolling_restarts_total", "rolling"), default=0) >= 1
    assert metrics.values("kafka_consumergroup_rebalance_verdict:rolling_restart", "rolling")
    assert set(metrics.values("kafka_consumergroup_rebalance_storms_total", "rolling")) == {0}
    assert set(metrics.values("kafka_consumergroup_rebalance_storm_active", "rolling")) == {0}


def assert_tables_show_the_verdicts(delta) -> None:
    sink = DeltaSink(delta)
    events = sink.read("group_events").select(["group_id", "kind", "new"]).to_pylist()
    statuses = {}
    kinds = {}
    for e in events:
        kinds.setdefault(e["group_id"], set()).add(e["kind"])
        if e["kind"] == "StatusChanged":
            statuses.setdefault(e["group_id"], set()).add(e["new"])
    assert "WARN" in statuses.get("lagging", set()), statuses.get("lagging")
    assert {"STOP", "STALL"} & statuses.get("stalled", set()), statuses.get("stalled")
    assert "STALL" in statuses.get("paused", set()), statuses.get("paused")
    assert "STOP" in statuses.get("stopped", set()), statuses.get("stopped")
    assert "RebalanceStorm" in kinds["storm"], kinds["storm"]
    assert "RollingRestart" in kinds["rolling"] and "RebalanceStorm" not in kinds["rolling"], kinds["rolling"]
    groups = {g["group_id"]: g for g in sink.read("groups").to_pylist()}
    assert groups["storm"]["storms"] >= 1
    assert groups["rolling"]["rolling_restarts"] >= 1 and groups["rolling"]["storms"] == 0
    lag = sink.read("lag")
    lag = lag.filter(pc.equal(lag.column("group_id"), "lagging")).select(["snapshot_time", "lag"]).to_pylist()
    per_snapshot: dict = {}
    for r in lag:
        per_snapshot[r["snapshot_time"]] = per_snapshot.get(r["snapshot_time"], 0) + r["lag"]
    series = [per_snapshot[t] for t in sorted(per_snapshot)]
    assert len(series) > 1 and series[-1] > series[0], series


def assert_clean_stop(run: Run) -> None:
    text = run.text
    assert run.exit_after_sigint_s is not None and run.exit_after_sigint_s < 5, (run.exit_after_sigint_s,
                                                                                 text[-2000:])
    assert run.proc.returncode == 0, text[-3000:]
    stop = text[text.rfind("groupscope demo: stopping"):]
    assert "groupscope demo: stopped" in stop
    for marker in TRACE_MARKERS:
        assert marker not in text, f"{marker!r} in the output:\n{text[-3000:]}"


def _log_tail(folder, lines: int = 20) -> str:
    """The end of a demo's own log (a stalled query says so there, with what Spark says it is doing)."""
    try:
        return "\n".join((folder / "groupscope.log").read_text().splitlines()[-lines:])
    except OSError as exc:
        return f"no log: {exc}"


def test_demo_in_a_terminal_twice_and_under_a_pipe(tmp_path):
    data = tmp_path / "state" / "groupscope" / "demo"
    first = start_in_terminal(tmp_path, "--scenario", SCENARIOS)

    # Meanwhile, under a pipe: a plain summary (no terminal needed), and --duration counted from the start.
    piped_dir = tmp_path / "piped"
    piped_started = time.monotonic()
    piped = subprocess.Popen(_demo_args("--scenario", SCENARIOS, "--duration", str(PIPED_DURATION_S),
                                        "--dir", str(piped_dir)),
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(tmp_path),
                             start_new_session=True)
    piped_out: list[bytes] = []
    piped_ended: list[float] = []

    def read_piped() -> None:
        piped_out.append(piped.stdout.read())
        piped.wait()
        piped_ended.append(time.monotonic())

    reader = threading.Thread(target=read_piped, daemon=True)
    reader.start()

    try:
        all_shown = pump(first, lambda text: all(live_verdicts(text).values()), 240)
        shown = live_verdicts(first.text)
        pump(first, lambda _: False, 4)  # a couple more scrapes of /metrics
    finally:
        ctrl_c(first)
    assert all_shown, (shown, first.text[-4000:], _log_tail(data))
    assert first.first_groups_s is not None and first.first_groups_s < 120, first.first_groups_s
    assert_clean_stop(first)
    assert not any(c["VERDICT"] == "STORM" for c in renderings(first.text, "rolling")), "a rolling restart is no storm"
    view = [line for line in first.text.splitlines()
            if line.startswith(("GROUP ", WHY_INDENT)) or line[:GROUP_WIDTH + 1].rstrip() in live_verdicts("")]
    assert view and all(len(line) <= 80 for line in view), max(view, key=len)  # an 80-column terminal
    assert "groupscope status" in first.text
    assert_metrics_show_the_verdicts(first.metrics)

    # The demo's data sits in the user's state folder, marked as the demo's and ignored by git.
    assert (data / "delta" / "groups").is_dir() and (data / ".gitignore").read_text() == "*\n"
    assert_tables_show_the_verdicts(data / "delta")
    # The embedded broker cannot describe topic configurations, and the demo does not ask it to.
    assert "cannot read its configuration" not in (data / "groupscope.log").read_text()
    status = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "status", "--json"], cwd=tmp_path,
                            env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr
    assert '"group": "storm"' in status.stdout and "demo's tables" in status.stderr

    # Second run, same folder, other scenario: nothing of the first run shows up.
    second = start_in_terminal(tmp_path, "--scenario", "steady")
    try:
        assert pump(second, lambda text: re.search(r"consumer groups \([1-9]", text) is not None, 150), \
            second.text[-3000:]
        pump(second, lambda _: False, 6)  # a few more refreshes and scrapes
    finally:
        ctrl_c(second)
    assert_clean_stop(second)
    for old in ("storm", "rolling", "lagging", "stalled", "paused", "stopped"):
        assert not renderings(second.text, old), old
    assert second.metrics.groups() and all(g.startswith("steady") for g in second.metrics.groups())
    groups = {r["group_id"] for r in DeltaSink(data / "delta").read("groups").to_pylist()}
    assert groups and all(g.startswith("steady") for g in groups), groups

    reader.join(PIPED_DURATION_S + 60)
    if piped.poll() is None:
        os.killpg(piped.pid, signal.SIGKILL)
    piped_text = b"".join(piped_out).decode(errors="replace")
    assert piped.returncode == 0, piped_text[-3000:]
    assert piped_ended and piped_ended[0] - piped_started < PIPED_DURATION_S + 15, "--duration counts from the start"
    assert "\x1b[" not in piped_text, "no terminal codes under a pipe"
    assert re.search(r"^GROUP +STATE +MEMBERS +LAG", piped_text, re.M), piped_text[-3000:]
    for group, verdict in (("lagging", r"WARN"), ("stopped", r"STOP"), ("storm", r"\S+ +STORM"),
                           ("rolling", r"OK +rolling_restart")):  # in the summaries printed every 10 s
        assert re.search(rf"^{group} +\S+ +\d+ +[\d,]+ +>?[\d,.]+ +{verdict}\b", piped_text, re.M), group
    last = piped_text[piped_text.rfind("simulated "):]  # the summary printed at the end
    # Stopped 30 s into the run, long after the job's first heartbeat: its time lag is measured, and it has grown
    # past the few minutes a history that dropped its oldest samples would stop at (a lower bound, ">N").
    found = re.search(r"^stopped +EMPTY +0 +[\d,]+ +([\d,.]+) ", last, re.M)
    assert found and float(found.group(1).replace(",", "")) >= 60, ("lag seconds measured, not bounded", last)
    assert re.search(r"stopped after \d+ s\. Data: .* \(Delta tables commits, group_events, lag, groups", piped_text)
    # --dir's folder is not where `groupscope status` looks by itself: the hint names it.
    assert f"see the groups again with: groupscope status --delta-path {piped_dir / 'delta'}\n" in piped_text
    for marker in TRACE_MARKERS:
        assert marker not in piped_text, marker
    assert_tables_show_the_verdicts(piped_dir / "delta")
    stopped = next(g for g in DeltaSink(piped_dir / "delta").read("groups").to_pylist() if g["group_id"] == "stopped")
    assert stopped["max_lag_seconds_lower_bound"] is False and stopped["max_lag_seconds"] >= 60
    print(f"first groups after {first.first_groups_s:.1f} s; Ctrl-C to exit {first.exit_after_sigint_s:.1f} s "
          f"and {second.exit_after_sigint_s:.1f} s; piped run of {PIPED_DURATION_S} s took "
          f"{piped_ended[0] - piped_started:.1f} s")


def test_the_closing_line_lists_the_tables_written_and_none_before_the_first_batch(tmp_path):
    from streaming.commands.demo_stack import written_tables

    assert written_tables(tmp_path / "delta") == []
    for table in ("groups", "quarantine", "commits"):
        (tmp_path / "delta" / table / "_delta_log").mkdir(parents=True)
    (tmp_path / "delta" / "demo-2" / "lag" / "_delta_log").mkdir(parents=True)  # a second cluster's folder
    (tmp_path / "delta" / "not-a-table").mkdir()
    assert written_tables(tmp_path / "delta") == ["commits", "lag", "groups", "quarantine"]
