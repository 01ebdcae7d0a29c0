"""Re-paging an acknowledged incident: an acknowledgement lasts the policy's
`repage_acknowledged_after`; once it has expired the escalation restarts at the first tier."""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.core.escalation_steps import ESCALATE, REPAGE, Escalation
from vigil.notifier.store import incident_state
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.timeline import Timeline
from vigil.oncall.plan import PolicySpec


def expire_acknowledgement(conn: sa.Connection, spec: PolicySpec, incident, escalation: Escalation,
                            now: float) -> Escalation | None:
    """A due `repage`: the policy from its first tier if the acknowledgement has expired, else None
    (the row is set to the expiry, or removed when the policy never re-pages)."""
    escalations = Escalations(conn.engine)
    after = spec.repage_acknowledged_after_s
    if after is None:
        escalations.delete(conn, incident.id)
        return None
    expires = incident.acknowledged_at + after
    if expires > now:
        escalations.put(conn, incident.id, spec.name, expires, mode=REPAGE)
        return None
    incident_state.clear_acknowledgement(conn, incident.id)
    Timeline(conn.engine).record(conn, incident.id, now, "ack_expired", acknowledged_by=incident.acknowledged_by,
                                 acknowledged_for_s=now - incident.acknowledged_at)
    return Escalation(incident.id, spec.name, 0, 0, 0, ESCALATE, escalation.due_at)
