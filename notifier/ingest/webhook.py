"""`POST /api/v1/alerts/alertmanager`, Alertmanager's webhook: from the ASGI entry to the answer, which
is sent only once the notification is committed (`group_commit.py`).

The POST is served straight from the ASGI entry point (`NotifierAPI`), the rest of the API through
FastAPI. Why: at 8 connections FastAPI's per-request machinery (its middleware stack, route matching,
dependency solving and response wrapping) cost more server CPU than storing the notification. The POST
skips it and runs the same parts the framework would run for it, in the same order: the bearer check
(`core/bearer.py`, so a missing token is still a 401 counted as `unauthorized`), the route's endpoint
(`alertmanager_webhook`), and the app's own exception handlers (a `Rejected` body is its 4xx, anything
else the logged 500 counted in `server_errors` under the route's path). The route stays registered
with FastAPI, so the OpenAPI document describes it and every other method on the path gets FastAPI's
answer (401, or 405).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from vigil.notifier.core.bearer import authorized, unauthorized
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.ingest.group_commit import GroupCommit
from vigil.notifier.ingest.parse import webhook_payload
from vigil.notifier.metrics import NotifierMetrics
from vigil.rules.alertmanager import WEBHOOK_PATH

router = APIRouter()


@router.post(WEBHOOK_PATH)  # its body is described in the OpenAPI document by `api/openapi.py`
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


class NotifierAPI(FastAPI):
    """FastAPI, but the webhook's POST goes to `_webhook` (made by `serve_webhook_directly`)."""

    _webhook: "_DirectWebhook | None" = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self._webhook is not None and scope["type"] == "http" and scope["path"] == WEBHOOK_PATH
                and scope["method"] == "POST"):
            await self._webhook(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def serve_webhook_directly(app: NotifierAPI, token: str, metrics: NotifierMetrics) -> None:
    """Route the webhook's POST past FastAPI (call once the routes and exception handlers are in place)."""
    route = next(r for r in router.routes if r.path == WEBHOOK_PATH and "POST" in r.methods)
    app._webhook = _DirectWebhook(app, route, token, metrics)


class _DirectWebhook:
    def __init__(self, app: FastAPI, route: BaseRoute, token: str, metrics: NotifierMetrics):
        self._app = app
        self._route = route
        self._expected = token.encode()
        self._metrics = metrics
        self._on_rejected = app.exception_handlers[Rejected]
        self._on_error = app.exception_handlers[Exception]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not authorized(scope["headers"], self._expected):
            self._metrics.rejected.labels("unauthorized").inc()
            await unauthorized()(scope, receive, send)
            return
        scope["app"] = self._app  # what Starlette sets: the endpoint reads `request.app.state`
        scope["route"] = self._route  # what the 500 handler labels its count with
        request = Request(scope, receive, send)
        try:
            response = await alertmanager_webhook(request)
        except Rejected as exc:
            response = await self._on_rejected(request, exc)
        except Exception as exc:
            response = await self._on_error(request, exc)
        await response(scope, receive, send)
