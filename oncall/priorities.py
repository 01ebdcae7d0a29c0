"""Priorities P1…P5: each one's response targets, and how an alert's labels decide its priority.

The decision order: the matching route's `priority` → the alert's own `priority` label (when it is
a valid name) → `severities[severity]` → `default_priority`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from vigil.oncall.notify_rules import PRIORITIES, Duration, Priority

DEFAULT_SEVERITIES: dict[str, str] = {"critical": "P1", "warning": "P3", "info": "P5"}


class PrioritySla(BaseModel):
    """Time to acknowledge and time to resolve for one priority (absent: no target)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ack_within: Duration | None = None
    resolve_within: Duration | None = None


def decide_priority(route_priority: str | None, labels: dict[str, str], severities: dict[str, str],
                    default: str) -> str:
    """The priority of an alert with `labels` routed by a route saying `route_priority`."""
    if route_priority is not None:
        return route_priority
    label = labels.get("priority")
    if label in PRIORITIES:
        return label
    return severities.get(labels.get("severity", ""), default)


__all__ = ["DEFAULT_SEVERITIES", "PRIORITIES", "Priority", "PrioritySla", "decide_priority"]
