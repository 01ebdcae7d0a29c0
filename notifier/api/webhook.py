"""`POST /api/v1/alerts/alertmanager`: store the notification, answer only once it is committed."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from vigil.notifier.api.auth import WEBHOOK_PATH
from vigil.notifier.api.openapi import WEBHOOK_BODY
from vigil.notifier.api.parse import Rejected, webhook_payload
from vigil.notifier.store.ingest_batch import GroupCommit

router = APIRouter()


@router.post(WEBHOOK_PATH, openapi_extra=WEBHOOK_BODY)
async def alertmanager_webhook(request: Request):
    # what the other routes take as dependencies (`deps.py`), read from the app's state directly: the
    # busiest route skips FastAPI's dependency solving
    state = request.app.state
    try:
        payload = await webhook_payload(request)
    except Rejected as exc:
        state.metrics.rejected.labels(exc.reason).inc()
        raise
    # group commit: posts arriving together share one transaction; answered only once it committed
    result = await _group_commit(state).store(payload, state.clock(), state.route)
    if result.duplicate:
        state.metrics.duplicates.inc()
    else:
        state.metrics.received.labels(payload.status).inc()
        if result.deliveries:
            state.worker.wake()
    # the bytes `JSONResponse` would render for {status, notification_id, incident_id, duplicate}, made
    # without a JSON encoder (its non-default options build one per call): two ints and a bool
    body = _ANSWER % (result.notification_id, result.incident_id, b"true" if result.duplicate else b"false")
    return Response(body, media_type="application/json")


_ANSWER = b'{"status":"stored","notification_id":%d,"incident_id":%d,"duplicate":%s}'


def _group_commit(state) -> GroupCommit:
    """The app's group committer for its store (made on the first post; the event loop runs this alone)."""
    group = getattr(state, "group_commit", None)
    if group is None or group.notifications is not state.store.notifications:
        group = state.group_commit = GroupCommit(state.store.engine, state.store.notifications)
    return group
