"""Every panel query of the dashboards run against a live Prometheus, the way Grafana would run it: the
template variables take the first value their own query returns there (in order, so `$gpu` is a GPU of
`$node`), Grafana's built-in variables a window that fits a young demo stack.

Queries that are legitimately empty in a healthy demo are listed with the reason: by panel (or one
query of a panel) in EMPTY_WHEN_HEALTHY, by metric the demo lacks in EMPTY_METRICS (DCGM's last XID code, InfiniBand); the
end-to-end test requires data from every other query and checks the error panels after a fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

from .check import BUILTINS, expand, variable_query
from .panels import panels

# a demo stack scrapes every second and is minutes old: windows of 5 minutes at 1-second resolution
LIVE_BUILTINS = {**BUILTINS, "__rate_interval": "1m", "__interval": "1s", "__range": "5m", "__range_s": "300"}
_NO_ERRORS = "no GPU has had an XID in a healthy demo (the chaos test checks it after xid79)"
_RECORDED = ("read from the gpu_records*.yaml recording rules, evaluated once a minute: a demo younger than that may "
             "not have them yet (tests/test_dashboards_jobs_promtool.py proves these queries)")
_BETWEEN_JOBS = ("no job holds the chosen GPU (or node) now: the simulated job slots there are between two jobs "
                 "(a few minutes of each 45-105), or the fleet runs no jobs")
_ONCALL_WINDOW = ("the notifier's vigil_oncall_* figures have a series per team and priority of the incidents in its "
                  "window, worked out once a minute: none before the first incident (docs/oncall-health.md's tests "
                  "prove the figures)")
# (dashboard uid, panel title) or (uid, title, query refId) -> why it may show no data in a healthy demo
EMPTY_WHEN_HEALTHY = {
    ("vigil-fleet", "GPUs with errors now"): _NO_ERRORS,
    ("vigil-fleet", "Allocated GPUs idle by team"): "no job holds a GPU (the fleet runs no jobs)",
    ("vigil-fleet", "Jobs"): _RECORDED,
    ("vigil-fleet", "GPU-hours allocated vs. used", "B"): _RECORDED,
    ("vigil-fleet", "Usage efficiency"): _RECORDED,
    ("vigil-fleet", "MTTR"): "no incident has been resolved in a fresh demo",
    ("vigil-node", "Jobs"): _BETWEEN_JOBS,
    ("vigil-gpu", "Last XID"): _NO_ERRORS,
    ("vigil-gpu", "Jobs on this GPU"): _BETWEEN_JOBS,
    ("vigil-job", "Average utilization"): _RECORDED,
    ("vigil-stack", "Page delivery latency (p95)"): "nothing pages in a healthy demo",
    ("vigil-aiops", "Anomalies: outside the band"): "a healthy GPU's load sits inside its learned band (the count "
                                                     "beside it reads 0; tests/test_stack_aiops_e2e.py drives one out)",
    ("vigil-oncall", "Firing alerts on nodes"): "no node alert fires in a healthy demo (the chaos test checks it)",
    **{("vigil-oncall", title): _ONCALL_WINDOW for title in (
        "Escalation ratio", "Acknowledged ratio", "Acted-on ratio")},
    **{("vigil-oncall", title): _ONCALL_WINDOW + "; and only once a person acknowledges or resolves an incident"
       for title in ("MTTA", "MTTR", "SLA compliance")},
}
_DCGM = "DCGM's last XID code: the demo's simulated fleet speaks NVML, which has none (its per-XID times serve)"
_NO_IB = "the demo's node health exporter reads this host's sysfs, which has no InfiniBand device"
_NO_PAGE_RETIREMENT = ("the simulated fleet answers as a real H100 does: since Ampere a GPU remaps rows instead of "
                       "retiring pages, and NVML refuses the retired-page calls (docs/exporters-real-gpu.md)")
_NO_AIOPS = ("written by the AIOps service, which the dashboards' demo stack does not run (start_stack's aiops=False); "
             "tests/test_dashboards_aiops_e2e.py runs these queries in a stack with it")
# metrics the demo does not have -> why: a query reading one of them may be empty
EMPTY_METRICS = {
    "vigil_gpu_last_xid_code": _DCGM,
    "vigil_infiniband_port_errors_total": _NO_IB, "vigil_infiniband_port_up": _NO_IB,
    "vigil_gpu_retired_pages_pending": _NO_PAGE_RETIREMENT, "vigil_gpu_retired_pages_total": _NO_PAGE_RETIREMENT,
    **{metric: _NO_AIOPS for metric in (
        "vigil_failure_risk", "vigil_failure_risk_reason", "vigil_failure_risk_up",
        "vigil_failure_risk_last_success_timestamp_seconds", "vigil_baseline_expected", "vigil_baseline_lower",
        "vigil_baseline_upper", "vigil_baseline_series", "vigil_baseline_series_by_class",
        "vigil_baseline_last_fit_timestamp_seconds")},
}


@dataclass(frozen=True)
class LiveResult:
    dashboard: str
    panel: str
    ref: str
    query: str  # as sent, variables expanded
    series: int
    error: str | None = None
    unresolved: bool = False  # a variable of the query had no value in this Prometheus
    folded: bool = False  # in a collapsed row: Grafana runs it only once someone opens the row

    @property
    def key(self) -> tuple[str, str]:
        return self.dashboard, self.panel


def variable_values(model: dict, client: PrometheusClient, chosen: dict[str, str] | None = None) -> dict[str, str]:
    """Each variable's first value (sorted) from the live Prometheus, or the value `chosen` for it (the
    variables after it are then resolved with that one, as Grafana does); a variable without values is
    left out."""
    values: dict[str, str] = {}
    for var in (model.get("templating") or {}).get("list") or []:
        expr = variable_query(var)
        if expr is None:
            continue
        label = var.get("name")
        if chosen and label in chosen:
            values[label] = chosen[label]
            continue
        found = sorted({sample.labels.get(label, "") for sample in client.query(expand(expr, values, LIVE_BUILTINS)[0])}
                       - {""})
        if label and found:
            values[label] = found[0]
    return values


def run_dashboard(model: dict, client: PrometheusClient, chosen: dict[str, str] | None = None) -> list[LiveResult]:
    """Each query of each panel, instant, at now, the variables as Grafana sets them (`chosen`, else each
    one's first value); a query Prometheus refuses has its error instead."""
    values = variable_values(model, client, chosen)
    folded = {id(inner) for row in model.get("panels") or [] for inner in row.get("panels") or []}
    results = []
    for panel in panels(model):
        for target in panel.get("targets") or []:
            query, _, unresolved = expand(target.get("expr", ""), values, LIVE_BUILTINS)
            try:
                series, error = len(client.query(query)), None
            except PrometheusUnavailable as exc:
                series, error = 0, str(exc)
            results.append(LiveResult(model["uid"], panel.get("title", ""), target.get("refId", ""), query, series,
                                      error, bool(unresolved), id(panel) in folded))
    return results


def allowed_empty(result: LiveResult) -> str | None:
    """Why `result` may be empty in a healthy demo, or None when it must have data."""
    for key in (result.key, (*result.key, result.ref)):
        if key in EMPTY_WHEN_HEALTHY:
            return EMPTY_WHEN_HEALTHY[key]
    return next((why for metric, why in EMPTY_METRICS.items() if re.search(rf"\b{metric}\b", result.query)), None)
