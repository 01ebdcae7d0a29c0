"""HTTP routes of the notifier (thin: parse, authenticate, call the store / pipeline, answer).

Contract with Alertmanager (field notes §2): 2xx only after the notification is committed; 5xx on
internal failure (Alertmanager retries); 4xx for bodies that will never be accepted; never 429.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from contextlib import asynccontextmanager
from typing import Callable

import requests
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from vigil.notifier.delivery.inbox_sender import PAGE_HEADER
from vigil.notifier.delivery.pipeline import DeliveryPipeline
from vigil.notifier.delivery.worker import DeliveryWorker
from vigil.notifier.metrics import NotifierMetrics, StoreCollector
from vigil.notifier.models import WebhookPayload
from vigil.notifier.reconcile import reconcile
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store
from vigil.oncall.model import OncallConfig

log = logging.getLogger(__name__)
MAX_LIST = 5000


class _Rejected(Exception):
    def __init__(self, status: int, reason: str, message: str):
        self.status, self.reason, self.message = status, reason, message


def create_app(settings: NotifierSettings, oncall: OncallConfig, *, run_worker: bool = True,
               clock: Callable[[], float] = time.time) -> FastAPI:
    """The notifier application; the store opens (and the worker starts) when the app starts."""
    metrics = NotifierMetrics()
    pipeline = DeliveryPipeline(oncall, settings.own_url, settings.token, settings.max_pages_per_minute)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        store = await run_in_threadpool(Store, settings.db_url)
        worker = DeliveryWorker(store, pipeline, settings, metrics, clock)
        app.state.store, app.state.worker = store, worker
        store_collector = StoreCollector(store)
        metrics.registry.register(store_collector)
        if run_worker:
            worker.start()
        if settings.alertmanager_url:
            # in the background: /healthz must not wait for an Alertmanager that may be down
            threading.Thread(target=_reconcile_quietly, args=(store, pipeline, settings, metrics, clock, worker),
                             name="vigil-notifier-reconcile", daemon=True).start()
        try:
            yield
        finally:
            worker.stop()
            metrics.registry.unregister(store_collector)
            store.close()

    app = FastAPI(title="vigil notifier", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.metrics = metrics

    def authorized(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(),
                                                                  settings.token.encode())

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        if request.url.path.startswith("/api/") and not authorized(request):
            if request.url.path == "/api/v1/alerts/alertmanager":
                metrics.rejected.labels("unauthorized").inc()
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    @app.exception_handler(_Rejected)
    async def rejected(_request: Request, exc: _Rejected):
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception):
        log.exception("internal error")
        return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, status_code=500)

    @app.post("/api/v1/alerts/alertmanager")
    async def alertmanager_webhook(request: Request):
        try:
            payload = WebhookPayload.model_validate(await _json_body(request))
        except ValidationError as exc:
            raise _webhook_reject(metrics, 422, "invalid_payload", _describe(exc)) from None
        except _Rejected as exc:
            metrics.rejected.labels(exc.reason).inc()
            raise
        result = await run_in_threadpool(request.app.state.store.ingest, payload, clock(), pipeline.plan)
        if result.duplicate:
            metrics.duplicates.inc()
        else:
            metrics.received.labels(payload.status).inc()
            if result.deliveries:
                request.app.state.worker.wake()
        return {"status": "stored", "notification_id": result.notification_id,
                "incident_id": result.incident_id, "duplicate": result.duplicate}

    @app.post("/api/v1/inbox")
    async def inbox_arrival(request: Request):
        body = await _json_body(request)
        try:
            delivery_id = int(request.headers.get(PAGE_HEADER, ""))
        except ValueError:
            raise _Rejected(422, "invalid_payload", f"missing or non-numeric {PAGE_HEADER} header") from None
        if not isinstance(body, dict) or not isinstance(body.get("message", body.get("body")), str):
            raise _Rejected(422, "invalid_payload", "expected an apprise JSON object with `title` and `message`")
        page_id = await run_in_threadpool(request.app.state.store.record_inbox_page, delivery_id,
                                          str(body.get("title") or ""), body.get("message", body.get("body")),
                                          clock())
        if page_id is None:
            raise _Rejected(422, "invalid_payload", f"no outbox delivery {delivery_id}")
        return {"status": "recorded", "id": page_id}

    @app.get("/api/v1/inbox")
    async def inbox(request: Request, limit: int = Query(500, ge=1, le=MAX_LIST)):
        return {"pages": await run_in_threadpool(request.app.state.store.list_inbox, limit)}

    @app.get("/api/v1/incidents")
    async def list_incidents(request: Request, limit: int = Query(500, ge=1, le=MAX_LIST)):
        return {"incidents": await run_in_threadpool(request.app.state.store.list_incidents, limit)}

    @app.get("/api/v1/notifications")
    async def list_notifications(request: Request, limit: int = Query(500, ge=1, le=MAX_LIST)):
        return {"notifications": await run_in_threadpool(request.app.state.store.list_notifications, limit)}

    @app.get("/healthz")
    async def healthz(request: Request):
        if getattr(request.app.state, "store", None) is None:
            return JSONResponse({"ok": False}, status_code=503)
        return {"ok": True}

    @app.get("/metrics")
    async def prometheus_metrics():
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


async def _json_body(request: Request):
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise _Rejected(415, "unsupported_media_type", f"expected application/json, got {content_type!r}")
    raw = await request.body()
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Rejected(400, "invalid_json", f"body is not valid JSON: {exc}") from None


def _webhook_reject(metrics: NotifierMetrics, status: int, reason: str, message: str) -> _Rejected:
    metrics.rejected.labels(reason).inc()
    return _Rejected(status, reason, message)


def _describe(exc: ValidationError) -> str:
    """Pydantic's errors as one line: `field.path: message; …` (at most five)."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _reconcile_quietly(store, pipeline, settings, metrics, clock, worker) -> None:
    try:
        found = reconcile(store, pipeline, settings.alertmanager_url, clock, settings.alertmanager_receiver)
    except requests.ConnectionError:
        log.warning("reconcile with %s skipped: Alertmanager unreachable", settings.alertmanager_url)
        return
    except Exception as exc:  # Alertmanager odd: the notifier works without it
        log.warning("reconcile with %s skipped: %s", settings.alertmanager_url, exc)
        return
    metrics.reconciled.inc(found)
    if found:
        worker.wake()
