"""Pending escalations: all SQL on `escalations` (one row per incident that waits for its next page)
and the engine's reads of the pages an incident was sent.

A row says: at `due_at`, page tier `tier` of `policy` (its `repeat`-th page, 0-based) in round `round`
(mode `escalate`), or check whether the acknowledgement has expired (mode `repage`). The engine claims
a batch of due rows in one transaction (`claim_due`): `FOR UPDATE SKIP LOCKED` on PostgreSQL, so two
notifiers never take the same row; on SQLite the write lock (BEGIN IMMEDIATE) serialises them and the
rows are read inside the transaction. No lease: a crash rolls the claim back.
"""

from __future__ import annotations

import threading
from typing import Callable

import sqlalchemy as sa

from vigil.notifier.core.escalation_steps import ESCALATE, Escalation, PagedContact
from vigil.notifier.schema import deliveries, escalations, incident_events
from vigil.notifier.store.engine import reading
from vigil.notifier.store.prepared import Prepared
from vigil.notifier.store.timeline import PAUSE_KINDS, PAUSED


# `put` and `delete` run in every webhook transaction that opens or resolves an incident: made once
_STEP = ["policy", "tier", "repeat", "round", "mode", "due_at"]
_SET = Prepared(escalations.update().where(escalations.c.incident_id == sa.bindparam("b_incident_id")), _STEP)
_ADD = Prepared(escalations.insert(), ["incident_id", *_STEP])
_DROP = Prepared(escalations.delete().where(escalations.c.incident_id == sa.bindparam("b_incident_id")))


class Escalations:
    def __init__(self, engine: sa.Engine):
        self._engine = engine
        self._listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    # --- waking the engine ----------------------------------------------------------------------
    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (the engine's wake) whenever a row may have become due earlier."""
        with self._lock:
            self._listeners.append(listener)

    def changed(self) -> None:
        """Tell the listeners (after the commit that changed the rows)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    # --- rows -----------------------------------------------------------------------------------
    def put(self, conn: sa.Connection, incident_id: int, policy: str, due_at: float, *, tier: int = 0,
            repeat: int = 0, round: int = 0, mode: str = ESCALATE) -> None:
        """Set the incident's pending escalation (replacing any)."""
        values = dict(policy=policy, tier=tier, repeat=repeat, round=round, mode=mode, due_at=due_at)
        if not _SET.count(conn, dict(values, b_incident_id=incident_id)):
            _ADD.execute(conn, dict(values, incident_id=incident_id))

    def get(self, conn: sa.Connection, incident_id: int) -> Escalation | None:
        found = conn.execute(sa.select(escalations).where(escalations.c.incident_id == incident_id)).first()
        return None if found is None else Escalation(**found._mapping)

    def delete(self, conn: sa.Connection, incident_id: int) -> None:
        _DROP.execute(conn, {"b_incident_id": incident_id})

    def claim_due(self, conn: sa.Connection, now: float, limit: int) -> list[Escalation]:
        """Up to `limit` escalations due by `now`, earliest first, locked on `conn` until the commit:
        PostgreSQL skips rows another notifier holds (FOR UPDATE SKIP LOCKED), SQLite holds the write lock
        (the caller's BEGIN IMMEDIATE), so each due row is claimed by one transaction at a time."""
        query = sa.select(escalations).where(escalations.c.due_at <= now).order_by(escalations.c.due_at).limit(limit)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        return [Escalation(**found._mapping) for found in conn.execute(query)]

    def paused_due_now(self, conn: sa.Connection, now: float) -> int:
        """Make every escalation a maintenance window paused due `now` (a window ended early: the engine
        looks at once whether it resumes, instead of at its next re-check); returns how many."""
        event = incident_events.alias("event")
        newest = (sa.select(sa.func.max(event.c.id))
                  .where(event.c.incident_id == escalations.c.incident_id, event.c.kind.in_(PAUSE_KINDS))
                  .correlate(escalations).scalar_subquery())
        paused = sa.exists().where(incident_events.c.id == newest, incident_events.c.kind == PAUSED)
        return conn.execute(escalations.update().where(escalations.c.due_at > now, paused)
                            .values(due_at=now)).rowcount

    def next_due(self) -> float | None:
        """The earliest due time of any pending escalation."""
        with reading(self._engine) as conn:
            return conn.execute(sa.select(sa.func.min(escalations.c.due_at))).scalar()

    def pending_count(self) -> int:
        with reading(self._engine) as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(escalations)).scalar_one()

    # --- what was paged -------------------------------------------------------------------------
    def paged_contacts(self, conn: sa.Connection, incident_id: int, tier: int | None = None) -> list[PagedContact]:
        """Each (person, contact) a firing page of the incident was enqueued for (of `tier` only, if
        given), oldest first, whatever became of it (the mute stage decides about what follows)."""
        query = (sa.select(deliveries.c.target, deliveries.c.channel_index, deliveries.c.channel_type,
                           deliveries.c.contact, deliveries.c.tier, sa.func.min(deliveries.c.id).label("first"))
                 .where(deliveries.c.incident_id == incident_id, deliveries.c.page_status == "firing"))
        if tier is not None:
            query = query.where(deliveries.c.tier == tier)
        query = query.group_by(deliveries.c.target, deliveries.c.channel_index, deliveries.c.channel_type,
                               deliveries.c.contact, deliveries.c.tier).order_by("first")
        seen, found = set(), []
        for r in conn.execute(query).all():
            if (r.target, r.channel_index) not in seen:
                seen.add((r.target, r.channel_index))
                found.append(PagedContact(r.target, r.channel_index, r.channel_type, r.contact, r.tier))
        return found

    def last_paged_tier(self, conn: sa.Connection, incident_id: int) -> int | None:
        """The tier of the incident's newest escalation page."""
        last = self.last_paged(conn, incident_id)
        return None if last is None else last[0]

    def last_paged(self, conn: sa.Connection, incident_id: int) -> tuple[int, float] | None:
        """The tier of the incident's newest escalation page, and when it was queued."""
        row = conn.execute(sa.select(deliveries.c.tier, deliveries.c.created_at).where(
            deliveries.c.incident_id == incident_id, deliveries.c.tier.is_not(None),
            deliveries.c.page_status == "firing").order_by(deliveries.c.id.desc()).limit(1)).first()
        return None if row is None else (row.tier, row.created_at)
