"""The validated rule model: what a set of spec files means once every compact kind is expanded.

All types are frozen; generation stages read them and never change them.
"""

from __future__ import annotations

from dataclasses import dataclass

SEVERITIES = ("critical", "warning", "info")
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
    kind: str = "expr"
    drill: str | None = None  # the simulated-fleet fault that makes this alert fire (`vigil drill FAULT`)
    file: str = ""
    line: int = 0


@dataclass(frozen=True)
class Group:
    """The alerts of one spec file: one Prometheus rule group."""

    name: str
    alerts: tuple[Alert, ...]
    interval: str | None = None
    file: str = ""


@dataclass(frozen=True)
class RuleSet:
    """Everything loaded from a list of spec files."""

    groups: tuple[Group, ...]
    inhibitions: tuple[Inhibition, ...] = ()

    @property
    def alerts(self) -> tuple[Alert, ...]:
        return tuple(alert for group in self.groups for alert in group.alerts)

    def alert(self, name: str) -> Alert:
        for alert in self.alerts:
            if alert.name == name:
                return alert
        raise KeyError(name)
