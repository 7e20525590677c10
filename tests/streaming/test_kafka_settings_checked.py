"""A ``kafka`` setting librdkafka refuses stops ``groupscope run`` with one line and exit status 2, before anything
starts. The check itself (one line naming the section and the cluster) is in ``tests/streaming/test_config.py``."""

from __future__ import annotations

from tests.cli_helpers import run_cli


def test_the_command_line_stops_before_starting(tmp_path):
    config = tmp_path / "groupscope.yaml"
    config.write_text("kafka:\n  bootstrap.servers: localhost:9092\n  sasl.mechanismz: PLAIN\n")
    proc = run_cli("run", "--config", str(config), "--checkpoint", str(tmp_path / "c"), "--delta-path",
                   str(tmp_path / "d"), "--duration", "1")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f'groupscope: {config}: kafka: No such configuration property: '
                                        '"sasl.mechanismz"'], proc.stderr
    assert not (tmp_path / "c").exists()
