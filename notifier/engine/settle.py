"""Resolutions that waited out `incidents.resolve_after`: each incident whose alerts stayed resolved
until its `resolving_at` is resolved now, by Alertmanager, and its resolved pages go out (the webhook
set the wait, `store/notifications.py`; firing again meanwhile cleared it). One pass of the escalation
loop (`escalation_loop.py`) settles what is due, one transaction per incident.
"""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.engine.escalation import resolved_pages
from vigil.notifier.schema import incidents
from vigil.notifier.store import Store, incident_state
from vigil.notifier.store.engine import reading

BATCH = 100


# `resolving_at` is set only while an incident fires (resolving clears it), so these read the index alone


def due(store: Store, now: float) -> list[int]:
    with reading(store.engine) as conn:
        return list(conn.execute(sa.select(incidents.c.id).where(incidents.c.resolving_at <= now)
                                 .order_by(incidents.c.resolving_at).limit(BATCH)).scalars())


def settle(store: Store, now: float) -> int:
    """Resolve every incident whose wait is over by `now`; returns how many resolved pages were enqueued."""
    added = 0
    for incident_id in due(store, now):
        with store.engine.begin() as conn:
            incident = incident_state.row(conn, incident_id, lock=True)
            if incident is None or incident.status != "firing" or incident.resolving_at is None \
                    or incident.resolving_at > now:
                continue  # fired again, or another notifier got there first
            incident_state.resolve(conn, incident_id, "alertmanager", now)
            added += resolved_pages(conn, incident_id, now, f"resolved:alertmanager:settled:{incident_id}",
                                    reason="its alerts stayed resolved through incidents.resolve_after")
    return added


def next_due(store: Store) -> float | None:
    """When the next waiting resolution is due (None: none waits)."""
    with reading(store.engine) as conn:
        return conn.execute(sa.select(sa.func.min(incidents.c.resolving_at))).scalar()
