"""AIOps: each managed series with its learned normal band (`vigil_baseline_lower` / `_expected` /
`_upper`, docs/aiops-baselines.md), the samples outside the band (anomalies), the failure-risk ranking
of GPUs and disks with the signals behind it (docs/aiops-failure-prediction.md), and the AIOps service's
own health: when it last fitted and refreshed. GPU series link to the GPU dashboard, node series to the
node one, carrying the time range."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import COUNT, PERCENT, SECONDS, dashboard, drill, graph, listing, single, variable

UID = "vigil-aiops"
_TO_NODE = drill("Node ${__field.labels.node}", "vigil-node", ("node",))
_TO_GPU = drill("GPU ${__field.labels.gpu}", "vigil-gpu", ("node", "gpu"))
M = 'metric="$metric"'
UTIL = "vigil_gpu_utilization_ratio"  # the series the stack's baselines watch (vigil up --aiops)
U = f'metric="{UTIL}"'


def build():
    board = (dashboard(UID, "vigil / AIOps", "Learned baselines and the series outside them, the failure-risk "
                       "ranking, and the AIOps service's own health.", ("aiops",))
             .with_variable(variable("metric", "Metric", "label_values(vigil_baseline_expected, metric)")))
    board = (board.with_row(Row("AIOps service"))
             .with_panel(single("Series with a baseline", "sum(vigil_baseline_series)", COUNT,
                                "Series the baseline store holds a model for.", width=5))
             .with_panel(single("Since the last fit", "time() - max(vigil_baseline_last_fit_timestamp_seconds)",
                                SECONDS, "Age of the baselines (refit every --refit-interval); red after two days.",
                                width=5,
                                thresholds=((None, "green"), (172800, "red"))))
             .with_panel(single("Failure-risk refresh working", "min(vigil_failure_risk_up)", COUNT,
                                "1 when the last refresh of the risks from Prometheus succeeded.", width=5,
                                thresholds=((None, "red"), (1, "green"))))
             .with_panel(single("Since the last risk refresh",
                                "time() - max(vigil_failure_risk_last_success_timestamp_seconds)", SECONDS,
                                "Age of the exported risks.", width=5, thresholds=((None, "green"), (900, "red"))))
             .with_panel(single("GPUs outside their band now",
                                f"count(({UTIL} > on(node, gpu) group_left vigil_baseline_upper{{{U}}}) or "
                                f"({UTIL} < on(node, gpu) group_left vigil_baseline_lower{{{U}}})) or vector(0)",
                                COUNT, "GPUs whose utilization sits outside its learned band now (0 on a healthy "
                                "fleet; the graph below shows which).", width=4,
                                thresholds=((None, "green"), (1, "orange")))))
    board = (board.with_row(Row("Baselines: $metric"))
             .with_panel(graph("Series and baseline band", [
                 (f"vigil_baseline_lower{{{M}}}", "lower {{node}} {{gpu}}"),
                 (f"vigil_baseline_expected{{{M}}}", "expected {{node}} {{gpu}}"),
                 (f"vigil_baseline_upper{{{M}}}", "upper {{node}} {{gpu}}")], COUNT,
                 "The normal band the baseline learned for each series of the metric (for counters the band is of "
                 "the per-second rate; compare with rate(x[5m])).", width=24, links=[_TO_NODE]))
             .with_panel(graph("Anomalies: outside the band", [
                 (f"{UTIL} > on(node, gpu) group_left vigil_baseline_upper{{{U}}}", "above {{node}} {{gpu}}"),
                 (f"{UTIL} < on(node, gpu) group_left vigil_baseline_lower{{{U}}}", "below {{node}} {{gpu}}")],
                 PERCENT, "GPU utilization samples above or below their learned band (the GpuLoadOutsideBaseline "
                 "alert of rules/specs/baselines.yaml pages on a GPU staying outside it).", links=[_TO_GPU],
                 empty="no GPU outside its band"))
             .with_panel(graph("Series with a model by class", "sum by (class) (vigil_baseline_series_by_class)",
                               COUNT, "How the baselines classified the series (periodic, ...): each class has "
                               "its own model.")))
    return (board.with_row(Row("Failure risk"))
            .with_panel(listing("Riskiest GPUs", 'topk(10, vigil_failure_risk{kind="gpu"})', PERCENT,
                                "GPU risk score 0-1; click a row for the GPU.", width=8, links=[_TO_GPU]))
            .with_panel(listing("Riskiest disks", 'topk(10, vigil_failure_risk{kind="disk"})', PERCENT,
                                "Probability that the disk fails within the horizon; click for the node.", width=8,
                                links=[_TO_NODE]))
            .with_panel(listing("Risk reasons", "topk(10, vigil_failure_risk_reason > 0)", COUNT,
                                "Each GPU signal's contribution to the risk, and each disk's top signal.", width=8,
                                links=[_TO_GPU]))
            .with_panel(graph("Failure risk over time", "topk(5, vigil_failure_risk)", PERCENT,
                              "The five riskiest GPUs and disks over the time range.", width=24, links=[_TO_NODE],
                              minimum=0, maximum=1)))
