"""The firing incidents whose alerts Alertmanager should still hold: all the SQL of
`vigil.notifier.reconcile_resolve` (which resolves them once Alertmanager has long forgotten them).

Read only; the resolution itself goes through `vigil.notifier.engine.actions.resolve`.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import incident_alerts, incidents, notifications
from vigil.notifier.store.engine import reading


@dataclass(frozen=True)
class FiringIncident:
    """A firing incident, the fingerprints of every alert it was notified of, and when its newest
    notification arrived (Unix seconds)."""

    id: int
    fingerprints: frozenset[str]
    last_notified_at: float


def firing_incidents(engine: sa.Engine, skip_receivers: frozenset[str]) -> list[FiringIncident]:
    """The firing incidents with alerts, but none whose notifications came to one of `skip_receivers`
    (the heartbeats': their alerts are the notifier's own, never Alertmanager's)."""
    firing = sa.select(incidents.c.id).where(incidents.c.status == "firing").scalar_subquery()
    with reading(engine) as conn:
        received = conn.execute(
            sa.select(notifications.c.incident_id, notifications.c.receiver, sa.func.max(notifications.c.received_at))
            .where(notifications.c.incident_id.in_(firing))
            .group_by(notifications.c.incident_id, notifications.c.receiver)).all()
        keys = conn.execute(sa.select(incident_alerts.c.incident_id, incident_alerts.c.alert_key)
                            .where(incident_alerts.c.incident_id.in_(firing))).all()
    last: dict[int, float] = {}
    skipped: set[int] = set()
    for incident_id, receiver, at in received:
        last[incident_id] = max(at, last.get(incident_id, at))
        if receiver in skip_receivers:
            skipped.add(incident_id)
    fingerprints: dict[int, set[str]] = {}
    for incident_id, key in keys:
        fingerprints.setdefault(incident_id, set()).add(key.partition("@")[0])  # key: fingerprint@start
    return [FiringIncident(incident_id, frozenset(found), last[incident_id])
            for incident_id, found in sorted(fingerprints.items())
            if incident_id in last and incident_id not in skipped]
