"""Shared building blocks of vigil's dashboards, on top of `grafana-foundation-sdk`'s builders.

Every panel goes through one of these helpers, so every panel has a unit, the fixed Prometheus
datasource (uid `vigil-prometheus`, the one the provisioning file creates) on the panel and on each
query, and a width and height on the 24-column grid. Links between dashboards carry the time range and
the template variables (`keepTime`, `includeVars`, and `var-…` in data links), for the drill-down
fleet → node → GPU → job.
"""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders.dashboard import Row
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import heatmap, prometheus, stat, table, timeseries
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync, DashboardLinkType, DataSourceRef, DataTransformerConfig, Threshold, ThresholdsMode, VariableOption,
    VariableRefresh, VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE_UID = "vigil-prometheus"  # the datasource the provisioning creates: the `cluster` variable's default
DATASOURCE_TYPE = "prometheus"
# Every panel, query, variable and annotation reads the Prometheus the `cluster` variable picks: one shard
# or cluster of a fleet that has several, or the global view (VictoriaMetrics), each a Grafana datasource
CLUSTER = "cluster"
PANEL_DATASOURCE_UID = "${" + CLUSTER + "}"
DATASOURCE = DataSourceRef(type_val=DATASOURCE_TYPE, uid=PANEL_DATASOURCE_UID)
TAG = "vigil"
GPU_JOB = "vigil-gpu"  # the GPU exporters' scrape job (vigil.stack.config.prometheus.GPU_JOB)

# Units (Grafana's unit ids)
PERCENT = "percentunit"  # 0..1 shown as %
BYTES = "bytes"
WATTS = "watt"
CELSIUS = "celsius"
SECONDS = "s"
COUNT = "short"
PER_SECOND = "ops"
HERTZ = "hertz"
GPU_HOURS = "suffix: GPU-h"


# utilization says a kernel ran; the DCGM profiling metrics say how much of the GPU it used
PROFILING = (("vigil_gpu_utilization_ratio", "utilization (a kernel ran)"), ("vigil_gpu_sm_active_ratio", "SM active"),
             ("vigil_gpu_tensor_pipe_active_ratio", "tensor pipe active"), ("vigil_gpu_dram_active_ratio", "DRAM active"))


def panels(model: dict) -> list[dict]:
    """Every panel of a dashboard's JSON model, those inside collapsed rows included."""
    found = []
    for panel in model.get("panels") or []:
        found.append(panel)
        found.extend(panel.get("panels") or [])
    return found


def profiling(wrap) -> list[tuple[str, str]]:
    """(query, legend) of utilization and each profiling metric, `wrap(metric)` giving the query."""
    return [(wrap(metric), legend) for metric, legend in PROFILING]


def xids(selector: str = "", window: str = "$__rate_interval") -> str:
    """XID errors in each `window`, counting a GPU's first XID of a code too: the exporter creates the
    counter's series at the first event (value 1), which `increase()` alone reads as 0. Series older than
    the window: their increase; series born inside it: their whole value."""
    series = f"vigil_gpu_xid_errors_total{selector}"
    return f"(increase({series}[{window}]) and {series} offset {window}) or {series}"


def or_zero(expr: str) -> str:
    """`expr`, or a single 0 when it has no series: a count of nothing reads 0, not "No data" (`on ()`: the
    0 joins only when `expr` is empty, whatever its labels)."""
    return f"({expr}) or on () vector(0)"


def query(expr: str, legend: str = "", ref: str = "A", instant: bool = False) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).ref_id(ref).datasource(DATASOURCE)
    if legend:
        q = q.legend_format(legend)
    return q.instant() if instant else q.range()


def _queries(panel, queries):
    """`queries`: one PromQL string, or a list of (expr, legend) pairs."""
    if isinstance(queries, str):
        queries = [(queries, "")]
    for index, (expr, legend) in enumerate(queries):
        panel = panel.with_target(query(expr, legend, ref=chr(ord("A") + index),
                                        instant=isinstance(panel, (stat.Panel, table.Panel))))
    return panel


