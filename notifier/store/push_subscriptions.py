"""The browsers subscribed to Web Push: all SQL on `push_subscriptions`.

A row is one browser's subscription (its push service `endpoint` and the keys `p256dh`, `auth` that
pages to it are encrypted with) for one person. Subscribing again from the same browser replaces the row
(the endpoint is unique); an endpoint the push service says is gone (404, 410) is removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import push_subscriptions as table
from vigil.notifier.store.engine import reading

MAX_PER_PERSON = 20  # browsers a person may subscribe; the oldest is dropped for a new one beyond


@dataclass(frozen=True)
class PushSubscription:
    id: int
    person: str
    endpoint: str
    p256dh: str
    auth: str
    device: str
    created_at: float
    last_sent_at: float | None

    @property
    def info(self) -> dict:
        """The subscription as the browser's `PushSubscription.toJSON()` gives it (what senders take)."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}


class PushSubscriptions:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def add(self, person: str, endpoint: str, p256dh: str, auth: str, device: str, now: float) -> PushSubscription:
        """Subscribe `endpoint` for `person` (replacing any row of that endpoint, whoever's it was)."""
        with self._engine.begin() as conn:
            conn.execute(table.delete().where(table.c.endpoint == endpoint))
            conn.execute(table.insert().values(person=person, endpoint=endpoint, p256dh=p256dh, auth=auth,
                                               device=device, created_at=now))
            kept = conn.execute(sa.select(table.c.id).where(table.c.person == person)
                                .order_by(table.c.created_at.desc(), table.c.id.desc())).scalars().all()
            if len(kept) > MAX_PER_PERSON:
                conn.execute(table.delete().where(table.c.id.in_(kept[MAX_PER_PERSON:])))
            row = conn.execute(sa.select(table).where(table.c.endpoint == endpoint)).one()
        return PushSubscription(**row._mapping)

    def of_person(self, person: str) -> list[PushSubscription]:
        """`person`'s subscriptions, newest first."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(table).where(table.c.person == person)
                                .order_by(table.c.created_at.desc(), table.c.id.desc())).all()
        return [PushSubscription(**row._mapping) for row in rows]

    def remove(self, endpoint: str, person: str | None = None) -> bool:
        """Forget `endpoint` (only if it is `person`'s, when given); whether a row went."""
        where = [table.c.endpoint == endpoint] + ([table.c.person == person] if person is not None else [])
        with self._engine.begin() as conn:
            return conn.execute(table.delete().where(*where)).rowcount > 0

    def sent(self, subscription_id: int, now: float) -> None:
        with self._engine.begin() as conn:
            conn.execute(table.update().where(table.c.id == subscription_id).values(last_sent_at=now))
