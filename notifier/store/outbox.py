"""The outbox: pages waiting to be sent (`deliveries`) and every send attempt (`delivery_attempts`).

All SQL on those two tables is here. Rows are enqueued inside the transaction that stores their
notification (`enqueue` takes that connection); the worker claims due rows with a lease, so two
notifiers on one database never send the same page at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from vigil.notifier.core.deliveries import Delivery, NewDelivery
from vigil.notifier.schema import deliveries, delivery_attempts
from vigil.notifier.store.engine import reading
from vigil.notifier.store.prepared import Prepared
from vigil.notifier.store.timeline import Timeline
from vigil.common.times import rfc3339

# pending: waiting (due now, later, or leased by a worker); sent; failed: given up after the last retry
# (or handed to the person's next contact); muted / superseded / digested: not sent, on purpose (the
# mute, dedup and storm stages say why; a digested row's `digest_of` is the digest that carried it)
STATES = ("pending", "sent", "failed", "muted", "superseded", "digested")
SCHEDULED = "scheduled"  # pending, never tried, due later (`states(now)`): waiting on purpose


@dataclass(frozen=True)
class Attempt:
    """One send attempt of a claimed delivery; `retry_at` None with a failure means: give up."""

    delivery: Delivery
    at: float
    ok: bool
    error: str | None
    duration_s: float
    retry_at: float | None


# made once: the worker records many attempts per transaction with them (executemany)
_AFTER_ATTEMPT = deliveries.update().where(deliveries.c.id == sa.bindparam("b_id")).values(
    state=sa.bindparam("b_state"), attempts=deliveries.c.attempts + 1, last_error=sa.bindparam("b_error"),
    sent_at=sa.bindparam("b_sent_at"), next_attempt_at=sa.bindparam("b_next"))


_PAGE_COLUMNS = ["notification_id", "incident_id", "target", "channel_index", "channel_type", "page_status", "title",
                 "body", "state", "attempts", "next_attempt_at", "created_at", "tier", "contact", "page_key"]
# a keyed page, added unless its key is there (`insert_if_new`), made once per database: the webhook's
# transaction enqueues the pages of every incident it opens
_ADD_KEYED = {name: Prepared(dialect.insert(deliveries).on_conflict_do_nothing(index_elements=["page_key"])
                             .returning(deliveries.c.id), _PAGE_COLUMNS)
              for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))}
# the dedup stage asks it of every page it sends
_NEWER_WAITING = Prepared(sa.select(deliveries.c.id).where(
    deliveries.c.incident_id == sa.bindparam("incident_id"), deliveries.c.target == sa.bindparam("target"),
    deliveries.c.channel_index == sa.bindparam("channel_index"),
    deliveries.c.page_status == sa.bindparam("page_status"), deliveries.c.state == "pending",
    deliveries.c.id > sa.bindparam("after")).limit(1))


class Outbox:
    def __init__(self, engine: sa.Engine):
        self._engine = engine
        self._timeline = Timeline(engine)

    def enqueue(self, conn: sa.Connection, notification_id: int | None, incident_id: int, page_status: str,
                pages: list[NewDelivery], now: float) -> int:
        """Add `pages` on `conn` (the caller's transaction); returns how many were added.

        A page whose `page_key` is already in the outbox (another notifier enqueued it) is skipped.
        """
        rows = [dict(notification_id=notification_id, incident_id=incident_id, target=p.target,
                     channel_index=p.channel_index, channel_type=p.channel_type, page_status=page_status,
                     title=p.title, body=p.body, state="pending", attempts=0, next_attempt_at=now + p.delay_s,
                     created_at=now, tier=p.tier, contact=p.contact, page_key=p.page_key)
                for p in pages]
        keyed = [row for row in rows if row["page_key"] is not None]
        plain = [row for row in rows if row["page_key"] is None]
        if plain:
            conn.execute(deliveries.insert(), plain)
        added = len(plain)
        add_keyed = _ADD_KEYED["postgresql" if conn.dialect.name == "postgresql" else "sqlite"]
        for row in keyed:  # RETURNING: PostgreSQL's driver reports no row count for ON CONFLICT DO NOTHING
            added += len(add_keyed.rows(conn, row))
        return added

    def enqueue_pages(self, conn: sa.Connection, incident_id: int, page_status: str, pages: list[NewDelivery],
                      now: float) -> int:
        """The on-call engine's `pages` of an incident: `enqueue`d, and each on the incident's timeline as
        `page_queued`; returns how many were added."""
        added = self.enqueue(conn, None, incident_id, page_status, pages, now)
        timeline = Timeline(conn.engine)
        for page in pages:
            timeline.record(conn, incident_id, now, "page_queued", person=page.target, contact=page.contact,
                            kind=page.channel_type, tier=page.tier, status=page_status, due_in_s=page.delay_s)
        return added

    def claim_due(self, now: float, limit: int, lease_s: float,
                  conn: sa.Connection | None = None) -> list[Delivery]:
        """Pending deliveries due by `now`; each is leased for `lease_s` so no other worker takes it. On
        `conn` (the caller's transaction) if given."""
        if conn is None:
            with self._engine.begin() as own:
                return self.claim_due(now, limit, lease_s, own)
        query = (sa.select(deliveries).where(deliveries.c.state == "pending", deliveries.c.next_attempt_at <= now)
                 .order_by(deliveries.c.next_attempt_at, deliveries.c.id).limit(limit))
        if conn.dialect.name == "postgresql":  # two notifiers claiming at once take different rows
            query = query.with_for_update(skip_locked=True)
        rows = conn.execute(query).all()
        if rows:
            conn.execute(deliveries.update().where(deliveries.c.id.in_([r.id for r in rows]))
                         .values(next_attempt_at=now + lease_s))
        return [_delivery(r) for r in rows]

    def next_due(self) -> float | None:
        """When the earliest pending delivery falls due (a leased one: when its lease ends)."""
        with reading(self._engine) as conn:
            return conn.execute(sa.select(sa.func.min(deliveries.c.next_attempt_at))
                                .where(deliveries.c.state == "pending")).scalar()

    def newer_page_waiting(self, delivery: Delivery) -> bool:
        """Whether a later page of the same incident and status waits for the same channel."""
        with reading(self._engine) as conn, conn.begin():  # a read transaction, as `execute` would begin
            return _NEWER_WAITING.first(conn, dict(
                incident_id=delivery.incident_id, target=delivery.target, channel_index=delivery.channel_index,
                page_status=delivery.page_status, after=delivery.id)) is not None

    def writing(self):
        """A transaction for several writes (`with outbox.writing() as conn:`), committed at the end."""
        return self._engine.begin()

    def record_attempt(self, delivery_id: int, now: float, ok: bool, error: str | None,
                       duration_s: float, retry_at: float | None, conn: sa.Connection | None = None) -> None:
        """Log one send attempt of `delivery_id` (`record_attempts`); on `conn` (the caller's transaction)
        if given."""
        if conn is None:
            with self._engine.begin() as own:
                return self.record_attempt(delivery_id, now, ok, error, duration_s, retry_at, own)
        delivery = _delivery(self.delivery(conn, delivery_id))
        self.record_attempts(conn, [Attempt(delivery, now, ok, error, duration_s, retry_at)])

    def record_attempts(self, conn: sa.Connection, attempts: list[Attempt]) -> None:
        """Log send attempts of claimed deliveries on `conn`, on the outbox (an attempt row, the delivery's
        new state) and on each incident's timeline (`page_attempt`)."""
        if not attempts:
            return
        conn.execute(delivery_attempts.insert(), [
            dict(delivery_id=a.delivery.id, at=a.at, ok=a.ok, error=a.error, duration_s=a.duration_s)
            for a in attempts])
        conn.execute(_AFTER_ATTEMPT, [
            dict(b_id=a.delivery.id, b_state="sent" if a.ok else ("pending" if a.retry_at is not None else "failed"),
                 b_error=a.error, b_sent_at=a.at if a.ok else None,
                 b_next=a.retry_at if a.retry_at is not None else a.at)
            for a in attempts])
        for a in attempts:
            d = a.delivery
            self._timeline.record(conn, d.incident_id, a.at, "page_attempt", delivery=d.id, person=d.target,
                                  contact=d.contact, kind=d.channel_type, tier=d.tier, status=d.page_status,
                                  attempt=d.attempts + 1, ok=a.ok, error=a.error, retry_at=rfc3339(a.retry_at))

    def postpone(self, delivery_id: int, until: float, conn: sa.Connection | None = None) -> None:
        """Keep the delivery pending, due at `until` (the throttle's wait)."""
        if conn is None:
            with self._engine.begin() as own:
                return self.postpone(delivery_id, until, own)
        conn.execute(deliveries.update().where(deliveries.c.id == delivery_id).values(next_attempt_at=until))

    def close_unsent(self, delivery_id: int, state: str, now: float, held: dict | None = None,
                     conn: sa.Connection | None = None) -> None:
        """Finish a delivery without sending it (`muted`, `superseded`); no attempt is logged.

        `held`: the page was held back on purpose (a maintenance window…): a `page_held` timeline event
        with this detail.
        """
        if conn is None:
            with self._engine.begin() as own:
                return self.close_unsent(delivery_id, state, now, held, own)
        conn.execute(deliveries.update().where(deliveries.c.id == delivery_id, deliveries.c.state == "pending")
                     .values(state=state, next_attempt_at=now))
        if held is not None:
            row = self.delivery(conn, delivery_id)
            self._timeline.record(conn, row.incident_id, now, "page_held", delivery=delivery_id,
                                  person=row.target, contact=row.contact, kind=row.channel_type, **held)

    def delivery(self, conn: sa.Connection, delivery_id: int):
        """The row of `delivery_id` read on `conn` (None if there is none)."""
        return conn.execute(sa.select(deliveries).where(deliveries.c.id == delivery_id)).first()

    def states(self, now: float | None = None) -> dict[str, int]:
        """Deliveries by state; with `now`, the pending ones never tried and not due yet (held until
        working hours, the SMS a minute after the call) are `scheduled`: waiting on purpose, no backlog."""
        state = deliveries.c.state
        if now is not None:
            state = sa.case((sa.and_(state == "pending", deliveries.c.attempts == 0,
                                     deliveries.c.next_attempt_at > now), "scheduled"), else_=state)
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(state.label("state"), sa.func.count()).group_by(state)).all()
        return {state: count for state, count in rows}

    def attempts_of(self, delivery_id: int) -> list[dict]:
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(delivery_attempts).where(delivery_attempts.c.delivery_id == delivery_id)
                                .order_by(delivery_attempts.c.id)).all()
        return [dict(at=r.at, ok=r.ok, error=r.error) for r in rows]

    def hand_to_next_contact(self, delivery: Delivery, contact_index: int, contact: str, kind: str,
                             now: float, conn: sa.Connection | None = None) -> int | None:
        """Enqueue `delivery`'s page (given up on its own contact), due now, for the person's next contact,
        with a `page_fallback` event; None if that page was enqueued already. On `conn` if given."""
        if conn is None:
            with self._engine.begin() as own:
                return self.hand_to_next_contact(delivery, contact_index, contact, kind, now, own)
        key = f"{delivery.page_key or f'delivery:{delivery.id}'}>{contact}"
        result = conn.execute(insert_if_new(conn, deliveries, "page_key").values(
            notification_id=None, incident_id=delivery.incident_id, target=delivery.target,
            channel_index=contact_index, channel_type=kind, page_status=delivery.page_status,
            title=delivery.title, body=delivery.body, state="pending", attempts=0, next_attempt_at=now,
            created_at=now, tier=delivery.tier, contact=contact, page_key=key))
        if not result.rowcount:
            return None
        new_id = result.inserted_primary_key[0]
        self._timeline.record(conn, delivery.incident_id, now, "page_fallback", delivery=delivery.id,
                              person=delivery.target, tier=delivery.tier, failed_contact=delivery.contact,
                              failed_kind=delivery.channel_type, attempts=delivery.attempts + 1,
                              contact=contact, kind=kind, new_delivery=new_id)
        return new_id

    def firing_page_fate(self, delivery: Delivery) -> tuple[str, float | None]:
        """What became of the firing pages of `delivery`'s incident to the same person and contact:
        ("sent", None) if one reached them (or was folded into a digest), else ("pending", due) if one
        is still waiting (`due`: the earliest next attempt), else ("unsent", None) if there were some
        (muted, failed, superseded), else ("none", None)."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(deliveries.c.state, deliveries.c.next_attempt_at).where(
                deliveries.c.incident_id == delivery.incident_id, deliveries.c.target == delivery.target,
                deliveries.c.channel_index == delivery.channel_index, deliveries.c.page_status == "firing")).all()
        if any(r.state in ("sent", "digested") for r in rows):
            return "sent", None
        waiting = [r.next_attempt_at for r in rows if r.state == "pending"]
        if waiting:
            return "pending", min(waiting)
        return ("unsent" if rows else "none"), None

    def pages_of(self, incident_id: int) -> list[dict]:
        """The incident's pages, oldest first, each with its send attempts (the incident API's `pages`)."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(deliveries).where(deliveries.c.incident_id == incident_id)
                                .order_by(deliveries.c.id)).all()
            tried = conn.execute(sa.select(delivery_attempts).where(
                delivery_attempts.c.delivery_id.in_([r.id for r in rows])).order_by(delivery_attempts.c.id)).all()
        attempts: dict[int, list[dict]] = {}
        for a in tried:
            attempts.setdefault(a.delivery_id, []).append(dict(at=rfc3339(a.at), ok=bool(a.ok), error=a.error,
                                                               duration_s=a.duration_s))
        return [dict(id=r.id, person=r.target, contact=r.contact, kind=r.channel_type, tier=r.tier,
                     status=r.page_status, state=r.state, title=r.title, created_at=rfc3339(r.created_at),
                     due_at=rfc3339(r.next_attempt_at) if r.state == "pending" else None,
                     sent_at=rfc3339(r.sent_at), digest_of=r.digest_of, attempts=attempts.get(r.id, []))
                for r in rows]


def insert_if_new(conn: sa.Connection, table: sa.Table, key: str):
    """An INSERT into `table` that adds nothing when the row's (unique) `key` is already there."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing(index_elements=[key])


def _delivery(r) -> Delivery:
    return Delivery(r.id, r.incident_id, r.target, r.channel_index, r.channel_type, r.title, r.body, r.page_status,
                    r.attempts, r.created_at, tier=r.tier, contact=r.contact, page_key=r.page_key)
