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


def firing_incidents(engine: sa.Engine, skip_group_prefix: str) -> list[FiringIncident]:
    """The firing incidents with alerts, but none whose group key starts with `skip_group_prefix` (the
    heartbeats': their alerts are the notifier's own, never Alertmanager's)."""
    firing = (sa.select(incidents.c.id)
              .where(incidents.c.status == "firing", ~incidents.c.group_key.startswith(skip_group_prefix, autoescape=True))
              .scalar_subquery())
    with reading(engine) as conn:
        last = dict(conn.execute(
            sa.select(notifications.c.incident_id, sa.func.max(notifications.c.received_at))
            .where(notifications.c.incident_id.in_(firing)).group_by(notifications.c.incident_id)).all())
        keys = conn.execute(sa.select(incident_alerts.c.incident_id, incident_alerts.c.alert_key)
                            .where(incident_alerts.c.incident_id.in_(firing))).all()
    fingerprints: dict[int, set[str]] = {}
    for incident_id, key in keys:
        fingerprints.setdefault(incident_id, set()).add(key.partition("@")[0])  # key: fingerprint@start
    return [FiringIncident(incident_id, frozenset(found), last[incident_id])
            for incident_id, found in sorted(fingerprints.items()) if incident_id in last]
