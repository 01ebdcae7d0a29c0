"""Pure generation stages: `RuleSet` → Prometheus rule-file document and Alertmanager inhibit rules.

The results are plain dicts and lists in a fixed key order; `rules.dump.dump_yaml` writes them.
"""

from __future__ import annotations

from vigil.common.durations import format_duration, parse_prometheus_duration

from .model import ALL_OTHER_ALERTS, Alert, Group, Inhibition, Recording, RuleSet
from .promql import quote


def _duration(value: str | None, max_for_seconds: float | None) -> str | None:
    """The duration to write: None for zero/absent, capped at `max_for_seconds` when given."""
    if value is None:
        return None
    seconds = parse_prometheus_duration(value)
    if max_for_seconds is not None and seconds > max_for_seconds:
        value, seconds = format_duration(max_for_seconds), max_for_seconds
    return value if seconds > 0 else None


def alerting_rule(alert: Alert, max_for_seconds: float | None = None) -> dict:
    """One entry of a rule group's `rules` list."""
    rule: dict = {"alert": alert.name, "expr": alert.expr}
    for key, value in (("for", alert.for_), ("keep_firing_for", alert.keep_firing_for)):
        capped = _duration(value, max_for_seconds)
        if capped is not None:
            rule[key] = capped
    rule["labels"] = {"severity": alert.severity, "notify": alert.notify or "page", **dict(alert.labels)}
    rule["annotations"] = {"summary": alert.summary, "description": alert.description,
                           "runbook_url": alert.runbook_url}
    return rule


def recording_rule(record: Recording) -> dict:
    """One recording rule entry: `record`, `expr` and, when the spec sets any, `labels`."""
    rule: dict = {"record": record.name, "expr": record.expr}
    if record.labels:
        rule["labels"] = dict(record.labels)
    return rule


def rule_group(group: Group, max_for_seconds: float | None = None) -> dict:
    """One rule group: its recording rules first, so that its alerts read this evaluation's values
    (Prometheus evaluates the rules of a group in order, one after the other).

    With `max_for_seconds` (a quick demo) the group's own `interval` is left out too: a 1-minute group
    would otherwise hold its alerts back for up to a minute however short their `for` is made."""
    doc: dict = {"name": group.name}
    if group.interval and max_for_seconds is None:
        doc["interval"] = group.interval
    doc["rules"] = [recording_rule(record) for record in group.records] + \
        [alerting_rule(alert, max_for_seconds) for alert in group.alerts]
    return doc


def prometheus_rule_file(ruleset: RuleSet, *, max_for_seconds: float | None = None) -> dict:
    """The Prometheus rule-file document `{"groups": [...]}`.

    `max_for_seconds` caps every `for` and `keep_firing_for` and drops the groups' own intervals (a demo
    stack evaluating every second uses a few seconds so that drills are quick); None keeps the durations
    and intervals of the specs.
    """
    if max_for_seconds is not None and max_for_seconds < 0:
        raise ValueError("max_for_seconds must be >= 0")
    return {"groups": [rule_group(group, max_for_seconds) for group in ruleset.groups]}


def inhibit_source_matchers(alertname: str, equal: tuple[str, ...] | list[str]) -> list[str]:
    """The source side of an inhibit rule. Alertmanager counts a label that both alerts lack as equal,
    so a source without one of the `equal` labels would mute every target lacking it too (a NodeDown
    with no `node` muting the Watchdog); the source must carry each of them."""
    return [f"alertname={quote(alertname)}", *(f"{label}=~{quote('.+')}" for label in equal)]


def inhibit_rule(inhibition: Inhibition) -> dict:
    if inhibition.target == ALL_OTHER_ALERTS:
        target = f"alertname!={quote(inhibition.source)}"
    else:
        target = f"alertname={quote(inhibition.target)}"
    return {"source_matchers": inhibit_source_matchers(inhibition.source, inhibition.equal),
            "target_matchers": [target], "equal": list(inhibition.equal)}


def alertmanager_inhibit_rules(ruleset: RuleSet) -> list[dict]:
    """Alertmanager `inhibit_rules` entries for every `inhibits`/`inhibited_by` of the specs."""
    return [inhibit_rule(inhibition) for inhibition in ruleset.inhibitions]
