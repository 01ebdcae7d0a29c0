"""The webhook's POST served straight from the ASGI entry point, the rest through FastAPI.

Why: at 8 connections FastAPI's per-request machinery (its middleware stack, route matching,
dependency solving and response wrapping) cost more server CPU than storing the notification. A
`POST /api/v1/alerts/alertmanager` skips it and runs the same parts the framework would run for it,
in the same order: the bearer check (`auth.BearerToken`, so a missing token is still a 401 counted as
`unauthorized`), the route's endpoint (`webhook.alertmanager_webhook`), and the app's own exception
handlers (a `Rejected` body is its 4xx, anything else the logged 500 counted in `server_errors` under
the route's path). The route stays registered with FastAPI, so the OpenAPI document describes it and
every other method on the path gets FastAPI's answer (401, or 405).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from vigil.notifier.api.auth import WEBHOOK_PATH, BearerToken
from vigil.notifier.api.parse import Rejected
from vigil.notifier.api.webhook import alertmanager_webhook
from vigil.notifier.api.webhook import router as webhook_router


class NotifierAPI(FastAPI):
    """FastAPI, but the webhook's POST goes to `_webhook` (made by `serve_webhook_directly`)."""

    _webhook: BearerToken | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self._webhook is not None and scope["type"] == "http" and scope["path"] == WEBHOOK_PATH
                and scope["method"] == "POST"):
            await self._webhook(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def serve_webhook_directly(app: NotifierAPI, token: str, metrics) -> None:
    """Route the webhook's POST past FastAPI (call once the routes and exception handlers are in place)."""
    route = next(r for r in webhook_router.routes if r.path == WEBHOOK_PATH and "POST" in r.methods)
    app._webhook = BearerToken(_Endpoint(app, route), token=token, metrics=metrics)


class _Endpoint:
    def __init__(self, app: FastAPI, route: BaseRoute):
        self._app = app
        self._route = route
        self._on_rejected = app.exception_handlers[Rejected]
        self._on_error = app.exception_handlers[Exception]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
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
