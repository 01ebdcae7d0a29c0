"""Console pages of the on-call file: `/console/oncall` (who each tier of each team pages now, or at
`?at=`) and `/console/schedules` (each schedule's shifts over the coming weeks, day by day, overrides
marked), both computed by the on-call engine (`oncall_data.py`) from the file the notifier runs with.

Times show in the zone the viewer picks (`?tz=`: an IANA name, `mine` for their own zone from the
on-call file, empty for each team's or schedule's own); the choice is kept in a cookie for the next visit.
A time, zone, team or range that cannot be used answers 4xx with the page and the reason.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.console.auth import ConsoleUser
from vigil.notifier.console.oncall_data import now_on_call, schedule_view
from vigil.notifier.console.render import MINE, ZONE_COOKIE, render
from vigil.oncall.coverage import team_schedules
from vigil.oncall.ical import person_name
from vigil.oncall.plan import person_zone
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import moment_at

router = APIRouter(prefix="/console", include_in_schema=False)

DEFAULT_WEEKS, MAX_WEEKS = 2, 8
Text = Annotated[str | None, Query(max_length=64)]


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@router.get("/oncall")
async def oncall_page(request: Request, user: ConsoleUser, at: Text = None, tz: Text = None):
    config = request.app.state.oncall
    now = request.app.state.clock()
    problems, status, teams, moment = [], 200, [], now
    try:
        zone, choice = viewer_zone(request, config, user, tz)
        moment = _moment(at, zone or zone_named(config.timezone), now, "at")
        teams = await run_in_threadpool(now_on_call, config, moment)
    except Refused as exc:
        problems, status, zone, choice = [str(exc)], exc.status, None, tz or ""
    page = render(request, "oncall.html", status=status, teams=teams, at=moment, at_text=at or "",
                  live=at is None, problems=problems, **zone_context(config, user, choice),
                  shown=lambda seconds, own: shown(seconds, zone or zone_named(own)),
                  zone_of=lambda own: (zone or zone_named(own)).key)
    return remember_zone(request, page, tz, status)


@router.get("/schedules")
async def schedules_page(request: Request, user: ConsoleUser, team: Annotated[str | None, Query(max_length=200)] = None,
                         schedule: Annotated[str | None, Query(max_length=200)] = None,
                         from_: Annotated[str | None, Query(alias="from", max_length=64)] = None,
                         weeks: Text = None, tz: Text = None):
    config = request.app.state.oncall
    now = request.app.state.clock()
    problems, status, views, first, count = [], 200, [], None, DEFAULT_WEEKS
    try:
        zone, choice = viewer_zone(request, config, user, tz)
        names = _schedules(config, team or None, schedule or None)
        count = _weeks(weeks)
        first = _first_day(from_, zone or zone_named(config.timezone), now)
        views = [await run_in_threadpool(schedule_view, config, name, first, 7 * count, zone) for name in names]
    except Refused as exc:
        problems, status, choice = [str(exc)], exc.status, tz or ""
    today = {view.name: datetime.fromtimestamp(now, ZoneInfo(view.zone)).date() for view in views}
    since = _midnight_before(first, views, now)
    made = {view.name: await run_in_threadpool(request.app.state.store.schedule_overrides.of_schedule, view.name, since)
            for view in views}
    names = {key: person_name(config, key) for key in {*config.people, *(o.created_by for found in made.values()
                                                                          for o in found),
                                                     *(o.cancelled_by for found in made.values() for o in found)} if key}
    page = render(request, "schedules.html", status=status, views=views, today=today, problems=problems,
                  console_overrides={name: found for name, found in made.items() if found}, names=names,
                  is_person=user in config.people, done=request.query_params.get("done"),
                  teams=sorted(config.teams), team=team or "", schedule=schedule or "",
                  schedule_names=list(config.schedules), weeks=count, week_choices=range(1, MAX_WEEKS + 1),
                  from_text=from_ or "", first=first, **zone_context(config, user, choice))
    return remember_zone(request, page, tz, status)


# --- what the query asks for ------------------------------------------------------------------------


def viewer_zone(request: Request, config, user: str, tz: str | None) -> tuple[ZoneInfo | None, str]:
    """The zone to show times in (None: each team's or schedule's own) and the choice it came from."""
    choice = (tz if tz is not None else request.cookies.get(ZONE_COOKIE, "")).strip()
    if choice == "":
        return None, ""
    if choice == MINE:
        return (person_zone(config, user) if user in config.people else zone_named(config.timezone)), MINE
    try:
        return zone_named(choice), choice
    except ValueError as exc:
        raise Refused(422, f"time zone: {exc}") from None


def zone_context(config, user: str, choice: str) -> dict:
    mine = person_zone(config, user).key if user in config.people else None
    known = {"UTC", config.timezone, *(t.timezone for t in config.teams.values() if t.timezone),
             *(s.timezone for s in config.schedules.values() if s.timezone),
             *(p.timezone for p in config.people.values() if p.timezone)}
    return dict(zone_choice=choice, my_zone=mine, zone_names=sorted(known - {None}))


def _moment(text: str | None, zone: ZoneInfo, now: float, name: str) -> float:
    try:
        return now if not text else moment_at(text, zone, now)
    except ValueError as exc:
        raise Refused(422, f"{name}: {exc}") from None


def _schedules(config, team: str | None, schedule: str | None) -> list[str]:
    if team is not None and team not in config.teams:
        raise Refused(404, f"unknown team {team!r} (known: {', '.join(sorted(config.teams)) or 'none defined'})")
    if schedule is not None and schedule not in config.schedules:
        raise Refused(404, f"unknown schedule {schedule!r} (known: {', '.join(config.schedules) or 'none defined'})")
    return [schedule] if schedule is not None else team_schedules(config, team)


def _weeks(text: str | None) -> int:
    if not text:
        return DEFAULT_WEEKS
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_WEEKS):
        raise Refused(422, f"weeks: {text!r} is not a number of weeks from 1 to {MAX_WEEKS}")
    return int(text)


def _first_day(text: str | None, zone: ZoneInfo, now: float) -> date:
    """The first day shown: the day of `from` (a date like 2026-11-25, or any time the on-call CLIs take),
    else today, in `zone`."""
    return datetime.fromtimestamp(_moment(text, zone, now, "from"), zone).date()


def _midnight_before(first: date | None, views, now: float) -> float:
    """The start of the range shown (the first day's midnight in the first schedule's zone), else now."""
    if first is None or not views:
        return now
    return datetime.combine(first, datetime.min.time(), ZoneInfo(views[0].zone)).timestamp()


def shown(seconds: float | None, zone: ZoneInfo) -> str:
    return "" if seconds is None else datetime.fromtimestamp(seconds, zone).strftime("%a %d %b %H:%M")


def remember_zone(request: Request, page, tz: str | None, status: int):
    """Keep the zone asked for (a page that showed with it) for the viewer's next visit: a cookie, like the
    session's Secure behind https."""
    if tz is not None and status == 200:
        secure = (request.app.state.settings.public_url or "").startswith("https://")
        page.set_cookie(ZONE_COOKIE, tz.strip(), max_age=int(timedelta(days=365).total_seconds()), path="/console",
                        httponly=True, samesite="lax", secure=secure)
    return page

