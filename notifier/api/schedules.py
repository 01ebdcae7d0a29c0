"""Who is on call, and the shifts as calendars: `GET /api/v1/oncall`, `GET /api/v1/schedules/{name}.ics`
and `GET /api/v1/people/{name}.ics`, computed from the on-call file the notifier runs with.

Times (`at`, `from`, `to`) are UNIX seconds, an ISO time with an offset, or a local ISO time (in the
team's zone for `at`, the schedule's for a schedule's calendar, the file's for a person's); a calendar
covers a week back and eight weeks ahead unless asked otherwise, at most a year and a day.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, QueryName
from vigil.notifier.core.rejected import Rejected
from vigil.oncall.coverage import team_zone, who
from vigil.oncall.ical import person_calendar, schedule_calendar
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import moment_at, schedule_zone

router = APIRouter()

DAY_S = 86400.0
MAX_RANGE_S = 367 * DAY_S
ICS_MEDIA_TYPE = "text/calendar; charset=utf-8"
_ICS_RESPONSES = {
    200: {"description": "The shifts as an iCalendar file.", "content": {"text/calendar": {"schema": {"type": "string"}}}},
    404: {"description": "No such schedule or person in the on-call file."},
    422: {"description": "A time or range that cannot be read."},
}
TimeText = Annotated[str | None, Query(max_length=64, description="UNIX seconds or an ISO time; local without an offset")]


@router.get("/api/v1/oncall", responses={404: {"description": "No such team."}, 422: {"description": "Bad `at`."}})
async def oncall_now(request: Request, clock: ClockDep, team: Annotated[QueryName | None, Query()] = None,
                     at: TimeText = None):
    """Who each tier of each team's policy pages at `at` (default now); `team` limits it to one."""
    config = request.app.state.oncall
    if team is not None and team not in config.teams:
        raise Rejected(404, "unknown_team", f"unknown team {team!r}")
    now = clock()
    names = [team] if team is not None else list(config.teams) or [None]
    found = []
    for name in names:
        moment = _time(at, team_zone(config, name), now, "at")
        found += [{**asdict(cover), "at": moment} for cover in await run_in_threadpool(who, config, moment, name)]
    return {"teams": found}


@router.get("/api/v1/schedules/{name}.ics", response_class=Response, responses=_ICS_RESPONSES)
async def schedule_ics(name: str, request: Request, clock: ClockDep,
                       from_: Annotated[TimeText, Query(alias="from")] = None, to: TimeText = None):
    """The final shifts of schedule `name` as an iCalendar file (one event per shift)."""
    config = request.app.state.oncall
    if name not in config.schedules:
        raise Rejected(404, "unknown_schedule", f"unknown schedule {name!r}")
    zone = schedule_zone(config, config.schedules[name])
    start, end, now = _range(from_, to, zone, clock())
    data = await run_in_threadpool(schedule_calendar, config, name, start, end, now)
    return Response(data, media_type=ICS_MEDIA_TYPE)


@router.get("/api/v1/people/{name}.ics", response_class=Response, responses=_ICS_RESPONSES)
async def person_ics(name: str, request: Request, clock: ClockDep,
                     from_: Annotated[TimeText, Query(alias="from")] = None, to: TimeText = None):
    """Person `name`'s own shifts in every schedule as an iCalendar file."""
    config = request.app.state.oncall
    if name not in config.people:
        raise Rejected(404, "unknown_person", f"unknown person {name!r}")
    start, end, now = _range(from_, to, zone_named(config.timezone), clock())
    data = await run_in_threadpool(person_calendar, config, name, start, end, now)
    return Response(data, media_type=ICS_MEDIA_TYPE)


def _range(from_: str | None, to: str | None, zone, now: float) -> tuple[float, float, float]:
    start = _time(from_, zone, now, "from") if from_ is not None else max(0.0, now - 7 * DAY_S)
    end = _time(to, zone, now, "to") if to is not None else start + 63 * DAY_S
    if not start < end <= start + MAX_RANGE_S:
        raise Rejected(422, "invalid_range", "`to` must be after `from`, at most 367 days later")
    return start, end, now


def _time(text: str | None, zone, now: float, name: str) -> float:
    try:
        return now if text is None else moment_at(text, zone, now)
    except ValueError as exc:
        raise Rejected(422, "invalid_time", f"{name}: {exc}") from None
