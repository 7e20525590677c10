"""groupscope's configuration (``streaming.config``): one YAML file, ``GROUPSCOPE_*`` environment variables and
flags, merged in that order of precedence and checked as a whole. Every bad setting is one line naming where it came
from (the file, the variable, ``clusters.NAME``) and the setting it may have meant; never ignored, never a
traceback. What the command line does with those lines is in the feature files beside this one."""

from __future__ import annotations

import pytest

from streaming.config import ConfigError, load_settings, redacted, unknown_environment
from tests.cli_helpers import REPO


# ---- GROUPSCOPE_* environment variables ------------------------------------------------------------------------------

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


# ---- the kafka section, as librdkafka checks it ----------------------------------------------------------------------

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


# ---- several clusters ------------------------------------------------------------------------------------------------

SHARED = {
    "kafka": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "groupscope",
              "sasl.password": "secret"},
    "spark": {"checkpoint": "/ckpt"},
    "delta": {"path": "s3://bucket/delta"},
    "model": {"stop_after_seconds": 60},
    "clusters": {
        "eu": {"kafka": {"bootstrap.servers": "eu:9092"}},
        "us": {"kafka": {"bootstrap.servers": "us:9092", "sasl.username": "us-user"}, "model": {"storm_rebalances": 5},
               "delta_path": "/elsewhere/us"},
    },
}


def test_each_cluster_is_the_shared_settings_with_its_own_over_them():
    eu, us = load_settings(None, SHARED).cluster_settings()
    assert (eu.cluster, us.cluster) == ("eu", "us")
    assert eu.kafka == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "groupscope",
                        "sasl.password": "secret", "bootstrap.servers": "eu:9092"}
    assert us.kafka["sasl.username"] == "us-user" and us.kafka["security.protocol"] == "SASL_SSL"
    assert eu.model.stop_after_seconds == us.model.stop_after_seconds == 60
    assert (eu.model.storm_rebalances, us.model.storm_rebalances) == (3, 5)
    assert (eu.spark.checkpoint, us.spark.checkpoint) == ("/ckpt/eu", "/ckpt/us")
    assert (eu.delta.path, us.delta.path) == ("s3://bucket/delta/eu", "/elsewhere/us")
    assert not eu.clusters and not us.clusters
    assert "secret" not in str(redacted(load_settings(None, SHARED)))


def test_the_example_config_loads():
    eu, us = load_settings(str(REPO / "examples" / "several-clusters.yaml")).cluster_settings()
    assert (eu.cluster, us.cluster) == ("prod-eu", "prod-us")
    assert us.heartbeat.topic == "groupscope-heartbeat-us" and eu.heartbeat.topic == "groupscope-heartbeat"
    assert us.kafka["sasl.password"] == eu.kafka["sasl.password"] and us.kafka["sasl.username"] == "groupscope-us"
    assert us.delta.path == "/var/lib/groupscope/delta/prod-us"


def test_a_single_cluster_config_is_unchanged():
    s = load_settings(None, {"cluster": "prod", "kafka": {"bootstrap.servers": "k:9092"}})
    assert s.cluster_settings() == [s]
    assert s.spark.checkpoint == "groupscope-data/checkpoint" and s.delta.path == "groupscope-data/delta"


@pytest.mark.parametrize("clusters, line", [
    ({"eu": {"model": {"storm_flaps": 0}, "kafka": {"bootstrap.servers": "x"}}},
     "config: clusters.eu: model.storm_flaps: Input should be greater than or equal to 1"),
    ({"eu": {"kafka": {}}}, "config: clusters.eu.kafka: bootstrap.servers is required: each cluster names its own"),
    ({"eu": {"modle": {}}}, "config: clusters.eu.modle: unknown setting"),
    ({"a/b": {"kafka": {"bootstrap.servers": "x"}}}, "config: clusters: cluster name 'a/b': letters, digits"),
])
def test_a_bad_cluster_is_one_line_naming_it(clusters, line):
    with pytest.raises(ConfigError) as err:
        load_settings(None, {"clusters": clusters})
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(line), err.value.lines


# ---- the file, precedence and secrets --------------------------------------------------------------------------------

def test_spark_settings_written_as_yaml_booleans_and_numbers_are_spark_strings(tmp_path):
    """``spark.conf`` values go to Spark as strings; YAML's ``true`` and ``3`` are written as Spark spells them."""
    path = tmp_path / "groupscope.yaml"
    path.write_text("spark:\n  conf:\n    spark.python.worker.reuse: true\n    spark.sql.shuffle.partitions: 3\n")
    assert load_settings(str(path)).spark.conf == {"spark.python.worker.reuse": "true",
                                                   "spark.sql.shuffle.partitions": "3"}


