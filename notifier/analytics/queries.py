"""All SQL of the on-call health analytics: the incidents opened in a period, with what happened to them.

Three reads on one connection (the incidents, their timeline events of the kinds the figures need, and
their firing pages that were sent), folded into one `IncidentFacts` per incident. Nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import sqlalchemy as sa

from vigil.notifier.schema import deliveries, incident_events, incidents
from vigil.notifier.store.engine import reading

# timeline kinds the figures read: people's actions and the tiers paged
EVENT_KINDS = ("acknowledged", "escalated", "note", "resolved", "tier_paged", "marked")
CHUNK = 500  # incident ids per IN (…) list


@dataclass(frozen=True)
class Event:
    at: float
    kind: str
    actor: str | None
    tier: int | None = None  # tier_paged: the tier paged (0-based)
    verdict: str | None = None  # marked: noisy | not_actionable | actionable


@dataclass(frozen=True)
class Page:
    """A firing page that was sent to a person (a `deliveries` row in state `sent`)."""

    person: str
    channel: str
    sent_at: float


@dataclass
class IncidentFacts:
    id: int
    team: str | None
    priority: str | None
    alertname: str | None
    opened_at: float
    resolved_at: float | None
    ack_due_at: float | None
    ack_breached_at: float | None
    resolve_due_at: float | None
    resolve_breached_at: float | None
    events: list[Event] = field(default_factory=list)  # oldest first
    pages: list[Page] = field(default_factory=list)  # oldest first


def incidents_opened(engine: sa.Engine, start: float, end: float, team: str | None = None) -> list[IncidentFacts]:
    """The incidents opened in [start, end) (of `team` only, if given), oldest first, with their events
    and sent firing pages."""
    c = incidents.c
    query = sa.select(c.id, c.team, c.priority, c.labels, c.opened_at, c.resolved_at, c.ack_due_at, c.ack_breached_at,
                      c.resolve_due_at, c.resolve_breached_at).where(c.opened_at >= start, c.opened_at < end)
    if team is not None:
        query = query.where(c.team == team)
    with reading(engine) as conn:
        rows = conn.execute(query.order_by(c.opened_at, c.id)).all()
        found = {r.id: _facts(r) for r in rows}
        ids = list(found)
        for chunk in (ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)):
            for e in conn.execute(
                    sa.select(incident_events.c.incident_id, incident_events.c.at, incident_events.c.kind,
                              incident_events.c.actor, incident_events.c.detail)
                    .where(incident_events.c.incident_id.in_(chunk), incident_events.c.kind.in_(EVENT_KINDS))
                    .order_by(incident_events.c.at, incident_events.c.id)):
                detail = json.loads(e.detail) if e.kind in ("tier_paged", "marked") else {}
                found[e.incident_id].events.append(Event(e.at, e.kind, e.actor, detail.get("tier"),
                                                         detail.get("verdict")))
            for p in conn.execute(
                    sa.select(deliveries.c.incident_id, deliveries.c.target, deliveries.c.channel_type,
                              deliveries.c.sent_at)
                    .where(deliveries.c.incident_id.in_(chunk), deliveries.c.page_status == "firing",
                           deliveries.c.state == "sent")
                    .order_by(deliveries.c.sent_at, deliveries.c.id)):
                found[p.incident_id].pages.append(Page(p.target, p.channel_type, p.sent_at))
    return list(found.values())


def _facts(r) -> IncidentFacts:
    return IncidentFacts(r.id, r.team, r.priority, json.loads(r.labels).get("alertname"), r.opened_at,
                         r.resolved_at, r.ack_due_at, r.ack_breached_at, r.resolve_due_at, r.resolve_breached_at)
