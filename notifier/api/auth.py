"""Every `/api/` route needs `Authorization: Bearer <token>`; `/healthz` and `/metrics` are open.

A middleware rather than a route dependency, so a request without the token is refused before its
body is read, and an unknown `/api/` path is a 401 too (it says nothing about which routes exist).
A plain ASGI middleware: Starlette's `@app.middleware("http")` (BaseHTTPMiddleware) runs every request
through a task group and memory streams, which cost more than the webhook's own work.
"""

from __future__ import annotations

import hmac

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from vigil.notifier.metrics import NotifierMetrics

WEBHOOK_PATH = "/api/v1/alerts/alertmanager"


def require_bearer_token(app: FastAPI, token: str, metrics: NotifierMetrics) -> None:
    app.add_middleware(BearerToken, token=token, metrics=metrics)


class BearerToken:
    def __init__(self, app: ASGIApp, token: str, metrics: NotifierMetrics):
        self._app = app
        self._expected = token.encode()
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/") and not self._authorized(scope):
            if scope["path"] == WEBHOOK_PATH:
                self._metrics.rejected.labels("unauthorized").inc()
            refused = JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                   headers={"WWW-Authenticate": "Bearer"})
            await refused(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":  # ASGI servers lower-case header names
                given = value
                break
        scheme, _, credentials = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._expected)
