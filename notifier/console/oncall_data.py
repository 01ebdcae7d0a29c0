"""What the console's on-call pages show, computed from the on-call file: pure functions of the config,
a time and a zone (no clock, no request), so they are tested with a fixed moment.

- `now_on_call`: per team (or policy) and tier, who is paged now, through which schedule or as a named
  person, and until when that shift runs (its override, if one put them there).
- `schedule_view`: a schedule's final shifts over a range cut into local days of the zone asked for, each
  piece marked with the layer it comes from or as an override (with whom the override replaces), and
  the stretches with nobody on call as pieces of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from types import SimpleNamespace
from zoneinfo import ZoneInfo

from vigil.oncall.coverage import team_zone, uncovered, who
from vigil.oncall.ical import person_name
from vigil.oncall.schedules import Shift, schedule_of, schedule_zone, shifts

UNTIL_HORIZON_S = 35 * 86400.0  # how far ahead "on call until" looks; beyond it the shift "runs on"
OVERRIDE = "override"
NOBODY = ""  # the person of a gap's piece


@dataclass(frozen=True)
class OnCallPerson:
    key: str
    name: str  # display name
    schedule: str | None  # the schedule they are on call in; None: the tier names them
    until: float | None  # when that shift ends (None: always, or beyond the horizon)
    override: bool  # an override put them there


@dataclass(frozen=True)
class TierNow:
    index: int  # 0-based
    name: str
    people: tuple[OnCallPerson, ...]  # (): nobody, a coverage gap


@dataclass(frozen=True)
class TeamNow:
    team: str | None  # None: a policy no team names (a file without teams)
    title: str  # the team's display name, else its key, else `policy NAME`
    policy: str | None
    zone: str
    tiers: tuple[TierNow, ...]


def now_on_call(config, at: float) -> list[TeamNow]:
    """Who each tier of each team's policy pages at `at`, with how each person got there."""
    found = []
    for cover in who(config, at):
        team = (getattr(config, "teams", None) or {}).get(cover.team) if cover.team else None
        title = (getattr(team, "name", None) or cover.team) if cover.team else f"policy {cover.policy}"
        entries = _entries(config, cover.policy)
        tiers = tuple(TierNow(tier.index, tier.name, tuple(
            _how(config, person, entries[tier.index] if tier.index < len(entries) else (), at)
            for person in tier.people)) for tier in cover.tiers)
        found.append(TeamNow(cover.team, title, cover.policy, team_zone(config, cover.team).key, tiers))
    return found


def _entries(config, policy: str | None) -> list[tuple]:
    known = (getattr(config, "policies", None) or {}).get(policy or "")
    return [tier.notify for tier in known.tiers] if known is not None else []


def _how(config, person: str, entries, at: float) -> OnCallPerson:
    """The first entry of the tier that pages `person` at `at`: a named person, or a schedule's shift."""
    for entry in entries:
        if entry.person == person:
            return OnCallPerson(person, person_name(config, person), None, None, False)
        if entry.schedule is not None:
            current = next((shift for shift in shifts(config, entry.schedule, at, at + UNTIL_HORIZON_S)
                            if shift.start <= at and shift.person == person), None)
            if current is not None:
                until = current.end if current.end < at + UNTIL_HORIZON_S else None
                return OnCallPerson(person, person_name(config, person), entry.schedule, until, is_override(current))
    return OnCallPerson(person, person_name(config, person), None, None, False)


def is_override(shift: Shift) -> bool:
    return OVERRIDE in shift.source.split(" + ")


# --- a schedule over days --------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Part of a shift inside one local day: `begins`/`ends` are local clock times (`24:00` at midnight).
    A stretch with nobody on call (a coverage gap) is a piece too, with `person` empty and `source` "gap"."""

    person: str
    name: str
    start: float
    end: float
    begins: str
    ends: str
    source: str  # the layer's name, `override`, or both joined with ` + `
    override: bool
    replaces: tuple[str, ...]  # for an override: whom the layers had on call then (display names)


@dataclass(frozen=True)
class Day:
    day: date
    pieces: tuple[Piece, ...]  # (): nobody on call that whole day


@dataclass(frozen=True)
class ScheduleView:
    name: str
    zone: str  # the zone the days and times are in
    own_zone: str  # the schedule's own zone
    layers: tuple[str, ...]
    days: tuple[Day, ...]
    overrides: tuple[Piece, ...]  # the override shifts of the range, whole (not cut into days)


def schedule_view(config, name: str, first_day: date, days: int, zone: ZoneInfo | None = None) -> ScheduleView:
    """Schedule `name` from local midnight of `first_day` for `days` days in `zone` (default: the
    schedule's own). UnknownSchedule for a name the file does not define."""
    schedule = schedule_of(config, name)
    own = schedule_zone(config, schedule)
    zone = zone or own
    bounds = [_midnight(first_day + timedelta(days=offset), zone) for offset in range(days + 1)]
    final = shifts(config, name, bounds[0], bounds[-1])
    layered = shifts(_without_overrides(config, name, schedule), name, bounds[0], bounds[-1])
    view_days = []
    for offset in range(days):
        begin, finish = bounds[offset], bounds[offset + 1]
        inside = [shift for shift in final if shift.start < finish and shift.end > begin]
        holes = [Shift(NOBODY, hole_start, hole_end, "gap")
                 for hole_start, hole_end in uncovered([(s.start, s.end) for s in inside], begin, finish)]
        view_days.append(Day(first_day + timedelta(days=offset), tuple(
            _piece(config, shift, max(begin, shift.start), min(finish, shift.end), zone, begin, layered)
            for shift in sorted(inside + holes, key=lambda shift: shift.start))))
    overrides = tuple(_piece(config, shift, shift.start, shift.end, zone, None, layered)
                      for shift in final if is_override(shift))
    return ScheduleView(name, zone.key, own.key, tuple(schedule.layer_name(i) for i in range(len(schedule.layers))),
                        tuple(view_days), overrides)


def _midnight(day: date, zone: ZoneInfo) -> float:
    return datetime.combine(day, time(), zone).timestamp()


def _without_overrides(config, name: str, schedule) -> SimpleNamespace:
    """The same schedule with only its layers (what the rotations alone would give)."""
    return SimpleNamespace(timezone=getattr(config, "timezone", None),
                           schedules={name: schedule.model_copy(update={"overrides": ()})})


def _piece(config, shift: Shift, start: float, end: float, zone: ZoneInfo, day_start: float | None,
           layered: list[Shift]) -> Piece:
    override = is_override(shift)
    replaced = tuple(dict.fromkeys(person_name(config, other.person) for other in layered
                                   if other.start < end and other.end > start and other.person != shift.person)
                     ) if override else ()
    name = person_name(config, shift.person) if shift.person != NOBODY else "nobody on call"
    return Piece(shift.person, name, start, end, _clock(start, zone, day_start, False),
                 _clock(end, zone, day_start, True), shift.source, override, replaced)


def _clock(moment: float, zone: ZoneInfo, day_start: float | None, is_end: bool) -> str:
    """`HH:MM` within the day (an end at the next midnight is `24:00`); `YYYY-MM-DD HH:MM` without a day."""
    local = datetime.fromtimestamp(moment, zone)
    if day_start is None:
        return local.strftime("%Y-%m-%d %H:%M")
    if is_end and local.date() > datetime.fromtimestamp(day_start, zone).date():
        return "24:00"
    return local.strftime("%H:%M")

