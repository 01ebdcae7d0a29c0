"""Schedule overrides from the console: "cover me" (someone takes my shift) and "take this shift".

- `GET /console/schedules/NAME/override?mode=cover|take&start=&end=`: the form, filled in from the shift
  the viewer picked on the schedules page (times in the schedule's zone);
- `POST /console/schedules/NAME/overrides` (person, from, to, reason): stores the override
  (`store/schedule_overrides.py`) with who made it, when and why; from then on it is part of the
  schedule everywhere the notifier reads it (who is paged, the schedules page, iCal feeds: 
  `notifier/oncall_overrides.py`);
- `POST /console/schedules/NAME/overrides/ID/cancel`: undoes one (the row stays, cancelled).

A mistake (an unknown person, an end before the start or in the past, more than 31 days, no reason)
answers 422 with the form, what was typed and every reason at once.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.concurrency import run_in_threadpool

from vigil.notifier.console.auth import CheckedForm, ConsoleUser
from vigil.notifier.console.render import render
from vigil.oncall.ical import person_name
from vigil.oncall.schedules import moment_at, on_call, schedule_of, schedule_zone, UnknownSchedule

router = APIRouter(prefix="/console", include_in_schema=False)
MAX_SPAN_S = 31 * 86400.0
MAX_REASON = 500


@router.get("/schedules/{name}/override")
async def override_form(request: Request, user: ConsoleUser, name: str, mode: str = "cover",
                        start: float | None = None, end: float | None = None):
    config = request.app.state.oncall
    try:
        zone = schedule_zone(config, schedule_of(config, name))
    except UnknownSchedule as exc:
        return render(request, "error.html", status=404, title="No such schedule", message=str(exc))
    now = request.app.state.clock()
    start = start if _plausible(start) else now
    end = end if _plausible(end) and end > start else start + 3600.0

    def local(moment: float) -> str:
        return datetime.fromtimestamp(moment, zone).strftime("%Y-%m-%dT%H:%M")
    covered = on_call(config, name, start)
    values = {"person": user if mode == "take" else "", "from": local(max(start, now)), "to": local(end),
              "reason": "", "replaces": covered[0] if covered else ""}
    return _form(request, name, zone.key, mode, values, [], 200)


@router.post("/schedules/{name}/overrides")
async def make_override(request: Request, user: ConsoleUser, name: str, form: CheckedForm):
    state = request.app.state
    config = state.oncall
    try:
        zone = schedule_zone(config, schedule_of(config, name))
    except UnknownSchedule as exc:
        return render(request, "error.html", status=404, title="No such schedule", message=str(exc))
    values = {key: str(form.get(key, "")).strip() for key in ("person", "from", "to", "reason", "replaces", "mode")}
    now = state.clock()
    problems, start, end = [], None, None
    if values["person"] not in config.people:
        problems.append(f"who: {values['person']!r} is not a person of the on-call file" if values["person"]
                        else "who: pick the person who covers the shift")
    for key in ("from", "to"):
        try:
            moment = moment_at(values[key], zone, now)
        except ValueError as exc:
            problems.append(f"{key}: {exc}")
            continue
        start, end = (moment, end) if key == "from" else (start, moment)
    if start is not None and end is not None:
        if end <= start:
            problems.append("to: the override ends before it starts")
        elif end <= now:
            problems.append("to: the override would be over already")
        elif end - start > MAX_SPAN_S:
            problems.append("to: an override is at most 31 days; change the rotation for longer")
    if not values["reason"]:
        problems.append("why: say why (the schedule's history shows it, and the person covering sees it)")
    elif len(values["reason"]) > MAX_REASON:
        problems.append(f"why: at most {MAX_REASON} characters")
    if problems:
        return _form(request, name, zone.key, values["mode"] or "cover", values, problems, 422)
    replaces = values["replaces"] if values["replaces"] in config.people else None
    await run_in_threadpool(state.store.schedule_overrides.add, name, values["person"], max(start, now), end,
                            replaces, values["reason"], user, now)
    config.changed()
    return RedirectResponse(f"/console/schedules?schedule={name}&done=override", status_code=303)


@router.post("/schedules/{name}/overrides/{override_id}/cancel")
async def cancel_override(request: Request, user: ConsoleUser, name: str, override_id: int, _form: CheckedForm):
    state = request.app.state
    cancelled = await run_in_threadpool(state.store.schedule_overrides.cancel, name, override_id, user, state.clock())
    if cancelled is None:
        return render(request, "error.html", status=404, title="No such override",
                      message=f"schedule {name} has no override {override_id}")
    state.oncall.changed()
    return RedirectResponse(f"/console/schedules?schedule={name}&done=cancelled", status_code=303)


def _plausible(moment: float | None) -> bool:
    """A UNIX time a shift can have (the schedules page links with its shifts' own)."""
    return moment is not None and 0 <= moment < 7e9


def _form(request: Request, name: str, zone: str, mode: str, values: dict, problems: list[str], status: int):
    config = request.app.state.oncall
    people = sorted((key, person_name(config, key)) for key in config.people)
    return render(request, "override.html", status=status, schedule=name, zone=zone, mode=mode, values=values,
                  problems=problems, people=people,
                  replaces_name=person_name(config, values["replaces"]) if values.get("replaces") else "")
