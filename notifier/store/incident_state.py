"""Incident state for the on-call engine: all SQL on the engine's columns of `incidents` (routing,
acknowledgement, resolution, SLA) and the incident as people see it (`as_dict`).

The state shown to people is `resolved` (status resolved), else `acknowledged` (acknowledged_at set),
else `triggered`. The SLA of each target (ack, resolve) is `met`, `breached`, `pending`, or None when
the incident's priority has no such target.
"""

from __future__ import annotations

import json
from collections import namedtuple

import sqlalchemy as sa

from vigil.notifier.schema import deliveries, incidents
from vigil.notifier.store.prepared import Prepared
from vigil.common.times import rfc3339

STATES = ("triggered", "acknowledged", "resolved")


def state_of(row) -> str:
    if row.status == "resolved":
        return "resolved"
    return "acknowledged" if row.acknowledged_at is not None else "triggered"


def state_filter(state: str):
    """A WHERE clause selecting incidents shown in `state`."""
    if state == "resolved":
        return incidents.c.status == "resolved"
    acknowledged = incidents.c.acknowledged_at.is_not(None)
    return sa.and_(incidents.c.status == "firing", acknowledged if state == "acknowledged" else ~acknowledged)


# an incident's row, its columns by name (every column is a number or text: the driver's values are the row's)
IncidentRow = namedtuple("IncidentRow", [column.name for column in incidents.c])
_SELECT_ROW = sa.select(incidents).where(incidents.c.id == sa.bindparam("incident_id"))
_ROW = Prepared(_SELECT_ROW)
# FOR UPDATE on PostgreSQL; SQLite has no row locks (its writer holds the database) and writes none
_ROW_LOCKED = Prepared(_SELECT_ROW.with_for_update())


def row(conn: sa.Connection, incident_id: int, lock: bool = False) -> IncidentRow | None:
    """The incident's row (None if there is none); `lock`: FOR UPDATE on PostgreSQL, until the commit.
    Read on every page and escalation step: a prepared statement (`Prepared`), not SQLAlchemy's execute."""
    found = (_ROW_LOCKED if lock else _ROW).first(conn, {"incident_id": incident_id})
    return None if found is None else IncidentRow._make(found)


def update(conn: sa.Connection, incident_id: int, **values) -> None:
    conn.execute(incidents.update().where(incidents.c.id == incident_id).values(**values))


_SET_ROUTING = Prepared(
    incidents.update().where(incidents.c.id == sa.bindparam("incident_id"))
    .values(ack_breached_at=None, resolve_breached_at=None),
    ["priority", "team", "policy", "ack_due_at", "resolve_due_at"])


def set_routing(conn: sa.Connection, incident_id: int, priority: str, team: str | None, policy: str | None,
                ack_due_at: float | None, resolve_due_at: float | None) -> None:
    """Route the incident and set its SLA due times; breaches of an earlier routing are cleared."""
    _SET_ROUTING.execute(conn, dict(incident_id=incident_id, priority=priority, team=team, policy=policy,
                                    ack_due_at=ack_due_at, resolve_due_at=resolve_due_at))


def acknowledge(conn: sa.Connection, incident_id: int, by: str, at: float) -> None:
    update(conn, incident_id, acknowledged_at=at, acknowledged_by=by)


def clear_acknowledgement(conn: sa.Connection, incident_id: int, ack_due_at: float | None) -> None:
    """Unacknowledged again, with a new acknowledge target `ack_due_at` (None: the old one stays)."""
    update(conn, incident_id, acknowledged_at=None, acknowledged_by=None,
           **({"ack_due_at": ack_due_at} if ack_due_at is not None else {}))


def resolve(conn: sa.Connection, incident_id: int, by: str, at: float) -> None:
    """Resolved, by whoever: a symptom's hold and a resolution's wait end with it (a reopened incident
    must not inherit them: the engine would settle it again, or gather it as a held symptom)."""
    update(conn, incident_id, status="resolved", resolved_at=at, resolved_by=by, held_until=None, resolving_at=None)


def reopen(conn: sa.Connection, incident_id: int) -> None:
    """Firing again, unacknowledged; `reopened` counts how often."""
    update(conn, incident_id, status="firing", resolved_at=None, resolved_by=None, acknowledged_at=None,
           acknowledged_by=None, reopened=incidents.c.reopened + 1)


def overdue(conn: sa.Connection, which: str, now: float, limit: int) -> list[int]:
    """Firing incidents past their `which` (ack | resolve) target and not yet marked breached (one whose
    alerts resolved, its resolution waiting out `resolve_after`, is not overdue)."""
    due, breached = incidents.c[f"{which}_due_at"], incidents.c[f"{which}_breached_at"]
    query = sa.select(incidents.c.id).where(incidents.c.status == "firing", due.is_not(None), due <= now,
                                            breached.is_(None), incidents.c.resolving_at.is_(None))
    if which == "ack":
        query = query.where(incidents.c.acknowledged_at.is_(None))
    return list(conn.execute(query.order_by(due).limit(limit)).scalars())


def last_paged_tiers(conn: sa.Connection, incident_ids: list[int]) -> dict[int, int]:
    """Incident id -> the tier of its newest escalation page (incidents never paged by tier: absent)."""
    if not incident_ids:
        return {}
    newest = (sa.select(sa.func.max(deliveries.c.id))
              .where(deliveries.c.incident_id.in_(incident_ids), deliveries.c.tier.is_not(None),
                     deliveries.c.page_status == "firing")
              .group_by(deliveries.c.incident_id))
    rows = conn.execute(sa.select(deliveries.c.incident_id, deliveries.c.tier)
                        .where(deliveries.c.id.in_(newest.scalar_subquery()))).all()
    return {incident_id: tier for incident_id, tier in rows}


def as_dict(r, tier: int | None) -> dict:
    """The incident as the API shows it: today's fields and the on-call engine's."""
    return dict(
        id=r.id, group_key=r.group_key, status=r.status, opened_at=rfc3339(r.opened_at),
        resolved_at=rfc3339(r.resolved_at), labels=json.loads(r.labels), title=r.title,
        state=state_of(r), priority=r.priority, team=r.team, policy=r.policy,
        acknowledged_at=rfc3339(r.acknowledged_at), acknowledged_by=r.acknowledged_by, resolved_by=r.resolved_by,
        ack_due_at=rfc3339(r.ack_due_at), resolve_due_at=rfc3339(r.resolve_due_at),
        sla=dict(ack=_sla(r.ack_due_at, r.ack_breached_at, r.acknowledged_at is not None or r.status == "resolved"),
                 resolve=_sla(r.resolve_due_at, r.resolve_breached_at, r.status == "resolved")),
        tier=tier, reopened=r.reopened,
        part_of=r.cause_id, held_until=rfc3339(r.held_until),  # causes and symptoms (engine/causes.py)
        resolving_at=rfc3339(r.resolving_at),  # its alerts resolved; it resolves then unless they fire again
    )


def _sla(due_at: float | None, breached_at: float | None, done: bool) -> str | None:
    if due_at is None:
        return None
    if breached_at is not None:
        return "breached"
    return "met" if done else "pending"


def firing_in_group(conn: sa.Connection, group_key: str) -> int | None:
    """The firing incident of the group, if any (at most one: a unique index says so)."""
    return conn.execute(sa.select(incidents.c.id).where(incidents.c.group_key == group_key,
                                                        incidents.c.status == "firing")).scalar()
