"""The ``kafka`` section is checked by librdkafka itself when the configuration is read: a misspelt property or a bad
value is one line naming the section (and the cluster), exit status 2, before anything starts."""

from __future__ import annotations

import pytest

from streaming.config import ConfigError, load_settings
from tests.cli_helpers import run_cli


@pytest.mark.parametrize("kafka, line", [
    ({"sasl.mechanismz": "PLAIN"}, 'config: kafka: No such configuration property: "sasl.mechanismz"'),
    ({"security.protocol": "SASL_PLAINTEXTT"},
     'config: kafka: Invalid value "SASL_PLAINTEXTT" for configuration property "security.protocol"'),
    ({"enable.auto.commit": "maybe"}, 'config: kafka: Expected bool value for "enable.auto.commit": true or false'),
])
def test_a_bad_kafka_setting_is_one_line(kafka, line):
    with pytest.raises(ConfigError) as err:
        load_settings(None, {"kafka": {"bootstrap.servers": "k:9092", **kafka}})
    assert err.value.lines == [line]


def test_good_settings_pass_and_connect_nowhere():
    settings = load_settings(None, {"kafka": {"bootstrap.servers": "no-such-host.invalid:9092",
                                              "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                              "sasl.username": "u", "sasl.password": "p", "fetch.max.bytes": "1000000"}})
    assert settings.kafka["sasl.mechanism"] == "PLAIN"


def test_with_several_clusters_the_line_names_the_cluster():
    with pytest.raises(ConfigError) as err:
        load_settings(None, {"clusters": {"eu": {"kafka": {"bootstrap.servers": "eu:9092"}},
                                          "us": {"kafka": {"bootstrap.servers": "us:9092", "socket.timeout.ms": "soon"}}}})
    assert err.value.lines == ['config: clusters.us.kafka: Invalid value for configuration property "socket.timeout.ms"'], \
        err.value.lines


def test_the_command_line_stops_before_starting(tmp_path):
    config = tmp_path / "groupscope.yaml"
    config.write_text("kafka:\n  bootstrap.servers: localhost:9092\n  sasl.mechanismz: PLAIN\n")
    proc = run_cli("run", "--config", str(config), "--checkpoint", str(tmp_path / "c"), "--delta-path",
                   str(tmp_path / "d"), "--duration", "1")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f'groupscope: {config}: kafka: No such configuration property: '
                                        '"sasl.mechanismz"'], proc.stderr
    assert not (tmp_path / "c").exists()
