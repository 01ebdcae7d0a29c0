"""Pure generation stages: `RuleSet` → Prometheus rule-file document and Alertmanager inhibit rules.

The results are plain dicts and lists in a fixed key order; `rules.dump.dump_yaml` writes them.
"""

from __future__ import annotations

from vigil.common import job_annotation, symptoms
from vigil.common.durations import format_duration, parse_prometheus_duration

from .model import ALL_OTHER_ALERTS, Alert, Group, Recording, RuleSet
from .promql import quote


def _duration(value: str | None, max_for_seconds: float | None) -> str | None:
    """The duration to write: None for zero/absent, capped at `max_for_seconds` when given."""
    if value is None:
        return None
    seconds = parse_prometheus_duration(value)
    if max_for_seconds is not None and seconds > max_for_seconds:
        value, seconds = format_duration(max_for_seconds), max_for_seconds
    return value if seconds > 0 else None


# an `absent` alert's `for` is never cut below this by --max-for: a fresh Prometheus evaluates rules a
# few seconds before its first scrapes (target discovery starts after a short delay), and a target not
# scraped yet is not absent: under a demo's seconds-long cap it would page on every start
ABSENT_MIN_FOR_S = 60.0


def capped_for(alert: Alert, max_for_seconds: float | None) -> float | None:
    """The cap --max-for puts on `alert`'s `for` and `keep_firing_for` (None: none)."""
    if max_for_seconds is None or alert.kind != "absent":
        return max_for_seconds
    return max(max_for_seconds, ABSENT_MIN_FOR_S)


def about_one_gpu(alert: Alert) -> bool:
    """An alert about one GPU (its text names `$labels.gpu`) whose labels name no job: it gets the `job`
    annotation (`vigil.common.job_annotation`), the job holding that GPU as Prometheus sees it."""
    return "$labels.gpu" in alert.summary + alert.description and "job_id" not in alert.expr


def alerting_rule(alert: Alert, max_for_seconds: float | None = None, symptom_of: str | None = None,
                  for_notifier: bool = True) -> dict:
    """One entry of a rule group's `rules` list; `symptom_of` the alert's causes (`symptom_annotations`);
    `for_notifier`: with the `job` annotation of an alert about one GPU (False: `vigil rules test`)."""
    rule: dict = {"alert": alert.name, "expr": alert.expr}
    for key, value in (("for", alert.for_), ("keep_firing_for", alert.keep_firing_for)):
        capped = _duration(value, capped_for(alert, max_for_seconds))
        if capped is not None:
            rule[key] = capped
    rule["labels"] = {"severity": alert.severity, "notify": alert.notify or "page", **dict(alert.labels)}
    rule["annotations"] = {"summary": alert.summary, "description": alert.description,
                           "runbook_url": alert.runbook_url}
    if symptom_of is not None:
        rule["annotations"][symptoms.ANNOTATION] = symptom_of
    if for_notifier and about_one_gpu(alert):
        rule["annotations"][job_annotation.ANNOTATION] = job_annotation.template()
    return rule


def recording_rule(record: Recording) -> dict:
    """One recording rule entry: `record`, `expr` and, when the spec sets any, `labels`."""
    rule: dict = {"record": record.name, "expr": record.expr}
    if record.labels:
        rule["labels"] = dict(record.labels)
    return rule


def rule_group(group: Group, max_for_seconds: float | None = None,
               symptom_of: dict[str, str] | None = None, for_notifier: bool = True) -> dict:
    """One rule group: its recording rules first, so that its alerts read this evaluation's values
    (Prometheus evaluates the rules of a group in order, one after the other).

    With `max_for_seconds` (a quick demo) the group's own `interval` is left out too: a 1-minute group
    would otherwise hold its alerts back for up to a minute however short their `for` is made."""
    doc: dict = {"name": group.name}
    if group.interval and max_for_seconds is None:
        doc["interval"] = group.interval
    doc["rules"] = [recording_rule(record) for record in group.records] + \
        [alerting_rule(alert, max_for_seconds, (symptom_of or {}).get(alert.name), for_notifier)
         for alert in group.alerts]
    return doc


# how late a cause may reach the notifier after its symptom, beyond the cause's `for` and its group's
# evaluation interval: the scrape that sees the fault and Alertmanager's hand-on (both groups wait the
# same group_wait); two scrapes at the default 15 s. A stack that knows its own intervals passes its own
# (`vigil up`: `vigil.stack.config`).
CAUSE_MARGIN_S = 30.0
DEFAULT_EVALUATION_S = 15.0  # a group without `interval` (and every group under --max-for)
# the longest a symptom's first page is held for its cause: a warning that a critical of the same
# condition mutes (SmartDataStale → SmartCollectionFailing, 30 m later) is a fault of its own meanwhile
MAX_CAUSE_WAIT_S = 300.0


