"""The incident timeline: all SQL on `incident_events`, one row per thing that happened to an incident.

Kinds (design §3): opened, alert_added, reopened, routed, tier_paged, tier_empty, page_queued,
page_attempt, page_fallback, page_held, page_digested, acknowledged, ack_expired, escalated, sla_breach,
note, resolved, policy_exhausted, escalation_paused, escalation_resumed. `detail` is a JSON object whose
keys depend on the kind.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.notifier.schema import incident_events
from vigil.notifier.store.engine import reading
from vigil.notifier.store.prepared import Prepared
from vigil.common.times import rfc3339

# one encoder for every event's detail (`json.dumps` with options builds a new one per call)
_DETAIL = json.JSONEncoder(sort_keys=True, default=str)

KINDS = frozenset({
    "opened", "alert_added", "reopened", "routed", "tier_paged", "tier_empty", "page_queued", "page_attempt",
    "page_fallback", "page_held", "page_digested", "acknowledged", "ack_expired", "escalated", "sla_breach",
    "note", "resolved", "policy_exhausted", "escalation_paused", "escalation_resumed",
    "held", "joined", "also_firing", "stands_alone",  # causes and symptoms (`vigil.notifier.engine.causes`)
    "resolving", "steady",  # a resolution waiting out `incidents.resolve_after`, and a flap within it
    "marked",  # a person's verdict on the page: noisy, not actionable, actionable (`engine/actions.py`)
})


# a maintenance window's pause of an escalation (`vigil.notifier.engine.pause`): an escalation is paused
# while the newest of its incident's events of PAUSE_KINDS is `escalation_paused`
PAUSED, RESUMED = "escalation_paused", "escalation_resumed"
PAUSE_KINDS = (PAUSED, RESUMED, "acknowledged", "resolved", "reopened")


def pause_of(events: list[dict]) -> dict | None:
    """The pause an incident's escalation is in, from its timeline (`Timeline.of`, oldest first): the
    window's detail with `since` (when it paused, RFC 3339), or None when it is not paused."""
    last = next((e for e in reversed(events) if e["kind"] in PAUSE_KINDS), None)
    return {**last["detail"], "since": last["at"]} if last is not None and last["kind"] == PAUSED else None


_INSERT = Prepared(incident_events.insert(), ["incident_id", "at", "kind", "actor", "detail"])
_LATEST: dict[tuple[str, ...], Prepared] = {}  # kinds -> the newest event of those kinds (`Timeline.latest`)


class Timeline:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def record(self, conn: sa.Connection | None, incident_id: int, at: float, kind: str, /, actor: str | None = None,
               **detail) -> None:
        """Add one event; on `conn` (the caller's transaction) or, with None, in a transaction of its own.

        The first four are positional, so `detail` may have a `kind` of its own (a contact's kind).
        """
        row = event(incident_id, at, kind, actor, **detail)
        if conn is not None:
            _INSERT.execute(conn, row)
            return
        with self._engine.begin() as own:
            _INSERT.execute(own, row)

    def record_all(self, conn: sa.Connection, events: list[dict]) -> None:
        """Add `events` (made by `event`, oldest first) on `conn` in one statement."""
        _INSERT.many(conn, events)

    def latest(self, conn: sa.Connection, incident_id: int, kinds: tuple[str, ...]) -> dict | None:
        """The incident's newest event of one of `kinds`, read on `conn`: {at (Unix seconds), kind, actor,
        detail}.
        (Asked on every escalation step: a statement made once per set of kinds.)"""
        query = _LATEST.get(kinds)
        if query is None:
            query = _LATEST[kinds] = Prepared(
                sa.select(incident_events.c.at, incident_events.c.kind, incident_events.c.detail,
                          incident_events.c.actor)
                .where(incident_events.c.incident_id == sa.bindparam("b_incident", type_=sa.Integer),
                       sa.or_(*(incident_events.c.kind == kind for kind in kinds)))
                .order_by(incident_events.c.id.desc()).limit(1))
        row = query.first(conn, {"b_incident": incident_id})
        return None if row is None else dict(at=row[0], kind=row[1], detail=json.loads(row[2]), actor=row[3])

    def of(self, incident_id: int) -> list[dict]:
        """The incident's events, oldest first: {at (RFC 3339), kind, actor, detail}."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(incident_events).where(incident_events.c.incident_id == incident_id)
                                .order_by(incident_events.c.at, incident_events.c.id)).all()
        return [dict(at=rfc3339(r.at), kind=r.kind, actor=r.actor, detail=json.loads(r.detail)) for r in rows]


def event(incident_id: int, at: float, kind: str, /, actor: str | None = None, **detail) -> dict:
    """One timeline row, for `Timeline.record_all`."""
    if kind not in KINDS:
        raise ValueError(f"unknown timeline event kind {kind!r}")
    return dict(incident_id=incident_id, at=at, kind=kind, actor=actor,
                detail=_DETAIL.encode(detail))
