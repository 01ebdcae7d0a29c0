"""`POST /api/v1/alerts/alertmanager`: store the notification, answer only once it is committed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.auth import WEBHOOK_PATH
from vigil.notifier.api.deps import ClockDep, MetricsDep, RouteDep, StoreDep, WorkerDep
from vigil.notifier.api.openapi import WEBHOOK_BODY
from vigil.notifier.api.parse import Rejected, webhook_payload

router = APIRouter()


@router.post(WEBHOOK_PATH, openapi_extra=WEBHOOK_BODY)
async def alertmanager_webhook(request: Request, store: StoreDep, clock: ClockDep, metrics: MetricsDep,
                               route: RouteDep, worker: WorkerDep):
    try:
        payload = await webhook_payload(request)
    except Rejected as exc:
        metrics.rejected.labels(exc.reason).inc()
        raise
    result = await run_in_threadpool(store.notifications.ingest, payload, clock(), route)
    if result.duplicate:
        metrics.duplicates.inc()
    else:
        metrics.received.labels(payload.status).inc()
        if result.deliveries:
            worker.wake()
    return {"status": "stored", "notification_id": result.notification_id,
            "incident_id": result.incident_id, "duplicate": result.duplicate}
