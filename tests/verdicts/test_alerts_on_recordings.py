"""The storm alert, unit-tested by ``promtool test rules`` on input series produced by replaying real recordings.

Each recording is replayed through the job's own step; after every batch its ``groups`` rows go into the metrics
sink and, every 15 s of the recording's clock, the sink is scraped. The scraped storm series become a promtool test
file whose expectations are the recording's labels: ``KafkaConsumerGroupRebalanceStorm`` fires for a group labelled
``expect: storm`` while the replay says its storm is active, and never for a group labelled ``never: storm``
(rolling restarts, formation). promtool then evaluates the real rule file against those series.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from streaming.offline.recording import load_recording
from streaming.offline.recording.replay import replay_batches
from streaming.sinks.prometheus import MetricsServer, MetricsState
from streaming.job.step import StepConfig
from tests.conftest import captures_dir
from tests.dashboards.promtools import require, run

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "alerts" / "groupscope.rules.yml"
STEP_S = 15
SERIES = ("kafka_consumergroup_rebalance_storm_active", "kafka_consumergroup_rebalance_storms_total",
          "kafka_consumergroup_rolling_restarts_total")
RECORDINGS = ["storm_crashloop", "kip848_storm_and_rolling", "rolling_restart_classic"]


def scraped_series(path: Path) -> tuple[dict[tuple[str, str], list[float]], int]:
    """``{(metric, group): [value every 15 s]}`` from replaying the recording, and the number of points."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    rec = load_recording(path)
    state = MetricsState()
    server = MetricsServer(state, cluster="rec", process_metrics=False)
    out: dict[tuple[str, str], list[float]] = {}
    points = 0
    next_scrape = rec.samples[0].t_ms
    last_shard = rec.partitions[-1]
    for t_ms, shard, tables in replay_batches(rec, StepConfig()):
        if "groups" in tables:
            state.apply_batch(tables["groups"].to_pylist())
        if shard != last_shard:
            continue  # scrape once every shard had this sample's batch
        if t_ms >= next_scrape:
            next_scrape += STEP_S * 1000
            seen = {}
            for fam in text_string_to_metric_families(generate_latest(server.registry).decode()):
                for s in fam.samples:
                    if s.name in SERIES:
                        seen[(s.name, s.labels["group"])] = s.value
            for key in set(out) | set(seen):
                out.setdefault(key, [float("nan")] * points).append(seen.get(key, float("nan")))
            points += 1
    return out, points


def storm_annotations(group: str, cluster: str) -> dict[str, str]:
    """The storm rule's annotations as Prometheus renders them for one group (its templates use only labels)."""
    rule = next(r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]
                if r.get("alert") == "KafkaConsumerGroupRebalanceStorm")
    return {k: v.replace("{{ $labels.group }}", group).replace("{{ $labels.cluster }}", cluster)
            for k, v in rule["annotations"].items()}


def promtool_values(values: list[float]) -> str:
    return " ".join("_" if v != v else str(int(v)) for v in values)


@pytest.mark.parametrize("name", RECORDINGS)
def test_storm_alert_on_replayed_recording(name: str, tmp_path: Path):
    promtool = require("promtool")
    path = captures_dir() / "conformance" / "verdicts" / name
    labels = json.loads((path / "labels.json").read_text())
    series, points = scraped_series(path)
    storm_groups = {lb["group"] for lb in labels["labels"] if lb.get("expect") == "storm"}
    never_storm = {lb["group"] for lb in labels["labels"] if "storm" in lb.get("never", [])}
    input_series = [{"series": f'groupscope_caught_up{{cluster="rec",instance="gs",job="groupscope"}}',
                     "values": f"1x{points}"}]
    for (metric, group), values in sorted(series.items()):
        input_series.append({"series": f'{metric}{{cluster="rec",group="{group}",instance="gs",job="groupscope"}}',
                             "values": promtool_values(values)})
    cases = []
    fired = set()
    for k in range(points):
        firing = sorted(g for (m, g), v in series.items() if m == SERIES[0] and v[k] == 1)
        fired.update(firing)
        cases.append({"eval_time": f"{k * STEP_S}s", "alertname": "KafkaConsumerGroupRebalanceStorm",
                      "exp_alerts": [{"exp_labels": {"severity": "warning", "cluster": "rec", "group": g,
                                                     "instance": "gs", "job": "groupscope"},
                                       "exp_annotations": storm_annotations(g, "rec")} for g in firing]})
    # The recording's labels decide what must fire, not the replay: every expected storm pages at least once,
    # and no group labelled "never storm" ever does.
    assert storm_groups <= fired, f"{name}: storm groups {storm_groups - fired} never page"
    assert not (never_storm & fired), f"{name}: {never_storm & fired} page although labelled never storm"
    test_file = tmp_path / f"{name}.test.yml"
    test_file.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": f"{STEP_S}s",
                                         "tests": [{"interval": f"{STEP_S}s", "input_series": input_series,
                                                    "alert_rule_test": cases}]}, sort_keys=False))
    result = run([promtool, "test", "rules", str(test_file)])
    assert result.returncode == 0, result.stdout + result.stderr
