"""Re-paging an acknowledged incident: an acknowledgement lasts the policy's
`repage_acknowledged_after`; once it has expired the escalation restarts at the first tier.

An acknowledgement that lapses (expired here, or cleared by `vigil incidents escalate`) starts a new
acknowledge target from that moment: the first one was met when the acknowledgement came in time, so
it must not be breached against its old due time (which would page the next tier at once). A target
breached before the acknowledgement stays breached."""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.core.escalation_steps import ESCALATE, REPAGE, Escalation
from vigil.notifier.store import incident_state
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.timeline import Timeline
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import PolicySpec, sla_for


def lapse_acknowledgement(conn: sa.Connection, oncall: OncallConfig, incident, now: float) -> None:
    """Unacknowledged again from `now`, with a new acknowledge target counting from `now`."""
    within = sla_for(oncall, incident.priority).ack_within_s if incident.priority else None
    fresh = incident.ack_breached_at is None and incident.ack_due_at is not None and within is not None
    incident_state.clear_acknowledgement(conn, incident.id, now + within if fresh else None)


def expire_acknowledgement(conn: sa.Connection, oncall: OncallConfig, spec: PolicySpec, incident,
                           escalation: Escalation, now: float) -> Escalation | None:
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
    lapse_acknowledgement(conn, oncall, incident, now)
    Timeline(conn.engine).record(conn, incident.id, now, "ack_expired", acknowledged_by=incident.acknowledged_by,
                                 acknowledged_for_s=now - incident.acknowledged_at)
    return Escalation(incident.id, spec.name, 0, 0, 0, ESCALATE, escalation.due_at)
