"""Every `/api/` route needs `Authorization: Bearer <token>`; `/healthz` and `/metrics` are open.

A middleware rather than a route dependency, so a request without the token is refused before its
body is read, and an unknown `/api/` path is a 401 too (it says nothing about which routes exist).
"""

from __future__ import annotations

import hmac

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from vigil.notifier.metrics import NotifierMetrics

WEBHOOK_PATH = "/api/v1/alerts/alertmanager"


def require_bearer_token(app: FastAPI, token: str, metrics: NotifierMetrics) -> None:
    expected = token.encode()

    def authorized(request: Request) -> bool:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected)

    @app.middleware("http")
    async def check_token(request: Request, call_next):
        if request.url.path.startswith("/api/") and not authorized(request):
            if request.url.path == WEBHOOK_PATH:
                metrics.rejected.labels("unauthorized").inc()
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)