def prometheus_rule_file(ruleset: RuleSet, *, max_for_seconds: float | None = None, symptoms: bool = True,
                         evaluation_s: float = DEFAULT_EVALUATION_S, cause_margin_s: float = CAUSE_MARGIN_S) -> dict:
    """The Prometheus rule-file document `{"groups": [...]}`.

    `max_for_seconds` caps every `for` and `keep_firing_for` (an `absent` alert's at no less than
    `ABSENT_MIN_FOR_S`) and drops the groups' own intervals (a demo stack evaluating every second uses a
    few seconds so that drills are quick); None keeps the durations
    and intervals of the specs. `symptoms=False` leaves out the annotations written for the notifier,
    `symptom_of` and `job` (`vigil rules test`). `evaluation_s` (the Prometheus' global evaluation interval)
    and `cause_margin_s` (`CAUSE_MARGIN_S`) time the notifier's hold of a symptom for its cause (`symptom_annotations`).
    """
    if max_for_seconds is not None and max_for_seconds < 0:
        raise ValueError("max_for_seconds must be >= 0")
    causes = symptom_annotations(ruleset, max_for_seconds, evaluation_s, cause_margin_s) if symptoms else {}
    return {"groups": [rule_group(group, max_for_seconds, causes, symptoms) for group in ruleset.groups]}


def symptom_annotations(ruleset: RuleSet, max_for_seconds: float | None = None, evaluation_s: float = DEFAULT_EVALUATION_S,
                        cause_margin_s: float = CAUSE_MARGIN_S) -> dict[str, str]:
    """The `symptom_of` annotation (`vigil.common.symptoms`) of every alert that has a cause: its causes,
    and how long the notifier holds its first page for a cause that fires later — the longest cause's
    `for` plus its group's evaluation interval (`evaluation_s` for a group without one of its own) and
    `cause_margin_s`, less the symptom's own `for`, at most `MAX_CAUSE_WAIT_S`. Only causes that name the
    alert count for the wait: a `*` cause (a node down) takes the node's metrics away, so its symptoms
    rarely fire first, and holding every alert of a node for it would delay them all."""
    timing: dict[str, float] = {}
    for group in ruleset.groups:
        interval = (parse_prometheus_duration(group.interval) if group.interval and max_for_seconds is None
                    else evaluation_s)
        for alert in group.alerts:
            timing[alert.name] = interval
    out: dict[str, str] = {}
    for alert in ruleset.alerts:
        causes = ruleset.causes_of(alert)
        if not causes:
            continue
        named = [c for c in causes if c.target == alert.name]
        late = max((_seconds(ruleset.alert(c.source), max_for_seconds) + timing[c.source] for c in named),
                   default=None)
        wait = 0.0 if late is None else min(MAX_CAUSE_WAIT_S, max(0.0, late + cause_margin_s
                                                                  - _seconds(alert, max_for_seconds)))
        out[alert.name] = symptoms.encode(symptoms.SymptomOf(
            tuple(symptoms.Cause(c.source, c.equal) for c in causes), wait))
    return out


def _seconds(alert: Alert, max_for_seconds: float | None) -> float:
    """`alert`'s `for` in seconds, as written to the rule file."""
    capped = _duration(alert.for_, capped_for(alert, max_for_seconds))
    return 0.0 if capped is None else parse_prometheus_duration(capped)


def inhibit_source_matchers(alertname: str, equal: tuple[str, ...] | list[str]) -> list[str]:
    """The source side of an inhibit rule. Alertmanager counts a label that both alerts lack as equal,
    so a source without one of the `equal` labels would mute every target lacking it too (a NodeDown
    with no `node` muting the Watchdog); the source must carry each of them."""
    return [f"alertname={quote(alertname)}", *(f"{label}=~{quote('.+')}" for label in equal)]


def inhibit_rule(source: str, targets: list[str], equal: tuple[str, ...]) -> dict:
    """One inhibit rule: `source` mutes each of `targets` (`*`: every other alert) sharing `equal`."""
    if targets == [ALL_OTHER_ALERTS]:
        target = f"alertname!={quote(source)}"
    elif len(targets) == 1:
        target = f"alertname={quote(targets[0])}"
    else:
        target = f"alertname=~{quote('|'.join(targets))}"
    return {"source_matchers": inhibit_source_matchers(source, equal), "target_matchers": [target],
            "equal": list(equal)}


def alertmanager_inhibit_rules(ruleset: RuleSet) -> list[dict]:
    """Alertmanager `inhibit_rules` entries for every causal link of the specs: one rule per cause and
    `equal` labels, its symptoms in one regex (a `*` link keeps a rule of its own)."""
    targets: dict[tuple[str, tuple[str, ...], bool], list[str]] = {}
    for inhibition in ruleset.inhibitions:
        wildcard = inhibition.target == ALL_OTHER_ALERTS
        targets.setdefault((inhibition.source, inhibition.equal, wildcard), []).append(inhibition.target)
    return [inhibit_rule(source, names, equal) for (source, equal, _), names in targets.items()]
