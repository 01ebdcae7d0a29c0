"""Running a backtest against a Prometheus server: one range query per rule, at its group's interval.

`backtest(client, ruleset, start, end, ...)` evaluates the rules of `ruleset` (the spec files given,
not what the server has loaded) with `/api/v1/query_range`, a step equal to the group's evaluation
interval (the spec's `interval`, else the server's global `evaluation_interval`), from `for` before
`start` so that an alert already pending at `start` fires on time. A range that would need more than
`MAX_POINTS` evaluations per series is evaluated at a coarser step, a whole multiple of the interval,
and the report says so (`coarsened_from`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import yaml

from vigil.common.durations import parse_prometheus_duration
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
from vigil.common.times import parse_time, rfc3339

from .backtest import Incident, RuleReport, count_flaps, matched_firings, ranked, series_firings
from .backtest_records import RecordingLike, inline_records
from .generate import capped_for
from .model import Alert, Group, RuleSet

MAX_POINTS = 11_000  # Prometheus refuses a range query of more than 11,000 points per series
PROMETHEUS_DEFAULT_INTERVAL = 60.0  # global.evaluation_interval when a configuration sets none
DEFAULT_FLAP_WINDOW = 15 * 60.0
TOO_MANY_SAMPLES = "too many samples"  # Prometheus's refusal of a query over --query.max-samples


@dataclass
class Backtest:
    """The reports, most noisy first, and the rules Prometheus refused to evaluate (`file:line: why`)."""

    start: float
    end: float
    reports: list[RuleReport]
    errors: list[str] = field(default_factory=list)
    incidents: int | None = None  # how many known incidents were compared; None: no incident history


def evaluation_step(interval: float, start: float, end: float, for_s: float) -> tuple[float, float | None]:
    """(step, the interval it replaces or None): the interval, coarsened to a whole multiple of it
    when [start - for, end] would need more than MAX_POINTS evaluations."""
    def points(step: float) -> float:  # + 2: the query starts on the step grid, up to a step before start - for
        return (end - start + for_s) / step + 2

    if points(interval) <= MAX_POINTS:
        return interval, None
    factor = math.ceil(points(interval) / MAX_POINTS)
    while points(interval * factor) > MAX_POINTS:
        factor += 1
    return interval * factor, interval


def server_evaluation_interval(client: PrometheusClient) -> float:
    """The global `evaluation_interval` of the Prometheus `client` talks to, read from its loaded configuration."""
    try:
        config = yaml.safe_load(client.config()) or {}
        text = (config.get("global") or {}).get("evaluation_interval")
    except (yaml.YAMLError, AttributeError):
        raise PrometheusUnavailable(f"{client.url} answered /api/v1/status/config with no readable configuration") from None
    return PROMETHEUS_DEFAULT_INTERVAL if text is None else parse_prometheus_duration(str(text))


def alert_labels(alert: Alert, series: dict[str, str]) -> dict[str, str]:
    """The labels Prometheus gives the alert of one result series: the series' own (without the
    metric name), overridden by the rule's, plus `alertname`."""
    labels = {k: v for k, v in series.items() if k != "__name__"}
    labels.update({"severity": alert.severity, **dict(alert.labels), "alertname": alert.name})
    return labels


@dataclass(frozen=True)
class Settings:
    """How to evaluate: the interval of groups that set none, the flap window, and an optional cap on every
    `for` and `keep_firing_for` (as `vigil rules generate --max-for` writes them, e.g. for the demo stack)."""

    default_interval: float
    flap_window: float = DEFAULT_FLAP_WINDOW
    max_for: float | None = None

    def duration(self, text: str | None, alert: Alert | None = None) -> float:
        """`text` in seconds, capped as the generator caps `alert`'s (`generate.capped_for`)."""
        seconds = parse_prometheus_duration(text) if text else 0.0
        cap = self.max_for if alert is None else capped_for(alert, self.max_for)
        return seconds if cap is None else min(seconds, cap)


