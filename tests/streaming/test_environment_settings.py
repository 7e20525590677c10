"""Settings from ``GROUPSCOPE_*`` environment variables: a variable that names no setting, or holds a bad value, is
one line naming the variable (and the setting it may have meant), never ignored and never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streaming.config import ConfigError, load_settings, unknown_environment
from tests.cli_helpers import REPO


def test_a_variable_setting_a_section_is_read(monkeypatch):
    monkeypatch.setenv("GROUPSCOPE_MODEL__STORM_FLAPS", "4")
    monkeypatch.setenv("GROUPSCOPE_METRICS_PORT", "9555")
    settings = load_settings(None)
    assert settings.model.storm_flaps == 4 and settings.metrics.port == 9555


def test_a_misspelt_section_is_an_error_with_the_nearest_name(monkeypatch):
    monkeypatch.setenv("GROUPSCOPE_MODLE__STORM_FLAPS", "4")
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    assert err.value.lines == ["environment: GROUPSCOPE_MODLE__STORM_FLAPS: no setting 'modle' "
                               "(did you mean GROUPSCOPE_MODEL__STORM_FLAPS?)"]


def test_variables_of_other_parts_of_the_product_are_not_settings_and_are_left_alone():
    env = {"GROUPSCOPE_DEMO_DIR": "/x", "GROUPSCOPE_PROMETHEUS_URL": "http://p", "GROUPSCOPE_KAFKA_BOOTSTRAP": "k:1",
           "GROUPSCOPE_API__PORT": "1", "PATH": "/bin", "GROUPSCOPE_NOTHING": "1"}
    assert unknown_environment(env) == [
        "environment: GROUPSCOPE_NOTHING: no setting 'nothing' (sections: api, cluster, clusters, delta, heartbeat, "
        "kafka, metrics, model, source, spark; short names: GROUPSCOPE_KAFKA_BOOTSTRAP, GROUPSCOPE_METRICS_PORT, "
        "GROUPSCOPE_DELTA_PATH, GROUPSCOPE_CHECKPOINT, GROUPSCOPE_CLUSTER)"]


def test_a_name_near_a_short_one_is_pointed_at_it():
    """--bootstrap on the command line makes GROUPSCOPE_BOOTSTRAP the likeliest guess for the variable."""
    assert unknown_environment({"GROUPSCOPE_BOOTSTRAP": "k:1", "GROUPSCOPE_METRICS_PROT": "1"}) == [
        "environment: GROUPSCOPE_BOOTSTRAP: no setting 'bootstrap' (did you mean GROUPSCOPE_KAFKA_BOOTSTRAP?)",
        "environment: GROUPSCOPE_METRICS_PROT: no setting 'metrics_prot' (did you mean GROUPSCOPE_METRICS_PORT?)"]


def test_every_bad_variable_is_said_together_with_the_nearest_setting(monkeypatch):
    monkeypatch.setenv("GROUPSCOPE_BOOTSTRAP", "k:1")
    monkeypatch.setenv("GROUPSCOPE_MODEL__STOP_AFTER_SECOND", "3")
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    assert err.value.lines == [
        "environment: GROUPSCOPE_BOOTSTRAP: no setting 'bootstrap' (did you mean GROUPSCOPE_KAFKA_BOOTSTRAP?)",
        "environment: GROUPSCOPE_MODEL__STOP_AFTER_SECOND: model.stop_after_second: unknown setting (did you mean "
        "GROUPSCOPE_MODEL__STOP_AFTER_SECONDS?)"]


def test_a_misspelt_key_in_the_file_gets_the_nearest_name(tmp_path):
    config = tmp_path / "groupscope.yaml"
    config.write_text("hearbeat:\n  interval_seconds: 2\nmodel:\n  stop_after_second: 3\ndelta:\n  maintenance:\n"
                      "    vacum_retention_hours: 1\nmetrics:\n  colour: red\n")
    with pytest.raises(ConfigError) as err:
        load_settings(str(config))
    assert sorted(err.value.lines) == [
        f"{config}: delta.maintenance.vacum_retention_hours: unknown setting (did you mean "
        "delta.maintenance.vacuum_retention_hours?)",
        f"{config}: hearbeat: unknown setting (did you mean heartbeat?)",
        f"{config}: metrics.colour: unknown setting",
        f"{config}: model.stop_after_second: unknown setting (did you mean model.stop_after_seconds?)"]


@pytest.mark.parametrize("name, value, line", [
    ("GROUPSCOPE_MODEL__STORM_FLAPS", "many", "environment: GROUPSCOPE_MODEL__STORM_FLAPS: model.storm_flaps: Input "
                                              "should be a valid integer"),
    ("GROUPSCOPE_MODEL__STORMFLAPS", "3", "environment: GROUPSCOPE_MODEL__STORMFLAPS: model.stormflaps: unknown "
                                          "setting"),
    ("GROUPSCOPE_METRICS_PORT", "ninety", "environment: GROUPSCOPE_METRICS_PORT: metrics.port: Input should be a "
                                          "valid integer"),
])
def test_a_bad_value_names_the_variable_it_came_from(monkeypatch, name, value, line):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as err:
        load_settings(None)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(line), err.value.lines


def test_the_command_line_says_it_in_one_line_and_exits_2(tmp_path):
    env = {**os.environ, "GROUPSCOPE_SPRAK__MASTER": "local[1]"}
    proc = subprocess.run([sys.executable, "-m", "streaming.commands.cli", "run", "--delta-path", str(tmp_path / "d"),
                           "--checkpoint", str(tmp_path / "c"), "--duration", "1"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == ["groupscope: environment: GROUPSCOPE_SPRAK__MASTER: no setting 'sprak' (did "
                                        "you mean GROUPSCOPE_SPARK__MASTER?)"], proc.stderr
    assert not (tmp_path / "c").exists()  # nothing started