# what a panel says instead of "No data" when nothing is wrong or its source is missing (`empty=`)
NO_XID = "0: no XID"
NO_INFINIBAND = "no InfiniBand port here"
NO_INCIDENT = "no incident in the window yet"
NO_PROFILING = "no profiling fields: needs NVML's GPM (Hopper and newer) or dcgm-exporter's DCP fields"


def _common(panel, title: str, description: str, unit: str, width: int, height: int, links, empty: str | None = None):
    panel = panel.title(title).description(description).datasource(DATASOURCE).unit(unit).span(width).height(height)
    if empty:  # Grafana shows this text where it would say "No data"
        panel = panel.no_value(empty)
    return panel.data_links(links) if links else panel


def graph(title: str, queries, unit: str, description: str, width: int = 12, height: int = 8, links=(),
          minimum: float | None = None, maximum: float | None = None, stacked: bool = False,
          empty: str | None = None) -> timeseries.Panel:
    """A time series panel; `empty`: what it says when no series has data (a count of nothing: 0)."""
    panel = _common(timeseries.Panel(), title, description, unit, width, height, list(links), empty)
    panel = panel.fill_opacity(10).legend(common_builders.VizLegendOptions().display_mode(
        common.LegendDisplayMode.TABLE).placement(common.LegendPlacement.BOTTOM).show_legend(True)
        .calcs(["mean", "max"]))
    if stacked:
        panel = panel.stacking(common_builders.StackingConfig().mode(common.StackingMode.NORMAL))
    if minimum is not None:
        panel = panel.min(minimum)
    if maximum is not None:
        panel = panel.max(maximum)
    return _queries(panel, queries)


def single(title: str, queries, unit: str, description: str, width: int = 4, height: int = 4, links=(),
           thresholds: tuple[tuple[float, str], ...] = (), empty: str | None = None) -> stat.Panel:
    """A stat panel (instant queries): one big number per series, coloured by `thresholds`."""
    panel = _common(stat.Panel(), title, description, unit, width, height, list(links), empty)
    panel = (panel.graph_mode(common.BigValueGraphMode.NONE).color_mode(common.BigValueColorMode.BACKGROUND)
             .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False)))
    if thresholds:
        panel = panel.thresholds(dash.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
            [Threshold(value=value, color=color) for value, color in thresholds]))
    return _queries(panel, queries)


def listing(title: str, queries, unit: str, description: str, width: int = 12, height: int = 8,
            links=(), empty: str | None = None) -> table.Panel:
    """A table of the series of instant queries (labels as columns)."""
    panel = _common(table.Panel(), title, description, unit, width, height, list(links), empty)
    for index, (expr, legend) in enumerate([(queries, "")] if isinstance(queries, str) else queries):
        panel = panel.with_target(query(expr, legend, ref=chr(ord("A") + index), instant=True)
                                  .format(PromQueryFormat.TABLE))
    return panel


def joined(title: str, key: str, queries: list[tuple[str, str]], unit: str, description: str, width: int = 12,
           height: int = 8, links=()) -> table.Panel:
    """One table row per `key` (a job) from several instant queries, as Grafana joins them: each query's
    series become columns of the row of their `key` (the "merge" transformation), each value column
    named by its legend; a query whose legend is empty gives its labels only (its value column hidden)."""
    panel = listing(title, queries, unit, description, width, height, links)
    panel = panel.with_transformation(DataTransformerConfig(id_val="merge", options={}))
    names = {f"Value #{chr(ord('A') + index)}": legend for index, (_, legend) in enumerate(queries) if legend}
    hidden = {"Time": True, **{f"Value #{chr(ord('A') + index)}": True
                               for index, (_, legend) in enumerate(queries) if not legend}}
    order = {key: 0, **{name: index + 1 for index, name in enumerate(names)}}
    return panel.with_transformation(DataTransformerConfig(id_val="organize", options={
        "excludeByName": hidden, "renameByName": names, "indexByName": order}))


