"""Builds groupscope's Grafana dashboards in code (grafana-foundation-sdk) and writes them as JSON beside this file.

Two dashboards: an overview of every group of a cluster, and a drill-down into one group. Both select the
Prometheus data source and the cluster through template variables, so one provisioned copy serves every
groupscope deployment. Every query uses only series of ``streaming.sinks.prometheus.METRICS``; partition- and
member-level panels need the job's ``metrics.partition_metrics: true`` (their descriptions say so).

Usage: ``python dashboards/build.py`` rewrites ``*.json`` here; ``python dashboards/build.py --check`` exits 1 when
the committed JSON is not what this file builds (the tests run the same check). Edit this file, never the JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from grafana_foundation_sdk.builders import (
    bargauge,
    stat,
    table,
    timeseries,
)
from grafana_foundation_sdk.builders import (
    common as cb,
)
from grafana_foundation_sdk.builders import (
    dashboard as db,
)
from grafana_foundation_sdk.builders import (
    prometheus as pb,
)
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models import prometheus as pm

HERE = Path(__file__).resolve().parent
DS = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
OVERVIEW_UID = "groupscope-overview"
GROUP_UID = "groupscope-group"
OPT_IN = " Needs metrics.partition_metrics: true in the job's configuration."

# Burrow-style status numbers (streaming.model.rules.Status) with the colours the dashboards show them in.
STATUSES = (("OK", "green"), ("WARN", "yellow"), ("STALL", "orange"), ("STOP", "red"), ("REWIND", "purple"),
            ("ERR", "dark-red"))
STATUS_MAPPING = dm.ValueMap({str(i): dm.ValueMappingResult(text=name, color=color, index=i)
                              for i, (name, color) in enumerate(STATUSES)})

# Time to catch up: +Inf (consumed no faster than produced) reads as words, not "Infinity".
NOT_CATCHING_UP = dm.RangeMap(dm.DashboardRangeMapOptions(
    from_val=1e308, result=dm.ValueMappingResult(text="not catching up", color="red", index=0)))
CATCH_UP_COLUMN = [dm.DynamicConfigValue(id_val="unit", value="s"),
                   dm.DynamicConfigValue(id_val="mappings", value=[NOT_CATCHING_UP])]

# A flat 0 labelled group="(none)": "or on() NO_GROUP" keeps a panel of rare events from showing "no data".
NO_GROUP = 'label_replace(vector(0), "group", "(none)", "", "")'


# ------------------------------------------------------------------------------------------------------------
# Small helpers over the SDK: ids, refIds and the shared defaults of every panel


class _Ids:
    """Panel ids unique within a dashboard, in layout order (Grafana keys panel state and links by id)."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def __call__(self) -> int:
        return next(self._next)


def q(expr: str, legend: str = "", *, instant: bool = False, table_format: bool = False) -> pb.Dataquery:
    query = pb.Dataquery().expr(expr).datasource(DS)
    if legend:
        query = query.legend_format(legend)
    if instant:
        query = query.instant()
    else:
        query = query.range()
    if table_format:
        query = query.format(pm.PromQueryFormat.TABLE)
    return query


def _targets(panel, queries: tuple[pb.Dataquery, ...]):
    for ref, query in zip("ABCDEFGHIJ", queries):
        panel = panel.with_target(query.ref_id(ref))
    return panel


def ts(ids: _Ids, title: str, description: str, *queries: pb.Dataquery, unit: str = "short", span: int = 12,
       height: int = 8, bars: bool = False, steps: bool = False, stack: bool = False) -> timeseries.Panel:
    panel = (timeseries.Panel().id(ids()).title(title).description(description).datasource(DS).unit(unit)
             .span(span).height(height).min(0)
             .legend(cb.VizLegendOptions().show_legend(True).display_mode(common.LegendDisplayMode.LIST)
                     .placement(common.LegendPlacement.BOTTOM))
             .tooltip(cb.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.DESCENDING)))
    if bars:
        panel = panel.draw_style(common.GraphDrawStyle.BARS).fill_opacity(80)
    if steps:
        panel = panel.line_interpolation(common.LineInterpolation.STEP_AFTER)
    if stack:
        panel = panel.stacking(cb.StackingConfig().mode(common.StackingMode.NORMAL))
    return _targets(panel, queries)


