"""Durable storage of notifications, incidents, the delivery outbox and the inbox; all SQL lives here.

SQLAlchemy Core, so one set of statements serves SQLite (default, WAL, synchronous=FULL: a commit is
on disk before the webhook is answered) and PostgreSQL (`postgresql://…`, driver psycopg 3).
Times are stored as UNIX seconds (float) and shown as RFC 3339 UTC.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from vigil.notifier.incidents import IncidentDecision, IncidentState, decide
from vigil.notifier.models import WebhookPayload
from vigil.notifier.schema import deliveries, delivery_attempts, inbox_pages, incident_alerts, incidents
from vigil.notifier.schema import metadata, notifications
from vigil.notifier.timefmt import rfc3339

RECONCILED_PREFIX = "reconciled:"


@dataclass(frozen=True)
class NewDelivery:
    """A page to enqueue in the outbox, in the same transaction as its notification."""

    target: str
    channel_index: int
    channel_type: str
    title: str
    body: str


@dataclass(frozen=True)
class IngestResult:
    notification_id: int
    incident_id: int
    duplicate: bool
    deliveries: int = 0


@dataclass(frozen=True)
class Delivery:
    """An outbox row the worker is about to send."""

    id: int
    target: str
    channel_index: int
    channel_type: str
    title: str
    body: str
    page_status: str
    attempts: int
    created_at: float


# (payload, decision, incident_id, incident labels) -> pages to enqueue
PagePlanner = Callable[[WebhookPayload, IncidentDecision, int, dict], Iterable[NewDelivery]]


def engine_for(url: str) -> sa.Engine:
    """An engine for `url`; SQLite gets WAL, full sync, a busy timeout and write-locking BEGINs."""
    if url.startswith("postgresql://"):
        return sa.create_engine("postgresql+psycopg://" + url.removeprefix("postgresql://"))
    if not url.startswith("sqlite"):
        return sa.create_engine(url)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below drive transactions
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection):
        # IMMEDIATE takes the write lock up front: two writers serialize instead of failing mid-way
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Store:
    """The notifier's database."""

    def __init__(self, url: str):
        self.engine = engine_for(url)
        metadata.create_all(self.engine)
        self._ingest_lock = threading.Lock()  # one ingest at a time per process; the DB guards the rest

    def close(self) -> None:
        self.engine.dispose()

    # --- webhook ---------------------------------------------------------------------------------
    def ingest(self, payload: WebhookPayload, now: float, plan: PagePlanner) -> IngestResult:
        """Store `payload` once, apply its incident decision and enqueue its pages, atomically."""
        with self._ingest_lock:
            for attempt in range(3):
                try:
                    with self.engine.begin() as conn:
                        return self._ingest(conn, payload, now, plan)
                except IntegrityError:
                    # another process stored the same notification or opened the incident first:
                    # run again and find its rows
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def _ingest(self, conn, payload: WebhookPayload, now: float, plan: PagePlanner) -> IngestResult:
        key = payload.dedup_key()
        seen = conn.execute(
            sa.select(notifications.c.id, notifications.c.incident_id).where(notifications.c.dedup_key == key)
        ).first()
        if seen is not None:
            return IngestResult(seen.id, seen.incident_id, duplicate=True)
        latest = self._latest_incident(conn, payload)
        decision = decide(payload, latest)
        if decision.creates_incident:
            incident_id = conn.execute(incidents.insert().values(
                group_key=payload.groupKey, status=decision.page_status, opened_at=_opened_at(payload, now),
                resolved_at=now if decision.page_status == "resolved" else None,
                labels=json.dumps(payload.commonLabels, sort_keys=True), title=payload.title(),
            )).inserted_primary_key[0]
        else:
            incident_id = latest.id
            if decision.action == "resolve":
                conn.execute(incidents.update().where(incidents.c.id == incident_id)
                             .values(status="resolved", resolved_at=now))
        known = frozenset() if decision.creates_incident else latest.known_alert_keys
        new_keys = decision.alert_keys - known
        if new_keys:
            conn.execute(incident_alerts.insert(), [{"incident_id": incident_id, "alert_key": k} for k in new_keys])
        notification_id = conn.execute(notifications.insert().values(
            dedup_key=key, received_at=now, group_key=payload.groupKey, status=payload.status,
            receiver=payload.receiver, incident_id=incident_id, payload=payload.model_dump_json(),
        )).inserted_primary_key[0]
        rows = []
        if decision.page:
            labels = self._incident_labels(conn, incident_id)
            rows = [dict(notification_id=notification_id, incident_id=incident_id, target=d.target,
                         channel_index=d.channel_index, channel_type=d.channel_type,
                         page_status=decision.page_status, title=d.title, body=d.body, state="pending",
                         attempts=0, next_attempt_at=now, created_at=now)
                    for d in plan(payload, decision, incident_id, labels)]
            if rows:
                conn.execute(deliveries.insert(), rows)
        return IngestResult(notification_id, incident_id, duplicate=False, deliveries=len(rows))

    def _latest_incident(self, conn, payload: WebhookPayload) -> IncidentState | None:
        row = conn.execute(sa.select(incidents.c.id, incidents.c.status)
                           .where(incidents.c.group_key == payload.groupKey)
                           .order_by(incidents.c.id.desc()).limit(1)).first()
        if row is None or row.status == "resolved":
            # an incident opened by reconciliation (no groupKey known then) is adopted by the first
            # notification that shares one of its alerts
            adopted = self._reconciled_sharing(conn, payload)
            if adopted is not None:
                conn.execute(incidents.update().where(incidents.c.id == adopted)
                             .values(group_key=payload.groupKey))
                row = conn.execute(sa.select(incidents.c.id, incidents.c.status)
                                   .where(incidents.c.id == adopted)).first()
        if row is None:
            return None
        keys = conn.execute(sa.select(incident_alerts.c.alert_key)
                            .where(incident_alerts.c.incident_id == row.id)).scalars()
        return IncidentState(row.id, row.status, frozenset(keys))

    def _reconciled_sharing(self, conn, payload: WebhookPayload) -> int | None:
        keys = [alert.firing_key() for alert in payload.alerts]
        return conn.execute(
            sa.select(incidents.c.id).join(incident_alerts, incident_alerts.c.incident_id == incidents.c.id)
            .where(incidents.c.group_key.startswith(RECONCILED_PREFIX), incidents.c.status == "firing",
                   incident_alerts.c.alert_key.in_(keys))
            .order_by(incidents.c.id).limit(1)
        ).scalar()

    def _incident_labels(self, conn, incident_id: int) -> dict:
        return json.loads(conn.execute(sa.select(incidents.c.labels)
                                       .where(incidents.c.id == incident_id)).scalar_one())

    def known_alert_keys(self) -> set[str]:
        """Every alert firing (fingerprint@start) some incident has seen."""
        with self.engine.connect() as conn:
            return set(conn.execute(sa.select(incident_alerts.c.alert_key)).scalars())

    # --- reading -----------------------------------------------------------------------------------
    def list_incidents(self, limit: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(incidents).order_by(incidents.c.id.desc()).limit(limit)).all()
        return [dict(id=r.id, group_key=r.group_key, status=r.status, opened_at=rfc3339(r.opened_at),
                     resolved_at=rfc3339(r.resolved_at), labels=json.loads(r.labels), title=r.title)
                for r in reversed(rows)]

    def list_notifications(self, limit: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(notifications).order_by(notifications.c.id.desc()).limit(limit)).all()
        out = []
        for r in reversed(rows):
            alerts = [dict(labels=a["labels"], status=a["status"], startsAt=a["startsAt"], endsAt=a["endsAt"],
                           fingerprint=a["fingerprint"]) for a in json.loads(r.payload)["alerts"]]
            out.append(dict(id=r.id, received_at=rfc3339(r.received_at), group_key=r.group_key, status=r.status,
                            incident_id=r.incident_id, alerts=alerts))
        return out

    def list_inbox(self, limit: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(inbox_pages).order_by(inbox_pages.c.id.desc()).limit(limit)).all()
        return [dict(id=r.id, time=rfc3339(r.time), recipient=r.recipient, channel=r.channel, title=r.title,
                     body=r.body, incident_id=r.incident_id, status=r.status, labels=json.loads(r.labels))
                for r in reversed(rows)]

    # --- outbox ------------------------------------------------------------------------------------
    def claim_due(self, now: float, limit: int, lease_s: float) -> list[Delivery]:
        """Pending deliveries due by `now`; each is leased for `lease_s` so no other worker takes it."""
        with self.engine.begin() as conn:
            rows = conn.execute(sa.select(deliveries).where(deliveries.c.state == "pending",
                                                            deliveries.c.next_attempt_at <= now)
                                .order_by(deliveries.c.next_attempt_at, deliveries.c.id).limit(limit)).all()
            if rows:
                conn.execute(deliveries.update().where(deliveries.c.id.in_([r.id for r in rows]))
                             .values(next_attempt_at=now + lease_s))
        return [Delivery(r.id, r.target, r.channel_index, r.channel_type, r.title, r.body, r.page_status,
                         r.attempts, r.created_at) for r in rows]

    def record_attempt(self, delivery_id: int, now: float, ok: bool, error: str | None,
                       duration_s: float, retry_at: float | None) -> None:
        """Log one send attempt; `retry_at` None with a failure means: give up."""
        state = "sent" if ok else ("pending" if retry_at is not None else "failed")
        with self.engine.begin() as conn:
            conn.execute(delivery_attempts.insert().values(delivery_id=delivery_id, at=now, ok=ok,
                                                           error=error, duration_s=duration_s))
            conn.execute(deliveries.update().where(deliveries.c.id == delivery_id).values(
                state=state, attempts=deliveries.c.attempts + 1, last_error=error,
                sent_at=now if ok else None, next_attempt_at=retry_at if retry_at is not None else now))

    def postpone(self, delivery_id: int, until: float) -> None:
        with self.engine.begin() as conn:
            conn.execute(deliveries.update().where(deliveries.c.id == delivery_id).values(next_attempt_at=until))

    def delivery_states(self) -> dict[str, int]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(deliveries.c.state, sa.func.count()).group_by(deliveries.c.state)).all()
        return {state: count for state, count in rows}

    def counts(self) -> tuple[dict[str, int], int]:
        """(deliveries by state, incidents firing), for the metrics scrape."""
        with self.engine.connect() as conn:
            firing = conn.execute(sa.select(sa.func.count()).select_from(incidents)
                                  .where(incidents.c.status == "firing")).scalar_one()
        return self.delivery_states(), firing

    def attempts_of(self, delivery_id: int) -> list[dict]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(delivery_attempts).where(delivery_attempts.c.delivery_id == delivery_id)
                                .order_by(delivery_attempts.c.id)).all()
        return [dict(at=r.at, ok=r.ok, error=r.error) for r in rows]

    # --- inbox -------------------------------------------------------------------------------------
    def record_inbox_page(self, delivery_id: int, title: str, body: str, now: float) -> int | None:
        """Record a page that arrived for outbox delivery `delivery_id`; None if no such delivery.

        A page delivered twice (sent, then the worker died before marking it) is recorded once.
        """
        with self.engine.begin() as conn:
            d = conn.execute(sa.select(deliveries).where(deliveries.c.id == delivery_id)).first()
            if d is None:
                return None
            existing = conn.execute(sa.select(inbox_pages.c.id)
                                    .where(inbox_pages.c.delivery_id == delivery_id)).scalar()
            if existing is not None:
                return existing
            return conn.execute(inbox_pages.insert().values(
                delivery_id=delivery_id, time=now, recipient=d.target, channel=d.channel_type, title=title,
                body=body, incident_id=d.incident_id, status=d.page_status,
                labels=json.dumps(self._incident_labels(conn, d.incident_id), sort_keys=True),
            )).inserted_primary_key[0]


def _opened_at(payload: WebhookPayload, now: float) -> float:
    """When the incident started: the earliest alert start, never later than now."""
    starts = [alert.starts_at.timestamp() for alert in payload.alerts]
    return min(starts + [now])
