"""Lint checks that read the parsed query against the metric catalog (in the spirit of cloudflare/pint):
the expression parses, every metric it reads exists, every label it matches, groups or joins on exists
on those metrics, range windows are long enough, and the labels the templates, routing and
inhibitions need are on the alert.

Each check returns `(check id, message)`; the loader reports them at the spec's `file:line`. Metrics
or labels that are not known (outside the catalog and undeclared, or with dynamic labels) are never
guessed at: the unknown metric is reported once and its labels are not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.common.durations import format_duration

from .catalog import MetricCatalog
from .query import LabelSet, QuerySyntaxError, RANGE_RATE_FUNCTIONS, Reading, read_query

SYNTAX = "promql-syntax"
UNKNOWN_METRIC = "unknown-metric"
UNKNOWN_LABEL = "unknown-label"
SHORT_RANGE = "rate-window"
MISSING_LABEL = "missing-label"
NEWER_PROMETHEUS = "prometheus-version"
QUERY_LINT_IDS = (UNKNOWN_METRIC, UNKNOWN_LABEL, SHORT_RANGE, MISSING_LABEL, NEWER_PROMETHEUS)  # SYNTAX: never

PROMETHEUS_VERSION = "2.42"  # what vigil's stack runs (Debian bookworm)
# Functions and aggregations the parser knows that came after that version (first release with it).
_NEWER_FUNCTIONS = {"histogram_stddev": "2.44", "histogram_stdvar": "2.44", "histogram_avg": "2.49",
                    "sort_by_label": "2.49", "sort_by_label_desc": "2.49", "mad_over_time": "2.50",
                    "limitk": "2.54", "limit_ratio": "2.54", "double_exponential_smoothing": "3.0", "info": "3.0"}

RANGE_FACTOR = 4  # a window holds at least 4 scrapes: rate() survives a missed scrape
ROUTING_LABELS = ("severity", "team")  # the route tree matches on these (docs/rules.md)
_TARGET_HINT = "; if your scrape configuration adds it to every target, list it in the spec's 'target_labels'"
_TEMPLATE_LABEL = re.compile(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)")


@dataclass(frozen=True)
class AlertQuery:
    """What the query lint needs of one alert."""

    expr: str
    static_labels: frozenset[str]  # severity, team and the spec's own labels
    templates: tuple[str, ...]  # summary, description
    scrape_interval_s: float
    target_labels: frozenset[str] = frozenset()  # labels the deployment's scrape config adds to every series
    routed: bool = True  # an alert (needs severity and team); False for a recording rule


def check_query(query: AlertQuery, catalog: MetricCatalog, external: dict[str, LabelSet]) -> tuple[
        list[tuple[str, str]], LabelSet]:
    """(findings, the alert's label names or None when not known) for one alert."""
    def labels_of(name: str) -> LabelSet:
        labels = external[name] if name in external else catalog.labels(name)
        return None if labels is None else labels | query.target_labels

    try:
        reading = read_query(query.expr, labels_of)
    except QuerySyntaxError as exc:
        return [(SYNTAX, f"the expression is not valid PromQL: {exc}")], None
    findings = _metrics(reading, catalog, external) + _labels(reading, labels_of) + _ranges(reading, query)
    findings += [(NEWER_PROMETHEUS, f"{name}() needs Prometheus {_NEWER_FUNCTIONS[name]}; vigil's stack runs "
                  f"{PROMETHEUS_VERSION}") for name in dict.fromkeys(reading.calls) if name in _NEWER_FUNCTIONS]
    alert_labels = None if reading.output is None else reading.output | query.static_labels
    findings += _needed_labels(query, alert_labels)
    return findings, alert_labels


def _metrics(reading: Reading, catalog: MetricCatalog, external: dict[str, LabelSet]) -> list[tuple[str, str]]:
    findings, seen = [], set()
    for selector in reading.selectors:
        name = selector.name
        if name is None or name in seen or name in external or catalog.get(name) is not None:
            continue
        seen.add(name)
        close = catalog.close_names(name)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        hardware = ("the catalog's node_exporter metrics are those of the machine it was generated on, so a "
                    "collector that needs hardware it lacks (InfiniBand, hwmon, ...) is missing; "
                    if name.startswith("node_") else "")
        findings.append((UNKNOWN_METRIC, f"metric {name!r} is exported by no vigil exporter, node_exporter, "
                         f"Prometheus, Alertmanager or the notifier, and no recording rule of the specs records it; {hint}{hardware}if another exporter provides "
                         "it, declare it in the spec's 'external_metrics' (name: [its labels])"))
    return findings


def _labels(reading: Reading, labels_of) -> list[tuple[str, str]]:
    findings = []
    for selector in reading.selectors:
        known = labels_of(selector.name) if selector.name else None
        for label, op, value in selector.matchers:
            if known is None or label == "__name__" or label in known or (op in ("=", "=~") and value == ""):
                continue
            findings.append((UNKNOWN_LABEL, f"{selector.name}{{{label}{op}...}}: {selector.name!r} has no label "
                             f"{label!r} (its labels: {', '.join(sorted(known)) or 'none'}){_TARGET_HINT}"))
    for use in reading.label_uses:
        sides = [side for side in use.sides if side is not None]
        if not sides:
            continue
        missing = [side for side in sides if use.label not in side]
        if (use.any_side and len(missing) < len(sides)) or not missing:
            continue
        findings.append((UNKNOWN_LABEL, f"{use.where}: label {use.label!r} is not on the series it matches "
                         f"(they have: {', '.join(sorted(missing[0])) or 'no labels'}){_TARGET_HINT}"))
    return findings


def _ranges(reading: Reading, query: AlertQuery) -> list[tuple[str, str]]:
    minimum = RANGE_FACTOR * query.scrape_interval_s
    return [(SHORT_RANGE, f"{func}() over [{format_duration(seconds)}] sees fewer than {RANGE_FACTOR} scrapes at the "
             f"{format_duration(query.scrape_interval_s)} scrape interval; use a window of at least "
             f"{format_duration(minimum)}")
            for func, seconds in reading.ranges if func in RANGE_RATE_FUNCTIONS and seconds < minimum]


def _needed_labels(query: AlertQuery, alert_labels: LabelSet) -> list[tuple[str, str]]:
    if not query.routed:
        return []
    findings = [(MISSING_LABEL, f"the alert has no {label!r} label, which the Alertmanager routing needs; set it "
                 "in 'labels' or the file's 'defaults: labels'")
                for label in ROUTING_LABELS if label not in query.static_labels]
    if alert_labels is None:
        return findings
    used = sorted({label for text in query.templates for label in _TEMPLATE_LABEL.findall(text)})
    for label in used:
        if label not in alert_labels:
            findings.append((MISSING_LABEL, f"the templates use $labels.{label}, but the expression's result has "
                             f"no {label!r} label (it has: {', '.join(sorted(alert_labels)) or 'none'})"))
    return findings


def inhibition_findings(source: str, target: str, equal: tuple[str, ...],
                        labels: dict[str, LabelSet]) -> list[str]:
    """Messages for `equal` labels that the source or target alert does not carry (never equal: never muted)."""
    problems = []
    for role, name in (("source", source), ("target", target)):
        have = labels.get(name)
        if have is None:
            continue
        for label in equal:
            if label not in have:
                problems.append(f"inhibition {source} -> {target}: the {role} alert {name} has no {label!r} label "
                                f"(it has: {', '.join(sorted(have))}), so 'equal: [{', '.join(equal)}]' never "
                                "matches; drop the label or add it to the alert")
    return problems
