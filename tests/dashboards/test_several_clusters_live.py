"""One endpoint serving two clusters, scraped by a real Prometheus: every dashboard's ``cluster`` variable lists
both, and each cluster's ``group`` variable lists that cluster's groups and no other's.

The two states are fed by the simulator's scenarios replayed through the group model (``tests.api.feed``), with
different seeds, so each cluster has groups of its own.
"""

from __future__ import annotations

from tests.api.feed import feed_state
from tests.dashboards.grafana import REPO, dashboards, interpolate, label_values_query, variables
from tests.dashboards.promtools import PrometheusProcess, require
from streaming.sinks.prometheus import MetricsServer, MetricsState

CLUSTERS = ("east", "west")


def test_the_dashboards_list_every_cluster_and_each_ones_groups():
    require("prometheus")
    fed = {name: feed_state(seed=seed) for name, seed in zip(CLUSTERS, (11, 12))}
    # Group names must differ for the test to tell the clusters apart: west's are renamed.
    west = fed["west"]
    for row in west.group_rows:
        row["group_id"] = "west-" + row["group_id"]
    for row in west.partition_rows:
        row["group_id"] = "west-" + row["group_id"]
    west_state = MetricsState()
    west_state.apply_batch(west.group_rows, west.partition_rows, (), west.health, batch_id=1)
    server = MetricsServer(fed["east"].state, cluster="east", host="127.0.0.1", port=0, process_metrics=False)
    server.add_cluster("west", west_state)
    expected = {"east": set(fed["east"].state.view().groups), "west": set(west_state.view().groups)}
    assert expected["east"] and expected["west"] and not expected["east"] & expected["west"]
    with server:
        prom = PrometheusProcess([f"127.0.0.1:{server.port}"], [REPO / "alerts" / "groupscope.rules.yml"]).start()
        try:
            prom.wait_for_scrapes(2)
            for name, model in dashboards().items():
                found = variables(model)
                alls = {n: v.get("allValue", "") for n, v in found.items()}

                def values_of(variable: str, chosen: dict) -> set[str]:
                    selector, label = label_values_query(found[variable]["query"])
                    series = prom.api("series", **{"match[]": interpolate(selector, chosen, alls)})
                    return {s[label] for s in series if label in s}

                assert values_of("cluster", {}) == set(CLUSTERS), name
                for cluster in CLUSTERS:
                    groups = values_of("group", {"cluster": cluster})
                    assert groups and groups <= expected[cluster], (name, cluster)
        finally:
            prom.stop()
