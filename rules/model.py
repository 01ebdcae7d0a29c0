"""The validated rule model: what a set of spec files means once every compact kind is expanded.

All types are frozen; generation stages read them and never change them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SEVERITIES = ("critical", "warning", "info")
# what an alert does to a person: `page` wakes the on-call and escalates; `ticket` waits for working
# hours and is never escalated (the generated `notify` label; the notifier reads it)
NOTIFY = ("page", "ticket")
ALL_OTHER_ALERTS = "*"  # in `inhibits`: every alert except the source itself


@dataclass(frozen=True)
class Inhibition:
    """While `source` fires, alerts named `target` (or all others for `*`) with equal `equal` labels are muted."""

    source: str
    target: str
    equal: tuple[str, ...]


@dataclass(frozen=True)
class Alert:
    """One alerting rule, with its expression already in PromQL."""

    name: str
    expr: str
    severity: str
    summary: str
    description: str
    runbook_url: str
    for_: str | None = None  # a Prometheus duration, None for "fire at once"
    keep_firing_for: str | None = None
    labels: tuple[tuple[str, str], ...] = ()  # extra labels (defaults merged in), sorted by name
    notify: str | None = None  # page | ticket, as declared (None: not declared, generated as `page`)
    kind: str = "expr"
    drill: str | None = None  # the simulated-fleet fault that makes this alert fire (`vigil drill FAULT`)
    file: str = ""
    line: int = 0
    carries: tuple[str, ...] | None = None  # the label names of the alerts it raises (None: not known), set by the lint


@dataclass(frozen=True)
class Recording:
    """One recording rule: `expr` evaluated and stored as the series `name` (with `labels` added)."""

    name: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()  # sorted by name
    file: str = ""
    line: int = 0
    keeps: tuple[str, ...] | None = None  # the recorded series' label names (None: not known), set by the lint


@dataclass(frozen=True)
class Group:
    """The recording rules and alerts of one spec file: one Prometheus rule group, records first."""

    name: str
    alerts: tuple[Alert, ...]
    interval: str | None = None
    file: str = ""
    records: tuple[Recording, ...] = ()


@dataclass(frozen=True)
class RuleSet:
    """Everything loaded from a list of spec files."""

    groups: tuple[Group, ...]
    inhibitions: tuple[Inhibition, ...] = ()

    @property
    def alerts(self) -> tuple[Alert, ...]:
        return tuple(alert for group in self.groups for alert in group.alerts)

    @property
    def records(self) -> tuple[Recording, ...]:
        return tuple(record for group in self.groups for record in group.records)

    def causes_of(self, alert: Alert) -> list[Inhibition]:
        """The links that make `alert` a symptom (the inhibitions that can mute it): those naming it, or
        every other alert (`*`), whose `equal` labels it carries — Alertmanager never finds a label
        equal that one side lacks, so node down cannot mute a job's alert that has no `node`."""
        return [inh for inh in self.inhibitions
                if (inh.target == alert.name or (inh.target == ALL_OTHER_ALERTS and inh.source != alert.name))
                and (alert.carries is None or set(inh.equal) <= set(alert.carries))]

    def without(self, names: set[str]) -> "RuleSet":
        """This rule set less the alerts named (and the inhibitions that name them)."""
        if not names:
            return self
        groups = tuple(replace(group, alerts=tuple(a for a in group.alerts if a.name not in names))
                       for group in self.groups)
        return replace(self, groups=groups, inhibitions=tuple(
            i for i in self.inhibitions if i.source not in names and i.target not in names))

    def alert(self, name: str) -> Alert:
        for alert in self.alerts:
            if alert.name == name:
                return alert
        raise KeyError(name)
