"""The local inbox: all SQL on `inbox_pages`, the pages that arrived through `POST /api/v1/inbox`."""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.notifier.schema import inbox_pages
from vigil.notifier.store.engine import reading
from vigil.notifier.store.notifications import Notifications
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.timefmt import rfc3339


class Inbox:
    def __init__(self, engine: sa.Engine, outbox: Outbox, notifications: Notifications):
        self._engine = engine
        self._outbox = outbox
        self._notifications = notifications

    def record_page(self, delivery_id: int, title: str, body: str, now: float) -> int | None:
        """Record a page that arrived for outbox delivery `delivery_id`; None if no such delivery.

        A page delivered twice (sent, then the worker died before marking it) is recorded once.
        """
        with self._engine.begin() as conn:
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
                labels=json.dumps(labels, sort_keys=True),
            )).inserted_primary_key[0]

    def list_pages(self, limit: int) -> list[dict]:
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(inbox_pages).order_by(inbox_pages.c.id.desc()).limit(limit)).all()
        return [dict(id=r.id, time=rfc3339(r.time), recipient=r.recipient, channel=r.channel, title=r.title,
                     body=r.body, incident_id=r.incident_id, status=r.status, labels=json.loads(r.labels))
                for r in reversed(rows)]
