"""Maintenance windows: `GET /api/v1/maintenance` (`?all=true`: the finished ones too; the windows of
the on-call file are listed with them, `source: "on-call file"`, without an id),
`POST /api/v1/maintenance` (a new window, 201) and `POST /api/v1/maintenance/{id}/end` (end it now).

While a window is active, pages of incidents whose labels match it are held: recorded on the
incident's timeline (`page_held`), not sent (the delivery's mute stage), and their escalations pause
until it is over (`vigil.notifier.engine.pause`; ending a window resumes them at once).
"""

from __future__ import annotations

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, StoreDep
from vigil.notifier.api.openapi import ACTOR_REFUSALS, MAINTENANCE_BODY
from vigil.common.click_types import MAX_ROW_ID
from vigil.notifier.api.bodies import maintenance_body
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.read_models import config_windows
from vigil.notifier.store.maintenance import Maintenance

router = APIRouter()
WindowId = Path(ge=1, le=MAX_ROW_ID)


@router.get("/api/v1/maintenance")
async def list_windows(request: Request, store: StoreDep, clock: ClockDep, all: bool = False):
    now = clock()
    windows = await run_in_threadpool(Maintenance(store.engine).windows, now, all)
    listed = [window.as_json(now) for window in windows] + config_windows(request.app.state.oncall, now, all)
    return {"windows": sorted(listed, key=lambda window: window["starts_at"])}




@router.post("/api/v1/maintenance", status_code=201, openapi_extra=MAINTENANCE_BODY)
async def add_window(request: Request, store: StoreDep, clock: ClockDep):
    now = clock()
    new = await maintenance_body(request, now)
    window = await run_in_threadpool(Maintenance(store.engine).create, new.matchers, new.starts_at, new.ends_at,
                                     new.reason, new.by, now)
    return JSONResponse(window.as_json(now), status_code=201)


@router.post("/api/v1/maintenance/{window_id}/end", responses=ACTOR_REFUSALS)
async def end_window(store: StoreDep, clock: ClockDep, window_id: int = WindowId):
    now = clock()
    before = await run_in_threadpool(Maintenance(store.engine).window, window_id)
    if before is None:
        raise Rejected(404, "not_found", f"no maintenance window {window_id}")
    if before.over_at(now):
        raise Rejected(409, "conflict", f"maintenance window {window_id} is over already")
    window = await run_in_threadpool(Maintenance(store.engine).end, window_id, now)
    return window.as_json(now)
