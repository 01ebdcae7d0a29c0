"""What Prometheus shows around an incident: when the fault first showed in the metrics, which jobs held
the affected GPUs, and the series to chart with the alert's threshold or AIOps baseline band.

"First visible sign": the first sample of the range query of the alert's own expression (as
Prometheus has it loaded, `/api/v1/rules`) that returns a series for the alert's node/GPU — the moment
the condition first held on scraped data, before `for:` let the alert fire. When Prometheus does not
know the rule or has no such sample (retention, a rule changed since), the time stays unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import promql_parser

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable, RangeSeries
from vigil.common.times import parse_time
from vigil.rules.backtest_records import inline_records
from vigil.rules.promql import quote

LOOKBACK_S = 15 * 60  # charts start this long before the first alert
AFTER_S = 5 * 60  # ... and end this long after the resolution (or now)
SIGN_LOOKBACK_S = 6 * 3600  # the first sign of the fault is searched this far before the first alert
MAX_POINTS = 600
MAX_SERIES = 8  # lines per chart
MAX_CHARTS = 4
MATCH_LABELS = ("node", "gpu")
COMPARISONS = {"==", "!=", ">", "<", ">=", "<="}
SET_OPERATORS = {"and", "or", "unless"}
EMPTY_MATCHERS = re.compile(r"([A-Za-z0-9_:])\{\}")
BASELINE = re.compile(r'vigil_baseline_(?:lower|upper|expected)\{metric="([^"]+)"')


@dataclass
class Line:
    label: str
    points: list[tuple[float, float]]


@dataclass
class Chart:
    title: str
    query: str
    lines: list[Line]
    threshold: tuple[str, float] | None = None  # (operator, value)
    band: tuple[list[tuple[float, float]], list[tuple[float, float]]] | None = None  # lower, upper points
    png: bytes = b""


@dataclass
class Evidence:
    start: float
    end: float
    first_sign_at: float | None = None
    first_sign_how: str = "unknown: Prometheus was not asked"
    jobs: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what could not be gathered, said in the postmortem


def inlined(expr: str, records) -> str:
    """`expr` with each instant read of a recorded series of `records` replaced by its expression."""
    return inline_records(expr, records)[0]


def split_threshold(expr: str) -> tuple[str, str, float] | None:
    """(the compared expression, operator, number) of an alert `X > 90`, looking through parentheses
    and into the left side of `and` / `or` / `unless`; None when the alert compares no number."""
    try:
        node = promql_parser.parse(expr)
    except ValueError:
        return None
    while True:
        kind = type(node).__name__
        if kind == "ParenExpr":
            node = node.expr
        elif kind == "BinaryExpr" and str(node.op) in SET_OPERATORS:
            node = node.lhs
        elif kind == "BinaryExpr" and str(node.op) in COMPARISONS:
            if type(node.rhs).__name__ == "NumberLiteral":
                # the parser prints a bare metric name as `name{}`: the same series, shown as written
                return EMPTY_MATCHERS.sub(r"\1", str(node.lhs)), str(node.op), float(node.rhs.val)
            return None
        else:
            return None


def matches(series: dict, targets: list[dict]) -> bool:
    """A series belongs to the incident when its node (and GPU) are those of one of its alerts."""
    return any(all(series.get(k) == t[k] for k in MATCH_LABELS if k in t and k in series) and
               any(k in series and k in t for k in MATCH_LABELS) for t in targets)


def window(incident: dict, now: float) -> tuple[float, float, float]:
    """(start, end, step) of the range queries around the incident."""
    starts = [parse_time(a.get("startsAt")) for a in incident.get("alerts") or []]
    begin = min([t for t in starts if t is not None] + [parse_time(incident["opened_at"])])
    resolved = parse_time(incident.get("resolved_at"))
    start, end = begin - LOOKBACK_S, min(now, (resolved if resolved is not None else now) + AFTER_S)
    return start, end, max(1.0, round((end - start) / MAX_POINTS))


def gather(prometheus: PrometheusClient, incident: dict, now: float) -> Evidence:
    """Evidence for `incident` (an `incident_detail` dict) from the Prometheus at `prometheus`; what
    Prometheus could not answer is listed in `problems` rather than raised."""
    start, end, step = window(incident, now)
    found = Evidence(start, end)
    targets = [{k: v for k, v in (a.get("labels") or {}).items() if k in MATCH_LABELS}
               for a in incident.get("alerts") or []] or [incident.get("labels") or {}]
    targets = [t for t in targets if t]
    try:
        loaded = prometheus.loaded_rules()
    except PrometheusUnavailable as exc:
        found.first_sign_how = f"unknown: {exc}"
        found.problems.append(str(exc))
        return found
    names = sorted({(a.get("labels") or {}).get("alertname") for a in incident.get("alerts") or []} - {None})
    found.first_sign_how = ("unknown: Prometheus has no rule for " + ", ".join(names) if names
                            else "unknown: the incident has no alerts to look up (a heartbeat's, say)")
    for name in names[:MAX_CHARTS]:
        if name not in loaded.alerts:
            continue
        try:
            # an alert that reads recorded series is looked at through their expressions (`inlined`):
            # the raw series have the history, and the band or threshold to draw is in them
            expr = inlined(loaded.alerts[name], loaded.records)
            _first_sign(found, prometheus, name, expr, targets)
            found.charts.append(_chart(prometheus, name, expr, targets, start, end, step))
        except PrometheusUnavailable as exc:
            found.problems.append(str(exc))
    try:
        found.jobs = _jobs(prometheus, targets, start, end, step)
    except PrometheusUnavailable as exc:
        found.problems.append(str(exc))
    return found


def _first_sign(found: Evidence, prometheus: PrometheusClient, name: str, expr: str, targets: list[dict]) -> None:
    """The first sample of `expr` on the affected series, searched up to SIGN_LOOKBACK_S before the first
    alert (a long `for:` waits that long); a condition already true at the search's start stays unknown."""
    begin = found.start + LOOKBACK_S  # the first alert's start
    start, end = begin - SIGN_LOOKBACK_S, min(found.end, begin + 60)
    step = max(1.0, (end - start) / 10_000)  # about 2 s; Prometheus answers 11,000 points at most
    mine = [s for s in prometheus.query_range(expr, start, end, step) if matches(s.labels, targets)]
    first = min((s.points[0][0] for s in mine if s.points), default=None)
    if first is None or (found.first_sign_at is not None and first >= found.first_sign_at):
        return
    if first < start + step:
        if found.first_sign_at is None:
            found.first_sign_how = (f"unknown: {name}'s condition already held at the earliest time looked at, "
                                    f"{SIGN_LOOKBACK_S // 3600} h before the first alert")
        return
    found.first_sign_at = first
    found.first_sign_how = f"first sample of {name}'s expression on the affected series: {expr}"