def collapsed_row(title: str, *items) -> Row:
    """A row Grafana shows folded, its panels queried only once someone opens it: for a part of the fleet
    most hosts lack (InfiniBand), so the dashboard opens without empty graphs. `build` lays the panels
    out under the row."""
    row = Row(title).collapsed(True)
    for item in items:
        row = row.with_panel(item)
    return row


def heat(title: str, expr: str, unit: str, description: str, width: int = 12, height: int = 8) -> heatmap.Panel:
    """A heat map of how many series sit in each value bucket over time (Grafana calculates the buckets)."""
    panel = _common(heatmap.Panel(), title, description, unit, width, height, [])
    panel = panel.calculate(True).y_axis(heatmap.YAxisConfig().unit(unit))
    return _queries(panel, expr)


def cluster_variable() -> dash.DatasourceVariable:
    """`$cluster`: which Prometheus datasource the dashboard reads (default the provisioned one)."""
    return (dash.DatasourceVariable(CLUSTER).label("Cluster").type(DATASOURCE_TYPE)
            .description("The Prometheus to read: a shard or cluster of a fleet that has several, or the global "
                         "view (VictoriaMetrics) that holds them all; each is a Grafana datasource.")
            .current(VariableOption(selected=True, text="vigil Prometheus", value=DATASOURCE_UID)))


def variable(name: str, label: str, expr: str, multi: bool = False) -> dash.QueryVariable:
    """A template variable whose values are a label's values (`label_values(...)`), refreshed with the time range."""
    var = (dash.QueryVariable(name).label(label).datasource(DATASOURCE).query(expr)
           .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
           .current(VariableOption(selected=False, text="", value="")))
    return var.multi(True).include_all(True).all_value(".*") if multi else var


# the notifier's open incidents (`vigil_incident_open`, one series per fault) as annotation regions; each
# dashboard narrows them to what it shows. Grafana's Prometheus annotation fields the SDK does not model
# (title, text, tags) are added by `build.annotation_formats`.
INCIDENTS = "Incidents"
ALL_INCIDENTS = "vigil_incident_open"


def incidents(expr: str = ALL_INCIDENTS) -> dash.AnnotationQuery:
    """The incidents annotation: a red region for each open incident `expr` returns."""
    return dash.AnnotationQuery().name(INCIDENTS).datasource(DATASOURCE).expr(expr).enable(True).icon_color("red")


def dashboard(uid: str, title: str, description: str, tags: tuple[str, ...] = (),
              incidents_expr: str = ALL_INCIDENTS) -> dash.Dashboard:
    """A dashboard with vigil's defaults: last 6 hours, 30 s refresh, shared crosshair, UTC, read-only, and
    the notifier's open incidents (`incidents_expr`) as annotations."""
    return (dash.Dashboard(title).uid(uid).description(description).tags([TAG, *tags]).time("now-6h", "now")
            .refresh("30s").timezone("utc").tooltip(DashboardCursorSync.CROSSHAIR).readonly()
            .with_variable(cluster_variable())
            .annotation(incidents(incidents_expr))
            .link(dash.DashboardLink("vigil dashboards").type(DashboardLinkType.DASHBOARDS).tags([TAG])
                  .as_dropdown(True).keep_time(True).include_vars(True)))


def drill(title: str, uid: str, variables: tuple[str, ...], by_row: bool = False) -> dash.DashboardLink:
    """A data link to dashboard `uid` carrying the time range and the clicked series' labels as its
    variables (`var-node=${__field.labels.node}`); `by_row`: the clicked table row's columns instead
    (`${__data.fields.node}`: a joined table's labels are columns, no longer a field's labels)."""
    source = "__data.fields" if by_row else "__field.labels"
    params = "&".join(f"var-{name}=${{{source}.{name}}}" for name in variables)
    return (dash.DashboardLink(title).type(DashboardLinkType.LINK)
            .url(f"/d/{uid}?${{__url_time_range}}&{params}").keep_time(True))

