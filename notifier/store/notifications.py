"""Notifications and incidents: all SQL on `notifications`, `incidents` and `incident_alerts`.

`ingest` is the webhook's one transaction: store the notification once (dedup), apply its incident
decision (`notifier/incidents.py`) and enqueue its pages in the outbox, all or nothing.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from vigil.notifier.deliveries import PagePlanner
from vigil.notifier.incidents import IncidentState, decide
from vigil.notifier.models import WebhookPayload
from vigil.notifier.schema import incident_alerts, incidents, notifications
from vigil.notifier.store.engine import reading
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.timefmt import rfc3339

RECONCILED_PREFIX = "reconciled:"


@dataclass(frozen=True)
class IngestResult:
    notification_id: int
    incident_id: int
    duplicate: bool
    deliveries: int = 0


class Notifications:
    def __init__(self, engine: sa.Engine, outbox: Outbox):
        self._engine = engine
        self._outbox = outbox
        self._ingest_lock = threading.Lock()  # one ingest at a time per process; the DB guards the rest

    def ingest(self, payload: WebhookPayload, now: float, plan: PagePlanner) -> IngestResult:
        """Store `payload` once, apply its incident decision and enqueue its pages, atomically."""
        with self._ingest_lock:
            for attempt in range(3):
                try:
                    with self._engine.begin() as conn:
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
        enqueued = 0
        if decision.page:
            pages = list(plan(payload, decision, incident_id, self.incident_labels(conn, incident_id)))
            enqueued = self._outbox.enqueue(conn, notification_id, incident_id, decision.page_status, pages, now)
        return IngestResult(notification_id, incident_id, duplicate=False, deliveries=enqueued)

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

    def incident_labels(self, conn: sa.Connection, incident_id: int) -> dict:
        """The common labels of incident `incident_id`, read on `conn`."""
        return json.loads(conn.execute(sa.select(incidents.c.labels)
                                       .where(incidents.c.id == incident_id)).scalar_one())

    def incident_resolved(self, incident_id: int) -> bool:
        with reading(self._engine) as conn:
            return conn.execute(sa.select(incidents.c.status)
                                .where(incidents.c.id == incident_id)).scalar() == "resolved"

    def known_alert_keys(self) -> set[str]:
        """Every alert firing (fingerprint@start) some incident has seen."""
        with reading(self._engine) as conn:
            return set(conn.execute(sa.select(incident_alerts.c.alert_key)).scalars())

    def firing_count(self) -> int:
        with reading(self._engine) as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(incidents)
                                .where(incidents.c.status == "firing")).scalar_one()

    def list_incidents(self, limit: int) -> list[dict]:
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(incidents).order_by(incidents.c.id.desc()).limit(limit)).all()
        return [dict(id=r.id, group_key=r.group_key, status=r.status, opened_at=rfc3339(r.opened_at),
                     resolved_at=rfc3339(r.resolved_at), labels=json.loads(r.labels), title=r.title)
                for r in reversed(rows)]

    def list_notifications(self, limit: int) -> list[dict]:
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(notifications).order_by(notifications.c.id.desc()).limit(limit)).all()
        out = []
        for r in reversed(rows):
            alerts = [dict(labels=a["labels"], status=a["status"], startsAt=a["startsAt"], endsAt=a["endsAt"],
                           fingerprint=a["fingerprint"]) for a in json.loads(r.payload)["alerts"]]
            out.append(dict(id=r.id, received_at=rfc3339(r.received_at), group_key=r.group_key, status=r.status,
                            incident_id=r.incident_id, alerts=alerts))
        return out


def _opened_at(payload: WebhookPayload, now: float) -> float:
    """When the incident started: the earliest alert start, never later than now."""
    starts = [alert.starts_at.timestamp() for alert in payload.alerts]
    return min(starts + [now])
