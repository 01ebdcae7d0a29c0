"""Every `/api/` route needs `Authorization: Bearer <token>`; `/healthz` and `/metrics` are open.

A middleware rather than a route dependency, so a request without the token is refused before its
body is read, and an unknown `/api/` path is a 401 too (it says nothing about which routes exist).
A plain ASGI middleware: Starlette's `@app.middleware("http")` (BaseHTTPMiddleware) runs every request
through a task group and memory streams, which cost more than the webhook's own work. (The webhook's
POST makes the same check at its own entry, `ingest/webhook.py`.)
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from vigil.notifier.core.bearer import authorized, unauthorized
from vigil.notifier.metrics import NotifierMetrics
from vigil.rules.alertmanager import WEBHOOK_PATH


def require_bearer_token(app: FastAPI, token: str, metrics: NotifierMetrics) -> None:
    app.add_middleware(BearerToken, token=token, metrics=metrics)


class BearerToken:
    def __init__(self, app: ASGIApp, token: str, metrics: NotifierMetrics):
        self._app = app
        self._expected = token.encode()
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["path"].startswith("/api/")
                and not authorized(scope["headers"], self._expected)):
            if scope["path"] == WEBHOOK_PATH:
                self._metrics.rejected.labels("unauthorized").inc()
            await unauthorized()(scope, receive, send)
            return
        await self._app(scope, receive, send)
