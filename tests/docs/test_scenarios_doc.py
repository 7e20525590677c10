"""The README's list of simulator scenarios is the simulator's: a scenario added to one is added to the other."""

from __future__ import annotations

import re

from streaming.simulator.scenarios import scenario_names
from tests.cli_helpers import REPO


def test_readme_lists_every_scenario_and_no_other():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^Scenarios: (.*?)\. The scenarios", readme, re.M | re.S)
    assert found, "the README's 'Scenarios:' paragraph"
    listed = [re.sub(r"\s*\(.*\)$", "", name.strip()).removeprefix("and ") for name in
              found.group(1).replace("\n", " ").split(",")]
    assert sorted(listed) == sorted(scenario_names()), listed
