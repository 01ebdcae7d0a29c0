"""The outbox: pages waiting to be sent (`deliveries`) and every send attempt (`delivery_attempts`).

All SQL on those two tables is here. Rows are enqueued inside the transaction that stores their
notification (`enqueue` takes that connection); the worker claims due rows with a lease, so two
notifiers on one database never send the same page at once.
"""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.deliveries import Delivery, NewDelivery
from vigil.notifier.schema import deliveries, delivery_attempts
from vigil.notifier.store.engine import reading

# pending: waiting (due now, later, or leased by a worker); sent; failed: given up after the last retry;
# muted / superseded: not sent, on purpose (the mute and dedup stages say why)
STATES = ("pending", "sent", "failed", "muted", "superseded")


class Outbox:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def enqueue(self, conn: sa.Connection, notification_id: int, incident_id: int, page_status: str,
                pages: list[NewDelivery], now: float) -> int:
        """Add `pages` on `conn` (the notification's own transaction); returns how many."""
        if pages:
            conn.execute(deliveries.insert(), [
                dict(notification_id=notification_id, incident_id=incident_id, target=p.target,
                     channel_index=p.channel_index, channel_type=p.channel_type, page_status=page_status,
                     title=p.title, body=p.body, state="pending", attempts=0, next_attempt_at=now + p.delay_s,
                     created_at=now)
                for p in pages])
        return len(pages)

    def claim_due(self, now: float, limit: int, lease_s: float) -> list[Delivery]:
        """Pending deliveries due by `now`; each is leased for `lease_s` so no other worker takes it."""
        with self._engine.begin() as conn:
            rows = conn.execute(sa.select(deliveries).where(deliveries.c.state == "pending",
                                                            deliveries.c.next_attempt_at <= now)
                                .order_by(deliveries.c.next_attempt_at, deliveries.c.id).limit(limit)).all()
            if rows:
                conn.execute(deliveries.update().where(deliveries.c.id.in_([r.id for r in rows]))
                             .values(next_attempt_at=now + lease_s))
        return [Delivery(r.id, r.incident_id, r.target, r.channel_index, r.channel_type, r.title, r.body,
                         r.page_status, r.attempts, r.created_at) for r in rows]

    def newer_page_waiting(self, delivery: Delivery) -> bool:
        """Whether a later page of the same incident and status waits for the same channel."""
        with reading(self._engine) as conn:
            return conn.execute(sa.select(deliveries.c.id).where(
                deliveries.c.incident_id == delivery.incident_id, deliveries.c.target == delivery.target,
                deliveries.c.channel_index == delivery.channel_index,
                deliveries.c.page_status == delivery.page_status, deliveries.c.state == "pending",
                deliveries.c.id > delivery.id).limit(1)).first() is not None

    def record_attempt(self, delivery_id: int, now: float, ok: bool, error: str | None,
                       duration_s: float, retry_at: float | None) -> None:
        """Log one send attempt; `retry_at` None with a failure means: give up."""
        state = "sent" if ok else ("pending" if retry_at is not None else "failed")
        with self._engine.begin() as conn:
            conn.execute(delivery_attempts.insert().values(delivery_id=delivery_id, at=now, ok=ok,
                                                           error=error, duration_s=duration_s))
            conn.execute(deliveries.update().where(deliveries.c.id == delivery_id).values(
                state=state, attempts=deliveries.c.attempts + 1, last_error=error,
                sent_at=now if ok else None, next_attempt_at=retry_at if retry_at is not None else now))

    def postpone(self, delivery_id: int, until: float) -> None:
        """Keep the delivery pending, due at `until` (the throttle's wait)."""
        with self._engine.begin() as conn:
            conn.execute(deliveries.update().where(deliveries.c.id == delivery_id).values(next_attempt_at=until))

    def close_unsent(self, delivery_id: int, state: str, now: float) -> None:
        """Finish a delivery without sending it (`muted`, `superseded`); no attempt is logged."""
        with self._engine.begin() as conn:
            conn.execute(deliveries.update().where(deliveries.c.id == delivery_id)
                         .values(state=state, next_attempt_at=now))

    def delivery(self, conn: sa.Connection, delivery_id: int):
        """The row of `delivery_id` read on `conn` (None if there is none)."""
        return conn.execute(sa.select(deliveries).where(deliveries.c.id == delivery_id)).first()

    def states(self) -> dict[str, int]:
        """Deliveries by state."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(deliveries.c.state, sa.func.count()).group_by(deliveries.c.state)).all()
        return {state: count for state, count in rows}

    def attempts_of(self, delivery_id: int) -> list[dict]:
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(delivery_attempts).where(delivery_attempts.c.delivery_id == delivery_id)
                                .order_by(delivery_attempts.c.id)).all()
        return [dict(at=r.at, ok=r.ok, error=r.error) for r in rows]
