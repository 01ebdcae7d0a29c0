"""`GET /api/v1/incidents` and `GET /api/v1/notifications`, oldest first (the newest `limit`)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ListLimit, StoreDep

router = APIRouter()


@router.get("/api/v1/incidents")
async def list_incidents(store: StoreDep, limit: ListLimit = 500):
    return {"incidents": await run_in_threadpool(store.notifications.list_incidents, limit)}


@router.get("/api/v1/notifications")
async def list_notifications(store: StoreDep, limit: ListLimit = 500):
    return {"notifications": await run_in_threadpool(store.notifications.list_notifications, limit)}
