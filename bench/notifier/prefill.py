"""Fill a notifier database before the server starts: open incidents (ingested through the notifier's own
store and route stage, as the webhook would: the engine pages tier 1 and files the next step), then
either each incident's page in the outbox or each incident's next escalation step made due when the
benchmark wants it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import sqlalchemy as sa

from vigil.notifier.ingest.group_commit import ingest_in
from vigil.notifier.app import page_links_for
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.schema import deliveries, escalations
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store
from vigil.oncall.loader import load_oncall


def _notification(i: int) -> dict:
    labels = {"alertname": "GpuXidCritical", "node": f"node-{i % 50}", "severity": "critical",
              "prefill": str(i), "paged": "yes"}
    return {"version": "4", "groupKey": f'{{}}:{{prefill="{i}"}}', "status": "firing", "receiver": "vigil",
            "groupLabels": {"prefill": str(i)}, "commonLabels": labels, "commonAnnotations": {"summary": "XID 79"},
            "externalURL": "http://am", "alerts": [{"status": "firing", "labels": labels,
                                                     "annotations": {"summary": "XID 79"},
                                                     "startsAt": "2026-11-21T20:00:00.000Z",
                                                     "endsAt": "0001-01-01T00:00:00Z",
                                                     "fingerprint": f"{i:016x}"}]}


def _with_open_incidents(db_url: str, oncall_path: Path, token: str, count: int,
                         then: Callable[[sa.Connection, float], dict[int, float]]) -> dict[int, float]:
    """Ingest `count` firing notifications (each a new incident), then `then(conn, ready)` in the same
    transaction; `ready` is the time the ingest ended (due times count from it: the ingest takes seconds
    on a busy machine)."""
    store = Store(db_url)
    oncall = load_oncall(oncall_path)
    settings = NotifierSettings(token=token, oncall_config=oncall_path, db_url=db_url)
    route = EngineIntake(oncall, page_links_for(settings, oncall), NotifierMetrics())
    try:
        with store.engine.begin() as conn:
            now = time.time()
            for i in range(count):
                ingest_in(conn, store.notifications, WebhookPayload.model_validate(_notification(i)), now, route)
            return then(conn, time.time())
    finally:
        store.close()


def prefill_pages(db_url: str, oncall_path: Path, token: str, count: int,
                  delay_s: Callable[[int], float]) -> dict[int, float]:
    """`count` open incidents, then page i made due `delay_s(i)` seconds from now; returns
    {delivery id: due time}."""
    def due_pages(conn: sa.Connection, ready: float) -> dict[int, float]:
        ids = conn.execute(sa.select(deliveries.c.id).order_by(deliveries.c.id)).scalars().all()
        due = {delivery: ready + delay_s(i) for i, delivery in enumerate(ids)}
        for delivery, at in due.items():
            conn.execute(deliveries.update().where(deliveries.c.id == delivery).values(next_attempt_at=at))
        return due

    return _with_open_incidents(db_url, oncall_path, token, count, due_pages)


def prefill_escalations(db_url: str, oncall_path: Path, token: str, count: int,
                        delay_s: Callable[[int], float]) -> dict[int, float]:
    """`count` open, unacknowledged incidents whose first tier was paged (and its pages sent: the outbox
    starts empty) and whose pending escalation step falls due `delay_s(i)` seconds from now; returns
    {incident id: due time}."""
    def due_steps(conn: sa.Connection, ready: float) -> dict[int, float]:
        conn.execute(deliveries.update().values(state="sent", sent_at=ready))
        ids = conn.execute(sa.select(escalations.c.incident_id).order_by(escalations.c.incident_id)).scalars().all()
        if len(ids) != count:
            raise SystemExit(f"expected {count} pending escalations after the prefill, found {len(ids)}")
        due = {incident: ready + delay_s(i) for i, incident in enumerate(ids)}
        for incident, at in due.items():
            conn.execute(escalations.update().where(escalations.c.incident_id == incident).values(due_at=at))
        return due

    return _with_open_incidents(db_url, oncall_path, token, count, due_steps)