def backtest_alert(client: PrometheusClient, alert: Alert, group: Group, interval: float, start: float,
                   end: float, settings: Settings, records: Sequence[RecordingLike] = ()) -> RuleReport:
    """Evaluate one alert over [start, end], the recording rules of `records` inlined into it (see
    `backtest_records`); raises PrometheusUnavailable when Prometheus refuses it."""
    for_s, keep_s = settings.duration(alert.for_, alert), settings.duration(alert.keep_firing_for, alert)
    step, coarsened_from = evaluation_step(interval, start, end, for_s)
    query_start = math.floor((start - for_s) / step) * step
    expr, from_history = inline_records(alert.expr, records)
    report = RuleReport(alert.name, group.name, alert.severity, alert.file, alert.line, step, for_s, keep_s,
                        coarsened_from=coarsened_from, from_history=tuple(from_history))
    for labels, times in query_times(client, expr, query_start, end, step).items():
        report.firings += series_firings(alert_labels(alert, dict(labels)), times, step, for_s, keep_s, start, end)
    report.firings.sort(key=lambda f: (f.start, f.labels))
    report.flaps = count_flaps(report.firings, settings.flap_window)
    return report


def query_times(client: PrometheusClient, expr: str, start: float, end: float, step: float) -> dict[tuple, list[float]]:
    """The evaluation times at which each series (sorted label pairs) of `expr` had a value. A range whose
    query would load more samples than the server allows (`--query.max-samples`: a whole fleet over a
    long range) is queried in halves on the step grid, down to single evaluations."""
    try:
        return {tuple(sorted(series.labels.items())): [t for t, _ in series.points]
                for series in client.query_range(expr, start, end, step)}
    except PrometheusUnavailable as exc:
        steps = round((end - start) / step)
        if TOO_MANY_SAMPLES not in str(exc) or steps < 1:
            raise
    middle = start + (steps // 2) * step
    found = query_times(client, expr, start, middle, step)
    for labels, times in query_times(client, expr, middle + step, end, step).items():
        found.setdefault(labels, []).extend(times)
    return found


def backtest(client: PrometheusClient, ruleset: RuleSet, start: float, end: float, settings: Settings,
             incidents: list[Incident] | None = None) -> Backtest:
    """Backtest every alert of `ruleset`; groups without an `interval` are evaluated every
    `settings.default_interval`; firings are compared with `incidents` when given."""
    reports, errors = [], []
    records = getattr(ruleset, "records", ())  # the specs' recording rules
    for group in ruleset.groups:
        interval = parse_prometheus_duration(group.interval) if group.interval else settings.default_interval
        for alert in group.alerts:
            try:
                report = backtest_alert(client, alert, group, interval, start, end, settings, records)
            except PrometheusUnavailable as exc:
                errors.append(f"{alert.file}:{alert.line}: alert {alert.name}: {exc}")
                continue
            if incidents is not None:
                report.matched_incidents = matched_firings(alert.name, report.firings, incidents)
            reports.append(report)
    return Backtest(start, end, ranked(reports), errors, None if incidents is None else len(incidents))


def incidents_from_api(rows: Iterable[dict], start: float, end: float) -> list[Incident]:
    """The notifier's incidents (`GET /api/v1/incidents` rows) that were open some time in [start, end]."""
    found = []
    for row in rows:
        opened = parse_time(row["opened_at"])
        resolved = parse_time(row.get("resolved_at"))
        if opened <= end and (resolved is None or resolved >= start):
            found.append(Incident(opened, resolved, dict(row.get("labels") or {}), row.get("title") or ""))
    return found


def as_json(result: Backtest, prometheus: str) -> dict:
    """The backtest as the JSON `vigil rules backtest --json` prints (docs/rules-backtest.md)."""
    return {
        "from": rfc3339(result.start), "to": rfc3339(result.end), "prometheus": prometheus,
        "incidents_compared": result.incidents,
        "rules": [_report_json(r) for r in result.reports],
        "errors": result.errors,
    }


def _report_json(r: RuleReport) -> dict:
    share = r.incident_share
    return {
        "alert": r.alert, "group": r.group, "severity": r.severity, "file": r.file, "line": r.line,
        "step_seconds": r.step, "coarsened_from_seconds": r.coarsened_from, "for_seconds": r.for_s,
        "keep_firing_for_seconds": r.keep_firing_for_s, "recorded_series_from_history": list(r.from_history),
        "firings": len(r.firings), "firing_seconds": round(r.firing_seconds, 3), "flaps": r.flaps,
        "series": len({f.labels for f in r.firings}), "still_firing": sum(f.open for f in r.firings),
        "incident_matches": r.matched_incidents, "incident_share": None if share is None else round(share, 4),
        "intervals": [{"labels": dict(f.labels), "start": rfc3339(f.start), "end": rfc3339(f.end), "open": f.open}
                      for f in r.firings],
    }
