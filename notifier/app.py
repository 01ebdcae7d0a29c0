"""The notifier application: wires the store, the delivery stages, the worker and the routers.

Contract with Alertmanager (field notes §2): 2xx only after the notification is committed; 5xx on
internal failure (Alertmanager retries); 4xx for bodies that will never be accepted; never 429.
"""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager

import requests
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from vigil.notifier import console
from vigil.notifier.analytics.collector import OncallHealthCollector
from vigil.notifier.api import health, heartbeats, inbox, incidents, maintenance, reports, schedules
from vigil.notifier.api import links as link_routes
from vigil.notifier.api.auth import require_bearer_token
from vigil.notifier.ingest import webhook
from vigil.notifier.ingest.webhook import NotifierAPI, serve_webhook_directly
from vigil.notifier.api.errors import install_error_handlers
from vigil.notifier.api.openapi import document_api
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.core.clock import Clock, system_clock
from vigil.notifier.ingest.group_commit import IncidentPlanner
from vigil.notifier.delivery.pipeline import delivery_stages
from vigil.notifier.delivery.webpush import VapidKey, WebPushSender
from vigil.notifier.oncall_overrides import OncallWithOverrides
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.delivery.worker import DeliveryWorker
from vigil.notifier.engine.escalation_loop import EscalationEngine
from vigil.notifier.engine.heartbeat import HeartbeatMonitor
from vigil.notifier.engine.paging import page_links_for
from vigil.notifier.metrics import HeartbeatCollector, NotifierMetrics, StoreCollector
from vigil.notifier.reconcile import reconcile
from vigil.notifier.reconcile_resolve import GoneAlertResolver
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store
from vigil.oncall.model import OncallConfig

log = logging.getLogger(__name__)


def create_app(settings: NotifierSettings, oncall: OncallConfig, *, run_worker: bool = True,
               clock: Clock = system_clock) -> FastAPI:
    """The notifier application; the store opens (and the worker starts) when the app starts."""
    metrics = NotifierMetrics()
    metrics.start_at_zero(oncall)
    oncall = OncallWithOverrides(oncall)  # the file, and the schedule overrides made in the console on top
    links = page_links_for(settings, oncall)
    route = EngineIntake(oncall, links, metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        store = await run_in_threadpool(Store, settings.db_url)
        oncall.attach(store.schedule_overrides, clock)
        vapid = app.state.vapid = (None if settings.vapid_key_file is None
                                   else VapidKey.load_or_create(settings.vapid_key_file))
        push = app.state.push = WebPushSender(store.push_subscriptions, vapid, settings.vapid_subject, clock)
        worker = DeliveryWorker(store.outbox, delivery_stages(store, oncall, settings, metrics, clock, push), clock,
                                settings.poll_interval_s)
        engine = EscalationEngine(store, oncall, clock, metrics, settings.poll_interval_s, links, worker.wake)
        monitor = HeartbeatMonitor(store, settings.heartbeats, route, clock, settings.poll_interval_s, worker.wake)
        app.state.store, app.state.worker, app.state.engine, app.state.heartbeats = store, worker, engine, monitor
        gone = app.state.gone_alerts = (None if not settings.alertmanager_url else GoneAlertResolver(
            store, settings.alertmanager_url, settings.resolve_gone_after_s, clock, settings.resolve_gone_check_s,
            lambda: (metrics.resolved_gone.inc(), worker.wake())))
        collectors = [StoreCollector(store, clock), HeartbeatCollector(monitor), OncallHealthCollector(store, oncall, clock)]
        for collector in collectors:
            metrics.registry.register(collector)
        # the notifier's background loops, one list: started in this order, stopped in the reverse one
        loops = [worker, engine, monitor, *([gone] if gone is not None else [])]
        if run_worker:
            for loop in loops:
                loop.start()
        if settings.alertmanager_url:
            # in the background: /healthz must not wait for an Alertmanager that may be down
            threading.Thread(target=_reconcile_quietly, args=(store, route, settings, metrics, clock, worker),
                             name="vigil-notifier-reconcile", daemon=True).start()
        try:
            yield
        finally:
            for loop in reversed(loops):
                loop.stop()
            for collector in collectors:
                metrics.registry.unregister(collector)
            store.close()

    app = NotifierAPI(title="vigil notifier", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.settings, app.state.metrics, app.state.clock, app.state.route = settings, metrics, clock, route
    app.state.oncall = oncall  # the on-call routes (who, calendars) read it
    require_bearer_token(app, settings.token, metrics)

    @app.exception_handler(Rejected)
    async def rejected(_request: Request, exc: Rejected):
        return JSONResponse({"error": exc.message}, status_code=exc.status)

    install_error_handlers(app)  # FastAPI's own refusals (422, 404, 405) as {"error": ...} too

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("internal error")
        route = request.scope.get("route")
        metrics.server_errors.labels(getattr(route, "path", "unrouted")).inc()
        return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, status_code=500)

    for module in (webhook, heartbeats, incidents, maintenance, link_routes, inbox, schedules, reports, health):
        app.include_router(module.router)
    console.install(app, settings.console_templates)  # the web console, /console/ (its own login; /api/ keeps the bearer token)
    document_api(app)
    serve_webhook_directly(app, settings.token, metrics)
    return app


def _reconcile_quietly(store: Store, route: IncidentPlanner, settings: NotifierSettings, metrics: NotifierMetrics,
                       clock: Clock, worker: DeliveryWorker) -> None:
    try:
        found = reconcile(store.notifications, route, settings.alertmanager_url, clock,
                          settings.alertmanager_receiver)
    except requests.ConnectionError:
        log.warning("reconcile with %s skipped: Alertmanager unreachable", settings.alertmanager_url)
        return
    except Exception as exc:  # Alertmanager odd: the notifier works without it
        log.warning("reconcile with %s skipped: %s", settings.alertmanager_url, exc)
        return
    metrics.reconciled.inc(found)
    if found:
        worker.wake()