def single(ids: _Ids, title: str, description: str, *queries: pb.Dataquery, unit: str = "short", span: int = 4,
           height: int = 4, mappings: list | None = None, thresholds: list[tuple[float | None, str]] | None = None,
           text_mode: common.BigValueTextMode = common.BigValueTextMode.AUTO) -> stat.Panel:
    steps = [dm.Threshold(value=v, color=c) for v, c in (thresholds or [(None, "green")])]
    panel = (stat.Panel().id(ids()).title(title).description(description).datasource(DS).unit(unit).span(span)
             .height(height).graph_mode(common.BigValueGraphMode.NONE).color_mode(common.BigValueColorMode.VALUE)
             .text_mode(text_mode)
             .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
             .thresholds(db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps)))
    if mappings:
        panel = panel.mappings(mappings)
    return _targets(panel, queries)


def tabular(ids: _Ids, title: str, description: str, columns: dict[str, str], *queries: pb.Dataquery,
            span: int = 24, height: int = 9) -> table.Panel:
    """An instant table joining one query per value column by their labels (``columns``: ref -> header)."""
    rename = {f"Value #{ref}": name for ref, name in columns.items()}
    if len(queries) == 1:
        rename = {"Value": next(iter(columns.values()))}
    hidden = {name: True for name in ("Time", "__name__", "cluster", "instance", "job")}
    panel = (table.Panel().id(ids()).title(title).description(description).datasource(DS).span(span).height(height)
             .with_transformation(dm.DataTransformerConfig(id_val="merge", options={}))
             .with_transformation(dm.DataTransformerConfig(id_val="organize", options={
                 "excludeByName": hidden, "renameByName": rename})))
    return _targets(panel, queries)


def row(ids: _Ids, title: str) -> db.Row:
    return db.Row(title).id(ids())


def datasource_variable() -> db.DatasourceVariable:
    return db.DatasourceVariable("datasource").label("Data source").type("prometheus")


def query_variable(name: str, label: str, query: str, *, multi: bool = False) -> db.QueryVariable:
    var = (db.QueryVariable(name).label(label).datasource(DS).query(query)
           .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED).sort(dm.VariableSort.ALPHABETICAL_ASC))
    if multi:
        var = var.multi(True).include_all(True).all_value(".*")
    return var


def base(uid: str, title: str, description: str) -> db.Dashboard:
    return (db.Dashboard(title).uid(uid).description(description).tags(["groupscope", "kafka"]).editable()
            .tooltip(dm.DashboardCursorSync.CROSSHAIR).time("now-3h", "now").refresh("30s").timezone("browser")
            .with_variable(datasource_variable())
            .with_variable(query_variable("cluster", "Cluster", "label_values(groupscope_build_info, cluster)"))
            .link(db.DashboardLink("groupscope").type(dm.DashboardLinkType.DASHBOARDS).tags(["groupscope"])
                  .as_dropdown(True).include_vars(True).keep_time(True)))


# ------------------------------------------------------------------------------------------------------------
# Overview


def counts(ids, title: str, description: str, query, *, span: int = 24, height: int = 5):
    """Horizontal bars of how many series fall in each label value (``count by (...)``), latest value each."""
    return _targets(
        bargauge.Panel().id(ids()).title(title).description(description)
        .datasource(DS).span(span).height(height).orientation(common.VizOrientation.HORIZONTAL)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .display_mode(common.BarGaugeDisplayMode.BASIC),
        (query,))


