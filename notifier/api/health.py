"""`GET /healthz` (200 once the store is open) and `GET /metrics` (Prometheus text format); both open."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from vigil.notifier.api.deps import MetricsDep

router = APIRouter()


@router.get("/healthz")
async def healthz(request: Request):
    if getattr(request.app.state, "store", None) is None:
        return JSONResponse({"ok": False}, status_code=503)
    return {"ok": True}


@router.get("/metrics")
async def prometheus_metrics(metrics: MetricsDep):
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)
