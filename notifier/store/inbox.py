"""The local inbox: all SQL on `inbox_pages`, the pages that arrived through `POST /api/v1/inbox`."""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.notifier.core.deliveries import Delivery
from vigil.notifier.schema import inbox_pages, incidents
from vigil.notifier.store.engine import reading
from vigil.notifier.store.notifications import Notifications
from vigil.notifier.store.outbox import Outbox, insert_if_new
from vigil.common.times import rfc3339


class Inbox:
    def __init__(self, engine: sa.Engine, outbox: Outbox, notifications: Notifications):
        self._engine = engine
        self._outbox = outbox
        self._notifications = notifications

    def record_page(self, delivery_id: int, title: str, body: str, now: float,
                    conn: sa.Connection | None = None) -> int | None:
        """Record a page that arrived for outbox delivery `delivery_id`; None if no such delivery. On `conn`
        (the caller's transaction: the outbox worker records the page with its send attempt) if given.

        A page delivered twice (sent, then the worker died before marking it) is recorded once.
        """
        if conn is None:
            with self._engine.begin() as own:
                return self.record_page(delivery_id, title, body, now, own)
        delivery = self._outbox.delivery(conn, delivery_id)
        if delivery is None:
            return None
        existing = conn.execute(sa.select(inbox_pages.c.id)
                                .where(inbox_pages.c.delivery_id == delivery_id)).scalar()
        if existing is not None:
            return existing
        labels = self._notifications.incident_labels(conn, delivery.incident_id)
        return conn.execute(inbox_pages.insert().values(
            delivery_id=delivery_id, time=now, recipient=delivery.target, channel=delivery.channel_type,
            title=title, body=body, incident_id=delivery.incident_id, status=delivery.page_status,
            labels=json.dumps(labels, sort_keys=True), tier=delivery.tier,
        )).inserted_primary_key[0]

    def record_arrivals(self, conn: sa.Connection, arrivals: list[tuple[Delivery, float]]) -> None:
        """Record on `conn`, at once, pages this notifier's worker sent to its own inbox: each its claimed
        delivery and when it arrived. A page already recorded (sent before a crash) stays as it was."""
        if not arrivals:
            return
        ids = sorted({delivery.incident_id for delivery, _ in arrivals})
        labels = dict(conn.execute(sa.select(incidents.c.id, incidents.c.labels).where(incidents.c.id.in_(ids))).all())
        conn.execute(insert_if_new(conn, inbox_pages, "delivery_id"), [
            dict(delivery_id=d.id, time=at, recipient=d.target, channel=d.channel_type, title=d.title, body=d.body,
                 incident_id=d.incident_id, status=d.page_status, tier=d.tier,
                 labels=json.dumps(json.loads(labels[d.incident_id]), sort_keys=True))
            for d, at in arrivals])

    def list_pages(self, limit: int, *, recipients: tuple[str, ...] = (), incident_ids: tuple[int, ...] = (),
                   status: str | None = None, since: float | None = None) -> list[dict]:
        """The newest `limit` pages (oldest first) sent to one of `recipients`, about one of `incident_ids`,
        of `status`, arrived at or after `since` (Unix seconds): each filter given must hold."""
        c = inbox_pages.c
        query = sa.select(inbox_pages)
        if recipients:
            query = query.where(c.recipient.in_(recipients))
        if incident_ids:
            query = query.where(c.incident_id.in_(incident_ids))
        if status is not None:
            query = query.where(c.status == status)
        if since is not None:
            query = query.where(c.time >= since)
        with reading(self._engine) as conn:
            rows = conn.execute(query.order_by(c.id.desc()).limit(limit)).all()
        # `tier` is the policy's tier index like everywhere in the API: 0 is the first line (tier 1);
        # null: a page of no escalation tier
        return [dict(id=r.id, time=rfc3339(r.time), recipient=r.recipient, channel=r.channel, title=r.title,
                     body=r.body, incident_id=r.incident_id, status=r.status, labels=json.loads(r.labels),
                     tier=r.tier)
                for r in reversed(rows)]