def test_flags_win_over_the_environment_which_wins_over_the_file(tmp_path, monkeypatch):
    path = tmp_path / "groupscope.yaml"
    path.write_text("metrics:\n  port: 9001\n  host: 127.0.0.1\nmodel:\n  storm_flaps: 5\n")
    assert load_settings(str(path)).metrics.port == 9001
    monkeypatch.setenv("GROUPSCOPE_METRICS__PORT", "9002")
    from_env = load_settings(str(path))
    assert (from_env.metrics.port, from_env.metrics.host, from_env.model.storm_flaps) == (9002, "127.0.0.1", 5), \
        "a variable replaces one setting, not its section"
    assert load_settings(str(path), {"metrics": {"port": 9003}}).metrics.port == 9003


def test_a_short_variable_for_the_servers_keeps_the_files_other_kafka_settings(tmp_path, monkeypatch):
    path = tmp_path / "groupscope.yaml"
    path.write_text("kafka:\n  bootstrap.servers: file:9092\n  client.id: from-file\n")
    monkeypatch.setenv("GROUPSCOPE_KAFKA_BOOTSTRAP", "env:9092")
    assert load_settings(str(path)).kafka == {"bootstrap.servers": "env:9092", "client.id": "from-file"}


def test_an_empty_file_is_the_defaults(tmp_path):
    path = tmp_path / "groupscope.yaml"
    path.write_text("# nothing set yet\n")
    assert load_settings(str(path)) == load_settings(None)


@pytest.mark.parametrize("text, line", [
    ("metrics:\n  port: 9\nspark: @x\n", "not valid YAML at line 3"),  # '@' is reserved: it cannot start a value
    ("- metrics\n- spark\n", "expected a mapping of settings at the top level"),
])
def test_a_file_that_is_no_settings_is_one_line_naming_it(tmp_path, text, line):
    path = tmp_path / "groupscope.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(str(path))
    assert err.value.lines == [f"config file {path}: {line}"]


def test_a_missing_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_settings(str(tmp_path / "nowhere.yaml"))
    assert err.value.lines == [f"config file {tmp_path / 'nowhere.yaml'}: No such file or directory"]


@pytest.mark.parametrize("overrides, line", [
    ({"kafka": {"client.id": "x"}}, "config: kafka: bootstrap.servers is required"),
    ({"heartbeat": {"include_topics": "orders("}}, "config: heartbeat.include_topics: not a regular expression: "),
    ({"metrics": {"port": 65536}}, "config: metrics.port: Input should be less than or equal to 65535"),
    ({"source": {"reader": "jdbc"}}, "config: source.reader: Input should be 'fetch' or 'consumer'"),
])
def test_a_bad_value_in_a_section_is_one_line_naming_the_setting(overrides, line):
    with pytest.raises(ConfigError) as err:
        load_settings(None, overrides)
    assert len(err.value.lines) == 1 and err.value.lines[0].startswith(line), err.value.lines


def test_the_http_api_needs_the_metrics_endpoint():
    with pytest.raises(ConfigError) as err:
        load_settings(None, {"api": {"enabled": True}, "metrics": {"enabled": False}})
    (line,) = err.value.lines
    assert line.startswith("config: api.enabled") and "metrics.enabled" in line, line


def test_secrets_are_masked_wherever_the_settings_are_shown():
    settings = load_settings(None, {
        "kafka": {"bootstrap.servers": "k:9092", "sasl.username": "u", "sasl.password": "p1",
                  "ssl.keystore.password": "p2", "ssl.key.pem": "p3"},
        "delta": {"storage_options": {"AWS_SECRET_ACCESS_KEY": "p4", "AWS_REGION": "eu-west-1"}}})
    shown = redacted(settings)
    assert shown["kafka"] == {"bootstrap.servers": "k:9092", "sasl.username": "u", "sasl.password": "***",
                              "ssl.keystore.password": "***", "ssl.key.pem": "***"}
    assert shown["delta"]["storage_options"] == {"AWS_SECRET_ACCESS_KEY": "***", "AWS_REGION": "eu-west-1"}
    assert settings.kafka["sasl.password"] == "p1", "masking the view leaves the settings alone"


def test_a_clusters_folders_are_named_after_it_under_the_shared_ones():
    eu, = load_settings(None, {"clusters": {"eu": {"kafka": {"bootstrap.servers": "eu:9092"}}},
                               "spark": {"checkpoint": "s3a://bucket/cp/"}}).cluster_settings()
    assert eu.spark.checkpoint == "s3a://bucket/cp/eu", "no doubled slash inside a URI"
    assert eu.delta.path == "groupscope-data/delta/eu"
