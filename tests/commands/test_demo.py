"""``groupscope demo`` (``streaming/commands/demo.py``) as a command, without starting the demo: its flags become
the demo's options, a scenario it does not know (or the benchmark's) and clashing ports are refused in one line
before Java is looked for, and what goes wrong in a run ends in one line with its status. The demo itself runs in
``tests/streaming/test_demo.py``."""

from __future__ import annotations

import errno
import os
import sys

import pytest
from click.testing import CliRunner, Result

import streaming.commands.demo as command
import streaming.commands.run as run
from streaming.commands.demo import BENCHMARK_ONLY, demo
from streaming.commands.demo_stack import DemoDirError, DemoOptions, PortInUse
from streaming.config import ConfigError
from streaming.simulator.scenarios import SCENARIOS

REAL_EXIT_UNLESS_JAVA = run.exit_unless_java  # kept before a fixture replaces it


@pytest.fixture
def started(monkeypatch) -> list[DemoOptions]:
    """The options each demo would have started with (the demo itself replaced; it returns status 0)."""
    calls: list[DemoOptions] = []

    def run_demo(options: DemoOptions, echo) -> int:
        calls.append(options)
        return 0

    monkeypatch.setattr(command, "run_demo", run_demo)
    monkeypatch.setattr(run, "exit_unless_java", lambda _: None)
    monkeypatch.setattr(os, "_exit", sys.exit)  # the command's last word would end the test process
    return calls


def _demo(*args: str) -> Result:
    return CliRunner().invoke(demo, list(args), catch_exceptions=False)


def test_with_no_flags_the_demo_runs_every_scenario_on_the_documented_defaults(started):
    assert _demo().exit_code == 0
    assert started == [DemoOptions(scenarios=("all",), seed=7, speed=1.0, duration_s=None, directory=None,
                                   metrics_port=9308, live=True, clusters=1, api_port=None)]


def test_every_flag_reaches_the_options(started, tmp_path):
    result = _demo("--scenario", "storm, lagging", "--scenario", "paused", "--seed", "3", "--speed", "2.5",
                   "--duration", "30", "--dir", str(tmp_path), "--metrics-port", "0", "--no-live", "--clusters", "2",
                   "--api-port", "8080")
    assert result.exit_code == 0, result.stderr
    assert started == [DemoOptions(scenarios=("storm, lagging", "paused"), seed=3, speed=2.5, duration_s=30.0,
                                   directory=str(tmp_path), metrics_port=0, live=False, clusters=2, api_port=8080)]


@pytest.mark.parametrize("flag, value", [("--speed", "0.05"), ("--speed", "101"), ("--duration", "0.5"),
                                         ("--metrics-port", "65536"), ("--api-port", "-1"), ("--clusters", "0"),
                                         ("--clusters", "5"), ("--seed", "seven")])
def test_a_value_out_of_range_is_refused_naming_its_flag(started, flag, value):
    result = _demo(flag, value)
    assert result.exit_code == 2 and f"'{flag}'" in result.stderr and started == []


def _refusal(*args: str) -> str:
    result = _demo(*args)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    return line


def test_an_unknown_scenario_is_one_line_listing_the_demos_scenarios(started, monkeypatch):
    monkeypatch.setattr(run, "exit_unless_java", lambda _: pytest.fail("Java was looked for first"))
    known = [name for name in SCENARIOS if name != BENCHMARK_ONLY]
    assert _refusal("--scenario", "storm,stormy") == \
        f"groupscope demo: unknown scenario 'stormy'; known: all, {', '.join(known)}"
    assert started == []


def test_the_benchmark_workload_is_not_a_demo_scenario(started):
    line = _refusal("--scenario", f"lagging,{BENCHMARK_ONLY}")
    assert line.startswith(f"groupscope demo: {BENCHMARK_ONLY} is a benchmark workload (groupscope simulate")
    assert started == []


def test_a_scenario_list_of_only_commas_names_no_scenario(started):
    assert _refusal("--scenario", " , ,") == "groupscope demo: no scenario given"


def test_the_api_and_metrics_on_one_port_are_refused_but_two_free_ports_are_not(started):
    assert _refusal("--api-port", "9400", "--metrics-port", "9400") == (
        "groupscope demo: --api-port and --metrics-port are both 9400; give them different ports (0: any free port)")
    assert _refusal("--api-port", "9308").startswith("groupscope demo: --api-port and --metrics-port are both 9308")
    assert started == []
    assert _demo("--api-port", "0", "--metrics-port", "0").exit_code == 0, "0 is any free port, for each"


def test_the_scenario_help_lists_every_scenario_but_the_benchmark():
    help_text = command._scenario_help()
    listed = [name.strip() for name in help_text.split("all (every one listed),")[1].rstrip(".").split(",")]
    assert listed == [name for name in SCENARIOS if name != BENCHMARK_ONLY]
    assert "scale-out" in listed and BENCHMARK_ONLY not in listed


def test_without_java_the_demo_is_not_started(started, monkeypatch):
    import streaming.spark.java as java

    monkeypatch.setattr(run, "exit_unless_java", REAL_EXIT_UNLESS_JAVA)
    monkeypatch.setattr(java, "java_problem", lambda: "Spark needs Java 17 or newer; none was found")
    result = _demo()
    assert result.exit_code == 1 and started == []
    assert result.stderr.splitlines() == ["groupscope demo: Spark needs Java 17 or newer; none was found"]


def _failing(exc: BaseException):
    def run_demo(options: DemoOptions, echo) -> int:
        raise exc
    return run_demo


@pytest.mark.parametrize("raised, status, lines", [
    (ConfigError(["GROUPSCOPE_SPARK__MASTR: unknown setting", "GROUPSCOPE_METRICS__PORT: not a number"]), 2,
     ["groupscope demo: GROUPSCOPE_SPARK__MASTR: unknown setting",
      "groupscope demo: GROUPSCOPE_METRICS__PORT: not a number"]),
    (DemoDirError("/srv/x is not empty and was not made by groupscope demo"), 2,
     ["groupscope demo: /srv/x is not empty and was not made by groupscope demo"]),
    (PortInUse("API port 8080 is already in use"), 1, ["groupscope demo: API port 8080 is already in use"]),
    (OSError(errno.EADDRINUSE, "Address already in use"), 1,
     ["groupscope demo: metrics port 9308 is already in use (pick another with --metrics-port, 0 for any free port)"]),
    (OSError(errno.ENOSPC, "No space left on device"), 1, ["groupscope demo: [Errno 28] No space left on device"]),
    (RuntimeError("the embedded broker did not start"), 1, ["groupscope demo: the embedded broker did not start"]),
    (RuntimeError(), 1, ["groupscope demo: stopped by an unexpected error (RuntimeError)"]),
], ids=["config", "folder", "port", "port-taken-late", "os-error", "error", "error-without-message"])
def test_what_goes_wrong_in_a_run_is_said_in_one_line_with_its_status(started, monkeypatch, raised, status, lines):
    monkeypatch.setattr(command, "run_demo", _failing(raised))
    result = _demo()
    assert (result.exit_code, result.stderr.splitlines()) == (status, lines)


def test_the_demos_own_status_is_the_commands(started, monkeypatch):
    monkeypatch.setattr(command, "run_demo", lambda options, echo: 3)
    assert _demo().exit_code == 3