def _label(labels: dict) -> str:
    shown = [f"{k}={labels[k]}" for k in ("node", "gpu", "job_id", "device", "instance") if k in labels]
    return ", ".join(shown[:3]) or ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))[:60]


def _lines(series: list[RangeSeries], targets: list[dict]) -> list[Line]:
    mine = [s for s in series if matches(s.labels, targets)] or series
    return [Line(_label(s.labels), s.points) for s in mine[:MAX_SERIES]]


def _chart(prometheus: PrometheusClient, name: str, expr: str, targets: list[dict], start: float, end: float,
           step: float) -> Chart:
    baseline = BASELINE.search(expr)
    split = split_threshold(expr)
    query = baseline.group(1) if baseline else split[0] if split else expr
    chart = Chart(title=f"{name}: {query}", query=query,
                  lines=_lines(prometheus.query_range(query, start, end, step), targets))
    if baseline:
        edges = [_lines(prometheus.query_range(f'vigil_baseline_{edge}{{metric="{baseline.group(1)}"}}',
                                               start, end, step), targets) for edge in ("lower", "upper")]
        if edges[0] and edges[1]:
            chart.band = (edges[0][0].points, edges[1][0].points)
    elif split:
        chart.threshold = (split[1], split[2])
    return chart


def _jobs(prometheus: PrometheusClient, targets: list[dict], start: float, end: float, step: float) -> list[str]:
    """The jobs `vigil_gpu_job` attributes to the affected GPUs (a node's GPUs for a node alert)."""
    nodes = sorted({t["node"] for t in targets if "node" in t})
    if not nodes:
        return []
    # re.escape writes `\-` for `node-1`: quote() doubles the backslash, PromQL's string would refuse it
    selector = "vigil_gpu_job{node=~%s}" % quote("|".join(re.escape(n) for n in nodes))
    series = prometheus.query_range(f"max by (node, gpu, job_id) ({selector})", start, end, step)
    return sorted({s.labels["job_id"] for s in series if "job_id" in s.labels and matches(s.labels, targets)})