def overview() -> db.Dashboard:
    ids = _Ids()
    sel = 'cluster="$cluster", group=~"$group"'
    mon = 'cluster="$cluster"'
    d = (base(OVERVIEW_UID, "Kafka consumer groups (groupscope)",
              "Every consumer group of a cluster: states and statuses, worst lag, rebalances and storms, and how "
              "fresh the monitor itself is.")
         .with_variable(query_variable("group", "Group", 'label_values(kafka_consumergroup_info{cluster="$cluster"}, '
                                                         "group)", multi=True)))

    d = d.with_row(row(ids, "Groups"))
    d = d.with_panel(single(ids, "Groups", "Consumer groups known to groupscope (live ones and groups that only "
                            "have committed offsets left).", q(f"count(kafka_consumergroup_info{{{sel}}}) or vector(0)"),
                            span=3))
    d = d.with_panel(single(ids, "Groups not OK", "Groups whose worst partition is not OK (WARN, STALL, STOP, REWIND "
                            "or ERR).", q(f"count(kafka_consumergroup_status{{{sel}}} > 0) or vector(0)"), span=3,
                            thresholds=[(None, "green"), (1, "orange")]))
    d = d.with_panel(single(ids, "Partitions losing data", "Partitions whose committed offset fell below the log "
                            "start offset: retention deletes records their group never read.",
                            q(f"sum(kafka_consumergroup_data_loss_partitions{{{sel}}}) or vector(0)"), span=3,
                            thresholds=[(None, "green"), (1, "red")]))
    d = d.with_panel(single(ids, "Storms in range", "Rebalance storms detected in the selected time range (rolling "
                            "restarts are not storms).",
                            q(f"sum(increase(kafka_consumergroup_rebalance_storms_total{{{sel}}}[$__range])) "
                              "or vector(0)"),
                            span=3, thresholds=[(None, "green"), (1, "orange")]))
    d = d.with_panel(single(ids, "Monitor", "Whether groupscope has read __consumer_offsets up to its end. While it "
                            "catches up, lag and statuses describe the past and alerts stay silent.",
                            q(f"groupscope_caught_up{{{mon}}}"), span=3,
                            mappings=[dm.ValueMap({"0": dm.ValueMappingResult(text="catching up", color="orange",
                                                                              index=0),
                                                   "1": dm.ValueMappingResult(text="caught up", color="green",
                                                                              index=1)})]))
    d = d.with_panel(single(ids, "Data age", "Age of the newest heartbeat the model applied: every lag and status is "
                            "this old.", q(f"groupscope_heartbeat_age_seconds{{{mon}}}"), unit="s", span=3,
                            thresholds=[(None, "green"), (60, "orange"), (120, "red")]))
    d = d.with_panel(single(ids, "Decode errors in range", "__consumer_offsets records that could not be decoded "
                            "(see the quarantine table).",
                            q(f"sum(increase(groupscope_decode_errors_total{{{mon}}}[$__range])) or vector(0)"),
                            span=3, thresholds=[(None, "green"), (1, "red")]))
    d = d.with_panel(single(ids, "Records decoded in range", "__consumer_offsets records decoded.",
                            q(f"sum(increase(groupscope_records_decoded_total{{{mon}}}[$__range]))"), span=3))

    statuses = tuple(q(f"count(kafka_consumergroup_status{{{sel}}} == {i}) or vector(0)", name)
                     for i, (name, _) in enumerate(STATUSES))
    d = d.with_panel(_targets(
        bargauge.Panel().id(ids()).title("Groups by status").description(
            "Each group counts under its worst partition's status: OK, WARN (lag grew at every commit), STALL "
            "(committing without moving), STOP (not committing while data arrives), REWIND, ERR (data loss).")
        .datasource(DS).span(12).height(7).orientation(common.VizOrientation.HORIZONTAL)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .display_mode(common.BarGaugeDisplayMode.BASIC)
        .overrides([db.DashboardFieldConfigSourceOverrides().matcher(dm.MatcherConfig(id_val="byName", options=name))
                    .properties([dm.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": color})])
                    for name, color in STATUSES]),
        statuses))
    d = d.with_panel(counts(
        ids, "Groups by state", "Group states as Kafka names them, per group type (CLASSIC, CONSUMER = KIP-848, "
        "SHARE, STREAMS).", q(f"count by (type, state) (kafka_consumergroup_state{{{sel}}})", "{{type}} {{state}}"),
        span=12, height=7))

    d = d.with_row(row(ids, "Lag"))
    d = d.with_panel(ts(ids, "Worst time lag", "The ten groups whose oldest unconsumed record waits longest.",
                        q(f"topk(10, kafka_consumergroup_group_max_lag_seconds{{{sel}}})", "{{group}}"), unit="s"))
    d = d.with_panel(ts(ids, "Worst offset lag", "The ten groups with the most unconsumed records.",
                        q(f"topk(10, kafka_consumergroup_group_sum_lag{{{sel}}})", "{{group}}")))
    d = d.with_panel(counts(
        ids, "How time lag was found", "Groups whose largest time lag was measured (the age of the oldest record "
        "not yet consumed, read from Kafka) or interpolated (from the history of end offsets, where the record "
        "could not be read in time).",
        q(f"count by (method) (kafka_consumergroup_group_max_lag_seconds_method{{{sel}}})", "{{method}}")))
    group_link = (f"/d/{GROUP_UID}/?var-datasource=${{datasource}}&var-cluster=${{cluster}}"
                  "&var-group=${__value.raw}&${__url_time_range}")
    groups_table = tabular(
        ids, "Groups", "One row per group; click a group for its drill-down.",
        {"A": "status", "B": "lag (records)", "C": "worst partition lag", "D": "time lag", "E": "members",
         "F": "generation / epoch", "G": "catch up"},
        q(f"kafka_consumergroup_status{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_group_sum_lag{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_group_max_lag{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_group_max_lag_seconds{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_members{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_generation{{{sel}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_catch_up_seconds{{{sel}}}", instant=True, table_format=True),
    )
    groups_table = (groups_table
                    .override_by_name("catch up", CATCH_UP_COLUMN)
                    .override_by_name("status", [dm.DynamicConfigValue(id_val="mappings", value=[STATUS_MAPPING])])
                    .override_by_name("time lag", [dm.DynamicConfigValue(id_val="unit", value="s")])
                    .override_by_name("group", [dm.DynamicConfigValue(id_val="links", value=[
                        {"title": "Open the group's drill-down", "url": group_link}])]))
    d = d.with_panel(groups_table)

    d = d.with_row(row(ids, "Rebalances"))
    d = d.with_panel(ts(ids, "Rebalances", "Completed rebalances (generation or epoch bumps) per interval, for the ten "
                        "busiest groups.",
                        q(f"topk(10, sum by (group) (increase(kafka_consumergroup_rebalances_total{{{sel}}}"
                          "[$__rate_interval])))", "{{group}}"), bars=True, span=8))
    d = d.with_panel(ts(ids, "Storms and rolling restarts", "Groups in a rebalance storm right now (members leaving "
                        "soon after joining), and storms, rolling restarts, scale-outs and scale-ins as they are "
                        "judged.",
                        # "or ... vector(0)": a flat 0 labelled group="(none)" when no group has one, not "no data"
                        q(f"(sum by (group) (kafka_consumergroup_rebalance_storm_active{{{sel}}}) > 0) "
                          "or on() " + NO_GROUP, "storm active: {{group}}"),
                        q(f"sum by (group) (increase(kafka_consumergroup_rebalance_storms_total{{{sel}}}"
                          "[$__rate_interval])) > 0", "storm: {{group}}"),
                        q(f"(sum by (group) (increase(kafka_consumergroup_rolling_restarts_total{{{sel}}}"
                          "[$__rate_interval])) > 0) or on() " + NO_GROUP, "rolling restart: {{group}}"),
                        q(f"(sum by (group) (increase(kafka_consumergroup_scale_outs_total{{{sel}}}"
                          "[$__rate_interval])) > 0) or on() " + NO_GROUP, "scale-out: {{group}}"),
                        q(f"(sum by (group) (increase(kafka_consumergroup_scale_ins_total{{{sel}}}"
                          "[$__rate_interval])) > 0) or on() " + NO_GROUP, "scale-in: {{group}}"),
                        bars=True, span=8))
    d = d.with_panel(ts(ids, "Partitions moved", "Partitions that changed owner in rebalances, per interval.",
                        q(f"topk(10, sum by (group) (increase("
                          f"kafka_consumergroup_rebalance_partitions_moved_total{{{sel}}}[$__rate_interval])))",
                          "{{group}}"), bars=True, span=8))

    d = d.with_row(row(ids, "Monitor"))
    d = d.with_panel(ts(ids, "Data age", "Age of the newest heartbeat the model applied (alert at 2 minutes), and "
                        "time since the last micro-batch finished (alert at 5 minutes; /ready says 503 past its "
                        "limits).",
                        q(f"groupscope_heartbeat_age_seconds{{{mon}}}", "data age"),
                        q(f"groupscope_last_batch_age_seconds{{{mon}}}", "last batch age"), unit="s", span=8))
    d = d.with_panel(ts(ids, "Kafka reachable", "1 when the job's heartbeat emitter reached Kafka at its last "
                        "attempt, 0 when it failed or has not reached it for 30 s (alert after 5 minutes).",
                        q(f"groupscope_kafka_up{{{mon}}}", "kafka up"), unit="short", span=8))
    d = d.with_panel(ts(ids, "Kafka outages", "How long the heartbeat emitter has not reached Kafka (0 while it "
                        "does), and the outages the model reported per interval: each one cluster event, not "
                        "counted against any group.",
                        q(f"groupscope_kafka_unreachable_seconds{{{mon}}}", "unreachable for"),
                        q(f"increase(groupscope_kafka_outages_total{{{mon}}}[$__rate_interval])", "outages"),
                        unit="s", span=8))
    d = d.with_panel(ts(ids, "Throughput", "__consumer_offsets records decoded per second, and the input rate of the "
                        "last micro-batch.",
                        q(f"rate(groupscope_records_decoded_total{{{mon}}}[$__rate_interval])", "decoded/s"),
                        q(f"groupscope_input_records_per_second{{{mon}}}", "input/s (last batch)"), unit="short",
                        span=8))
    d = d.with_panel(ts(ids, "Decode errors, unknown records, anomalies", "Per interval: records that could not be "
                        "decoded (quarantined), records of unknown type or version (skipped), records the model "
                        "could not apply.",
                        q(f"increase(groupscope_decode_errors_total{{{mon}}}[$__rate_interval])", "decode errors"),
                        q(f"increase(groupscope_unknown_records_total{{{mon}}}[$__rate_interval])", "unknown records"),
                        q(f"increase(groupscope_model_anomalies_total{{{mon}}}[$__rate_interval])", "anomalies"),
                        bars=True, span=8))
    d = d.with_panel(ts(ids, "Micro-batch duration", "Duration of the job's last micro-batch.",
                        q(f"groupscope_batch_duration_seconds{{{mon}}}", "batch"), unit="s", span=8))
    d = d.with_panel(ts(ids, "__consumer_offsets: behind and held back", "Per __consumer_offsets partition: records "
                        "not read yet (catching up) and records an open transaction holds back from a read_committed "
                        "reader (high watermark - last stable offset).",
                        q(f"topk(5, groupscope_offsets_topic_behind_records{{{mon}}})", "behind: p{{partition}}"),
                        q(f"topk(5, groupscope_offsets_topic_unstable_records{{{mon}}})",
                          "held back: p{{partition}}"), span=8))
    d = d.with_panel(ts(ids, "Query restarts and batches", "Micro-batches per interval and restarts of the streaming "
                        "query after failures.",
                        q(f"increase(groupscope_batches_total{{{mon}}}[$__rate_interval])", "batches"),
                        q(f"increase(groupscope_query_restarts_total{{{mon}}}[$__rate_interval])", "restarts"),
                        bars=True, span=8))
    d = d.with_panel(ts(ids, "Group state size", "The job's serialized group state, all shards, as last written to "
                        "Spark's state store. It grows with the group-partitions tracked and should level off for a "
                        "steady set of groups; steady growth means state that is never dropped.",
                        q(f"groupscope_state_bytes{{{mon}}}", "state"), unit="bytes", span=8))
    return d


# ------------------------------------------------------------------------------------------------------------
# Group drill-down


def group() -> db.Dashboard:
    ids = _Ids()
    g = 'cluster="$cluster", group="$group"'
    gt = 'cluster="$cluster", group="$group", topic=~"$topic"'
    d = (base(GROUP_UID, "Kafka consumer group (groupscope)",
              "One consumer group: lag and time lag per topic and partition, committed vs end offsets, members and "
              "assignment, generation/epoch timeline with rebalance causes, partitions moved per rebalance.")
         .with_variable(query_variable("group", "Group", 'label_values(kafka_consumergroup_info{cluster="$cluster"}, '
                                                         "group)"))
         .with_variable(query_variable("topic", "Topic", "label_values(kafka_consumergroup_topic_sum_lag"
                                                         '{cluster="$cluster", group="$group"}, topic)', multi=True))
         .annotation(db.AnnotationQuery().name("Rebalances").datasource(DS).enable(True).icon_color("orange")
                     .expr(f"changes(kafka_consumergroup_generation{{{g}}}[$__interval]) > 0")))

    d = d.with_row(row(ids, "Group"))
    d = d.with_panel(single(ids, "State", "The group's state as Kafka names it, and its type.",
                            q(f"kafka_consumergroup_state{{{g}}}", "{{type}} {{state}}"), span=4,
                            text_mode=common.BigValueTextMode.NAME))
    d = d.with_panel(single(ids, "Status", "Worst partition status: OK, WARN, STALL, STOP, REWIND, ERR.",
                            q(f"kafka_consumergroup_status{{{g}}}"), span=4, mappings=[STATUS_MAPPING]))
    d = d.with_panel(single(ids, "Members", "Members of the group.", q(f"kafka_consumergroup_members{{{g}}}"), span=4))
    d = d.with_panel(single(ids, "Generation / epoch", "Classic generation or KIP-848 group epoch, and the KIP-848 "
                            "target assignment epoch (lower while the group is ASSIGNING).",
                            q(f"kafka_consumergroup_generation{{{g}}}", "generation / group epoch"),
                            q(f"kafka_consumergroup_assignment_epoch{{{g}}}", "assignment epoch"), span=4,
                            text_mode=common.BigValueTextMode.VALUE_AND_NAME))
    d = d.with_panel(single(ids, "Time lag", "How long the oldest unconsumed record of the group has waited.",
                            q(f"kafka_consumergroup_group_max_lag_seconds{{{g}}}"), unit="s", span=4,
                            thresholds=[(None, "green"), (60, "orange"), (600, "red")]))
    d = d.with_panel(single(ids, "Since last commit / rebalance", "Time since the group's newest offset commit (old "
                            "is fine when the group is idle: no new records) and since its last rebalance.",
                            q(f"time() - kafka_consumergroup_last_commit_timestamp_seconds{{{g}}}", "commit"),
                            q(f"time() - kafka_consumergroup_last_rebalance_timestamp_seconds{{{g}}}", "rebalance"),
                            unit="s", span=4, text_mode=common.BigValueTextMode.VALUE_AND_NAME))

    d = d.with_row(row(ids, "Lag"))
    d = d.with_panel(ts(ids, "Time lag per topic", "Largest time lag of the group's partitions of each topic.",
                        q(f"kafka_consumergroup_topic_max_lag_seconds{{{gt}}}", "{{topic}}"), unit="s"))
    d = d.with_panel(ts(ids, "Offset lag per topic", "Unconsumed records of the group per topic, and of its worst "
                        "partition.",
                        q(f"kafka_consumergroup_topic_sum_lag{{{gt}}}", "{{topic}}"),
                        q(f"kafka_consumergroup_topic_max_lag{{{gt}}}", "{{topic}} (worst partition)")))
    d = d.with_panel(ts(ids, "Time lag per partition", "Time lag of each partition." + OPT_IN,
                        q(f"kafka_consumergroup_lag_seconds{{{gt}}}", "{{topic}}/{{partition}}"), unit="s"))
    d = d.with_panel(ts(ids, "Offset lag per partition", "Offset lag of each partition." + OPT_IN,
                        q(f"kafka_consumergroup_lag{{{gt}}}", "{{topic}}/{{partition}}")))
    d = d.with_panel(ts(ids, "Committed vs end offsets", "Committed offset and reachable end offset of each "
                        "partition: parallel lines are a consumer keeping up, diverging lines one falling behind, a "
                        "flat committed line under a rising end a stopped one." + OPT_IN,
                        q(f"kafka_consumergroup_current_offset{{{gt}}}", "committed {{topic}}/{{partition}}"),
                        q('kafka_partition_latest_offset{cluster="$cluster", topic=~"$topic"} and on (topic, '
                          f"partition) kafka_consumergroup_current_offset{{{g}}}", "end {{topic}}/{{partition}}"),
                        span=24))
    partitions = tabular(
        ids, "Partitions", "Status, lag, committed offset and time to catch up at the current rates of each "
        "partition." + OPT_IN,
        {"A": "status", "B": "lag (records)", "C": "time lag", "D": "committed offset", "E": "catch up"},
        q(f"kafka_consumergroup_partition_status{{{gt}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_lag{{{gt}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_lag_seconds{{{gt}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_current_offset{{{gt}}}", instant=True, table_format=True),
        q(f"kafka_consumergroup_partition_catch_up_seconds{{{gt}}}", instant=True, table_format=True),
    )
    d = d.with_panel(counts(
        ids, "How time lag was found", "Partitions whose time lag was measured (the age of the oldest record not "
        "yet consumed) or interpolated (from the history of end offsets)." + OPT_IN,
        q(f"count by (method) (kafka_consumergroup_lag_seconds_method{{{gt}}})", "{{method}}")))
    d = d.with_panel(partitions
                     .override_by_name("catch up", CATCH_UP_COLUMN)
                     .override_by_name("status", [dm.DynamicConfigValue(id_val="mappings", value=[STATUS_MAPPING])])
                     .override_by_name("time lag", [dm.DynamicConfigValue(id_val="unit", value="s")]))

    d = d.with_row(row(ids, "Members and rebalances"))
    d = d.with_panel(ts(ids, "Members and partitions", "Members of the group and partitions it has committed offsets "
                        "for.", q(f"kafka_consumergroup_members{{{g}}}", "members"),
                        q(f"kafka_consumergroup_partitions{{{g}}}", "partitions"), steps=True))
    d = d.with_panel(tabular(ids, "Assignment", "Partitions assigned to each member right now." + OPT_IN,
                             {"A": "partitions"},
                             q(f"kafka_consumergroup_member_assigned_partitions{{{g}}}", instant=True,
                               table_format=True), span=12, height=8))
    d = d.with_panel(ts(ids, "Generation / epoch timeline", "Each step is a completed rebalance; a KIP-848 assignment "
                        "epoch below the group epoch means the coordinator is still assigning.",
                        q(f"kafka_consumergroup_generation{{{g}}}", "generation / group epoch"),
                        q(f"kafka_consumergroup_assignment_epoch{{{g}}}", "assignment epoch"), steps=True))
    d = d.with_panel(ts(ids, "Rebalance causes", "Why the group rebalanced, per interval (a rebalance with several "
                        "causes counts for each).",
                        q(f"sum by (cause) (increase(kafka_consumergroup_rebalance_causes_total{{{g}}}"
                          "[$__rate_interval]))", "{{cause}}"), bars=True, stack=True))
    d = d.with_panel(ts(ids, "Partitions moved per rebalance", "Partitions that changed owner per rebalance in each "
                        "interval, and in the last rebalance whose assignment is known. Sticky and KIP-848 assignors "
                        "keep this low.",
                        q(f"increase(kafka_consumergroup_rebalance_partitions_moved_total{{{g}}}[$__rate_interval]) / "
                          f"(increase(kafka_consumergroup_rebalances_total{{{g}}}[$__rate_interval]) > 0)",
                          "moved per rebalance"),
                        q(f"kafka_consumergroup_last_rebalance_partitions_moved{{{g}}}", "last rebalance"), bars=True))
    d = d.with_panel(ts(ids, "Rebalances, storms, rolling restarts", "Completed rebalances per interval, and storms and "
                        "rolling restarts as they are detected.",
                        q(f"increase(kafka_consumergroup_rebalances_total{{{g}}}[$__rate_interval])", "rebalances"),
                        q(f"increase(kafka_consumergroup_rebalance_storms_total{{{g}}}[$__rate_interval])", "storms"),
                        q(f"increase(kafka_consumergroup_rolling_restarts_total{{{g}}}[$__rate_interval])",
                          "rolling restarts"),
                        q(f"kafka_consumergroup_rebalance_storm_active{{{g}}}", "storm active"), bars=True))
    d = d.with_panel(ts(ids, "Rebalance verdict", "The group's latest rebalance verdict (storm, storm_ended, "
                        "rolling_restart, scale_out, scale_in, formation), judged again at every rebalance.",
                        q(f"kafka_consumergroup_rebalance_verdict{{{g}}} == 1", "{{verdict}}"), bars=True))
    return d


# ------------------------------------------------------------------------------------------------------------

DASHBOARDS: dict[str, Callable[[], db.Dashboard]] = {
    "groupscope-overview.json": overview,
    "groupscope-group.json": group,
}


def canonical(model: dict) -> dict:
    """A dashboard JSON model decoded into the SDK's typed models (panel options and queries by their plugin's
    schema) and encoded again: keys the schema does not know are dropped, defaults are filled in. The committed
    JSON is in this form, so the tests can compare a file with its canonical form to check it against the schema.
    """
    register_default_plugins()
    return json.loads(JSONEncoder().encode(dm.Dashboard.from_json(model)))


def render(builder: db.Dashboard) -> str:
    """The dashboard model as stable canonical JSON (sorted keys, two-space indent, trailing newline)."""
    model = canonical(json.loads(JSONEncoder().encode(builder.build())))
    return json.dumps(model, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def rendered() -> Iterator[tuple[Path, str]]:
    for name, build in DASHBOARDS.items():
        yield HERE / name, render(build())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the JSON files are not up to date")
    args = parser.parse_args(argv)
    stale = []
    for path, text in rendered():
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            json.loads(text)
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python dashboards/build.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
