"""Console pages of maintenance windows (the same store and rules as `/api/v1/maintenance` and
`vigil maintenance`): while a window lasts, pages of incidents whose labels match it are held.

- `GET /console/maintenance`: active, upcoming and ended windows (those of the on-call file too), and
  the form to add one.
- `POST /console/maintenance` (CSRF-checked form): add a window made by the logged-in user; a form the
  API would refuse comes back as the page with every reason (422) and the values typed.
- `POST /console/maintenance/{id}/end` (CSRF-checked): end it now (one not begun is cancelled); 404 for
  no such window, 409 for one over already.
Times show, and are read, in the viewer's zone choice (`?tz=`, as on the on-call pages), else the file's.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from vigil.notifier.read_models import config_windows
from vigil.common.click_types import MAX_ROW_ID
from vigil.notifier.console.auth import CheckedForm, ConsoleUser
from vigil.notifier.console.maintenance_form import FormProblems, grouped, window_from_form
from vigil.notifier.console.oncall_views import Refused, remember_zone, shown, viewer_zone, zone_context
from vigil.notifier.console.render import render, seconds_of
from vigil.notifier.store.maintenance import Maintenance
from vigil.oncall.schedule_model import zone_named

router = APIRouter(prefix="/console", include_in_schema=False)
SHOWN_ENDED = 30
DURATIONS = ("30m", "1h", "2h", "4h", "8h", "1d")


@router.get("/maintenance")
async def maintenance_page(request: Request, user: ConsoleUser, created: str | None = None, ended: str | None = None):
    notice = (f"Maintenance window #{created} added." if created and created.isdigit() else
              f"Maintenance window #{ended} ended." if ended and ended.isdigit() else None)
    return await _page(request, user, notice=notice)


@router.post("/maintenance")
async def add_window(request: Request, user: ConsoleUser, form: CheckedForm):
    state = request.app.state
    now = state.clock()
    try:
        zone = zone_named(str(form.get("tz") or state.oncall.timezone))
        new = window_from_form(form, zone, now, user)
    except (FormProblems, ValueError) as exc:
        problems = exc.problems if isinstance(exc, FormProblems) else [f"time zone: {exc}"]
        return await _page(request, user, status=422, problems=problems, typed=dict(form))
    window = await run_in_threadpool(Maintenance(state.store.engine).create, new.matchers, new.starts_at,
                                     new.ends_at, new.reason, new.by, now)
    return RedirectResponse(f"/console/maintenance?created={window.id}", status_code=303)


@router.post("/maintenance/{window_id}/end")
async def end_window(request: Request, window_id: str, user: ConsoleUser, _form: CheckedForm):
    state = request.app.state
    now = state.clock()
    store = Maintenance(state.store.engine)
    known = window_id.isascii() and window_id.isdigit() and 0 < int(window_id) <= MAX_ROW_ID
    before = await run_in_threadpool(store.window, int(window_id)) if known else None
    if before is None:
        return await _page(request, user, status=404, problems=[f"There is no maintenance window #{window_id}."])
    if before.over_at(now):
        return await _page(request, user, status=409, problems=[f"Maintenance window #{window_id} is over already."])
    await run_in_threadpool(store.end, before.id, now)
    return RedirectResponse(f"/console/maintenance?ended={before.id}", status_code=303)


async def _page(request: Request, user: str, status: int = 200, problems: list[str] | None = None,
                typed: dict | None = None, notice: str | None = None):
    state = request.app.state
    now = state.clock()
    config = state.oncall
    problems = list(problems or [])
    try:
        zone, choice = viewer_zone(request, config, user, request.query_params.get("tz"))
    except Refused as exc:
        problems.append(str(exc))
        status, zone, choice = max(status, exc.status), None, ""
    zone = zone or zone_named(config.timezone)
    stored = await run_in_threadpool(Maintenance(state.store.engine).windows, now, True)
    groups = grouped([w.as_json(now) for w in stored] + config_windows(config, now, True), now)
    groups["ended"] = groups["ended"][:SHOWN_ENDED]
    page = render(request, "maintenance.html", status=status, groups=groups, problems=problems, notice=notice,
                  typed=typed or {}, zone=zone.key, durations=DURATIONS,
                  local=lambda moment: shown(seconds_of(moment), zone), **zone_context(config, user, choice))
    return remember_zone(request, page, request.query_params.get("tz"), status)
