"""Storm-control digests in the outbox: the pages over a contact's limit folded into ONE digest per
person and contact, and that digest brought up to date when it is about to go out.

- `fold`: the pages waiting for the contact become `digested`, each with `digest_of` and a
  `page_digested` event. A digest of that contact still waiting takes them (its text recomposed from
  every page it now stands for); only when none waits is a new one made. So a storm gives one digest
  per minute window, never one per page over the limit.
- `refresh`: just before it is sent, the digest lists only the pages of incidents still open (firing
  and unacknowledged) and says how many were settled meanwhile; when nothing it stands for is open, it
  is not sent at all (the stage mutes it). Its row keeps the text that went out.

`compose(rows, settled)` gives the digest's (title, body) for the rows it lists (each with
incident_id, page_status, title, body) and the count of rows settled since they were folded.
"""

from __future__ import annotations

from typing import Callable, Sequence

import sqlalchemy as sa

from vigil.notifier.core.deliveries import DIGEST_KEY_PREFIX, Delivery
from vigil.notifier.schema import deliveries, incidents
from vigil.notifier.store.timeline import Timeline

Compose = Callable[[Sequence, int], tuple[str, str]]
_IS_DIGEST = deliveries.c.page_key.startswith(DIGEST_KEY_PREFIX)


class Digests:
    def __init__(self, engine: sa.Engine):
        self._engine = engine
        self._timeline = Timeline(engine)

    def fold(self, delivery: Delivery, claimed_at: float, lease_s: float, due_at: float, compose: Compose,
             passed: frozenset[int] = frozenset()) -> frozenset[int]:
        """Fold every page waiting for `delivery`'s person and contact (due, or claimed at `claimed_at`),
        except those in `passed` (being sent), into the contact's waiting digest, or a new one due at
        `due_at`. Returns the ids folded (some may be claimed by the worker: the caller must not send
        them); empty: nothing to fold (another thread folded this page already)."""
        contact = (deliveries.c.target == delivery.target, deliveries.c.channel_index == delivery.channel_index)
        with self._engine.begin() as conn:
            rows = conn.execute(sa.select(deliveries).where(
                deliveries.c.id.not_in(passed) if passed else sa.true(), *contact,
                deliveries.c.state == "pending", deliveries.c.next_attempt_at <= claimed_at + lease_s,
                sa.or_(deliveries.c.page_key.is_(None), ~_IS_DIGEST))
                .order_by(deliveries.c.id).with_for_update()).all()  # PostgreSQL: a second folder waits
            if delivery.id not in {row.id for row in rows}:
                return frozenset()
            waiting = conn.execute(sa.select(deliveries.c.id).where(  # not one let through (being sent)
                deliveries.c.id.not_in(passed) if passed else sa.true(), *contact, deliveries.c.state == "pending",
                _IS_DIGEST).order_by(deliveries.c.id)
                .limit(1).with_for_update()).scalar()
            digest_id = waiting if waiting is not None else conn.execute(deliveries.insert().values(
                notification_id=None, incident_id=delivery.incident_id, target=delivery.target,
                channel_index=delivery.channel_index, channel_type=delivery.channel_type, page_status="firing",
                title="", body="", state="pending", attempts=0, next_attempt_at=due_at, created_at=claimed_at,
                contact=delivery.contact, tier=None,
                page_key=f"{DIGEST_KEY_PREFIX}{delivery.target}:{delivery.channel_index}:{rows[0].id}",
            )).inserted_primary_key[0]
            conn.execute(deliveries.update().where(deliveries.c.id.in_([r.id for r in rows]))
                         .values(state="digested", digest_of=digest_id, next_attempt_at=claimed_at))
            folded = self._folded(conn, digest_id)
            self._write(conn, digest_id, folded, compose(folded, 0))
            for row in rows:
                self._timeline.record(conn, row.incident_id, claimed_at, "page_digested", delivery=row.id,
                                      person=row.target, contact=row.contact, kind=row.channel_type,
                                      digest=digest_id, pages=len(folded))
            return frozenset(row.id for row in rows)

    def refresh(self, digest: Delivery, compose: Compose) -> tuple[str, str] | None:
        """The digest's text as it goes out now: the pages of incidents still open; None when none is."""
        with self._engine.begin() as conn:
            folded = self._folded(conn, digest.id)
            open_ids = set(conn.execute(sa.select(incidents.c.id).where(
                incidents.c.id.in_({row.incident_id for row in folded}), incidents.c.status == "firing",
                incidents.c.acknowledged_at.is_(None))).scalars())
            listed = [row for row in folded if row.incident_id in open_ids and row.page_status == "firing"]
            if not listed:
                return None
            text = compose(listed, len(folded) - len(listed))
            self._write(conn, digest.id, listed, text)
            return text

    @staticmethod
    def _folded(conn: sa.Connection, digest_id: int) -> list:
        return conn.execute(sa.select(deliveries).where(deliveries.c.digest_of == digest_id)
                            .order_by(deliveries.c.id)).all()

    @staticmethod
    def _write(conn: sa.Connection, digest_id: int, rows: Sequence, text: tuple[str, str]) -> None:
        conn.execute(deliveries.update().where(deliveries.c.id == digest_id).values(
            title=text[0], body=text[1], incident_id=rows[0].incident_id,
            page_status="firing" if any(r.page_status == "firing" for r in rows) else "resolved"))
