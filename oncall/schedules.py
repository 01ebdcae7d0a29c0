"""Who is on call in a schedule, and when: the final shifts after layers, restrictions and overrides.

Each layer's rotation is written as an iCalendar event whose RRULE recurs at every handoff (daily,
weekly or monthly in the schedule's zone, so a 09:00 handoff stays 09:00 local across DST changes;
custom shift lengths recur in exact seconds), and `recurring_ical_events` expands it; shift k from the
handoff belongs to `people[k mod len(people)]`. A layer starts at its handoff: before it, the layer has
nobody (so a rota that starts next week leaves this week to the other layers, or to a coverage gap). A restriction is a weekly event per window, expanded the same way, and a layer covers only
inside its windows. Later layers win wherever they have a shift; overrides go on top of everything.
"""

from __future__ import annotations

import calendar
import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events

from vigil.oncall.schedule_model import (
    WEEKDAYS, Layer, Override, Restriction, Schedule, minutes_of, parse_moment, zone_named,
)

_PERIOD_SLACK = {"daily": timedelta(days=2), "weekly": timedelta(days=8), "monthly": timedelta(days=33)}


@dataclass(frozen=True)
class Shift:
    """`person` is on call from `start` to `end` (UNIX seconds); `source` is the layer name or "override"."""

    person: str
    start: float
    end: float
    source: str


class UnknownSchedule(LookupError):
    """A schedule name the on-call file does not define."""

    def __init__(self, name: str, known: list[str]):
        self.name = name
        known_text = ", ".join(known) if known else "none defined"
        super().__init__(f"unknown schedule {name!r} (known: {known_text})")


def schedule_of(config, name: str) -> Schedule:
    """The schedule `name` of `config`; UnknownSchedule if there is none."""
    schedules = getattr(config, "schedules", None) or {}
    if name not in schedules:
        raise UnknownSchedule(name, sorted(schedules))
    return schedules[name]


def schedule_zone(config, schedule: Schedule) -> ZoneInfo:
    """The schedule's zone: its own `timezone`, else the file's `timezone`, else UTC."""
    return zone_named(schedule.timezone or getattr(config, "timezone", None) or "UTC")


def to_unix(moment: datetime, zone: ZoneInfo) -> float:
    """UNIX seconds of `moment`; a naive moment is local time in `zone`."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).timestamp()


LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc).timestamp()  # times asked about stay before this


def moment_at(text: str, zone: ZoneInfo, now: float) -> float:
    """UNIX seconds from what a user types: `now`, UNIX seconds, an ISO time with an offset, or a local
    ISO time in `zone`; ValueError (saying which forms) for anything else or outside 1970-2200."""
    text = str(text).strip()
    try:
        if text.lower() == "now":
            return now
        try:
            found = float(text)
        except ValueError:
            found = to_unix(parse_moment(text), zone)
    except (ValueError, OverflowError, OSError):
        found = math.nan
    if not 0 <= found < LATEST:
        raise ValueError(f"{text!r} is not a time (now, UNIX seconds, local time like 2026-11-28T03:00, "
                         "or with an offset like 2026-11-28T03:00+08:00 or …Z; years 1970 to 2199)")
    return found


def shifts(config, schedule_name: str, start: float, end: float) -> list[Shift]:
    """The final shifts of `schedule_name` between `start` and `end` (clipped to them), sorted."""
    schedule = schedule_of(config, schedule_name)
    zone = schedule_zone(config, schedule)
    timeline: list[Shift] = []
    if end <= start:
        return timeline
    for index, layer in enumerate(schedule.layers):
        pieces = _rotation(layer, schedule.layer_name(index), zone, start, end)
        if layer.restrict is not None:
            pieces = _restricted(pieces, _windows(layer.restrict, zone, start, end))
        timeline = _paint(timeline, pieces)
    for override in schedule.overrides:
        piece = Shift(override.person, max(start, to_unix(override.start, zone)),
                      min(end, to_unix(override.end, zone)), "override")
        if piece.start < piece.end:
            timeline = _paint(timeline, [piece])
    return _merged(timeline)


def with_overrides(config, added: dict[str, tuple[Override, ...]]):
    """`config` with the overrides `added` (by schedule name) on top of each schedule's own: where they
    overlap one of the file's, they win. A name the config has no schedule of is left out."""
    if not added:
        return config
    schedules = {name: schedule.model_copy(update={"overrides": schedule.overrides + tuple(added.get(name, ()))})
                 if added.get(name) else schedule for name, schedule in config.schedules.items()}
    return config.model_copy(update={"schedules": schedules})


def on_call(config, schedule_name: str, at: float) -> list[str]:
    """Who is on call in `schedule_name` at `at` (UNIX seconds): one person, or nobody ([])."""
    return [shift.person for shift in shifts(config, schedule_name, at, at + 1.0) if shift.start <= at]


# --- rotations -------------------------------------------------------------------------------------


def _rotation(layer: Layer, source: str, zone: ZoneInfo, start: float, end: float) -> list[Shift]:
    if layer.rotation == "custom":
        handoffs, first = _custom_handoffs(layer, zone, start, end)
    else:
        handoffs, first = _local_handoffs(layer, zone, start, end)
    people = layer.people
    pieces = []
    for offset, (begin, finish) in enumerate(zip(handoffs, handoffs[1:])):
        begin, finish = max(begin, start), min(finish, end)
        if begin < finish:
            pieces.append(Shift(people[(first + offset) % len(people)], begin, finish, source))
    return pieces


def _local_handoffs(layer: Layer, zone: ZoneInfo, start: float, end: float) -> tuple[list[float], int]:
    """Handoff moments of a daily/weekly/monthly rotation around [start, end], and the index of the first."""
    handoff = _local(layer.handoff, zone)
    window_start = datetime.fromtimestamp(start, zone).replace(tzinfo=None)
    first = max(0, _steps_between(handoff, window_start, layer.rotation) - 1)
    anchor = _step(handoff, layer.rotation, first).replace(tzinfo=zone)
    rule: dict = {"freq": layer.rotation, "interval": 1}  # DAILY, WEEKLY, MONTHLY
    if layer.rotation == "monthly" and handoff.day > 28:  # the 31st is the last day in shorter months
        rule.update(bymonthday=list(range(28, handoff.day + 1)), bysetpos=-1)
    until = datetime.fromtimestamp(end, zone) + _PERIOD_SLACK[layer.rotation]
    return _expand(anchor, rule, anchor, until), first


def _custom_handoffs(layer: Layer, zone: ZoneInfo, start: float, end: float) -> tuple[list[float], int]:
    """Handoff moments of a custom rotation: every `shift` seconds of real time from the handoff."""
    handoff = to_unix(layer.handoff, zone)
    first = max(0, math.floor((start - handoff) / layer.shift))
    anchor = datetime.fromtimestamp(handoff + first * layer.shift, timezone.utc)
    shift = int(layer.shift)  # whole seconds (the model says so)
    for freq, unit in (("daily", 86400), ("hourly", 3600), ("minutely", 60), ("secondly", 1)):
        if shift % unit == 0:
            rule = {"freq": freq, "interval": shift // unit}
            break
    until = datetime.fromtimestamp(end + layer.shift + 1, timezone.utc)
    return _expand(anchor, rule, anchor, until), first


def _expand(dtstart: datetime, rule: dict, since: datetime, until: datetime) -> list[float]:
    """The start times (UNIX seconds) of a recurring event between `since` and `until`, in order."""
    event = icalendar.Event()
    event.add("uid", "handoff")
    event.add("dtstart", dtstart)
    event.add("rrule", rule)
    return _occurrences(event, since, until)


def _occurrences(event: icalendar.Event, since: datetime, until: datetime) -> list[float]:
    calendar_ = icalendar.Calendar()
    calendar_.add_component(event)
    found = recurring_ical_events.of(calendar_).between(since, until)
    return sorted(occurrence["DTSTART"].dt.timestamp() for occurrence in found)


def _local(moment: datetime, zone: ZoneInfo) -> datetime:
    """`moment` as naive local time in `zone` (naive moments already are)."""
    return moment.astimezone(zone).replace(tzinfo=None) if moment.tzinfo else moment


def _steps_between(handoff: datetime, moment: datetime, rotation: str) -> int:
    """How many whole rotation periods (about) lie from `handoff` to `moment`."""
    if rotation == "monthly":
        return (moment.year - handoff.year) * 12 + moment.month - handoff.month - (moment.day < handoff.day)
    days = (moment.date() - handoff.date()).days
    return days if rotation == "daily" else days // 7


def _step(handoff: datetime, rotation: str, count: int) -> datetime:
    """The handoff `count` periods after (or before) `handoff`, local; months clamp to their last day."""
    if rotation == "daily":
        return handoff + timedelta(days=count)
    if rotation == "weekly":
        return handoff + timedelta(weeks=count)
    months = handoff.year * 12 + handoff.month - 1 + count
    year, month = divmod(months, 12)
    day = min(handoff.day, calendar.monthrange(year, month + 1)[1])
    return handoff.replace(year=year, month=month + 1, day=day)


# --- restrictions ----------------------------------------------------------------------------------


def _windows(restrict: Restriction, zone: ZoneInfo, start: float, end: float) -> list[tuple[float, float]]:
    """The restriction's windows overlapping [start, end], as UNIX seconds, sorted and merged."""
    begin, finish = minutes_of(restrict.start), minutes_of(restrict.end)
    length = finish - begin if finish > begin else finish + 1440 - begin
    day = datetime.fromtimestamp(start, zone).date() - timedelta(days=1)
    while WEEKDAYS[day.weekday()] not in restrict.days:
        day -= timedelta(days=1)
    first = datetime.combine(day, datetime.min.time(), zone) + timedelta(minutes=begin)
    event = icalendar.Event()
    event.add("uid", "restriction")
    event.add("dtstart", first)
    event.add("duration", timedelta(minutes=length))
    byday = [name[:2].upper() for name in WEEKDAYS if name in restrict.days]
    event.add("rrule", {"freq": "weekly", "byday": byday})
    windows: list[tuple[float, float]] = []
    for opened in _occurrences(event, first, datetime.fromtimestamp(end, zone)):
        closes = _wall_clock_end(opened, zone, length)
        if closes > start:
            if windows and opened <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(windows[-1][1], closes))
            else:
                windows.append((opened, closes))
    return windows


def _wall_clock_end(opened: float, zone: ZoneInfo, minutes: int) -> float:
    """When a window that opened at `opened` closes: `minutes` later on the local wall clock."""
    return (datetime.fromtimestamp(opened, zone) + timedelta(minutes=minutes)).timestamp()


def _restricted(pieces: list[Shift], windows: list[tuple[float, float]]) -> list[Shift]:
    kept = []
    for piece in pieces:
        for opened, closes in windows:
            begin, finish = max(piece.start, opened), min(piece.end, closes)
            if begin < finish:
                kept.append(Shift(piece.person, begin, finish, piece.source))
    return kept


# --- layering --------------------------------------------------------------------------------------


def _paint(timeline: list[Shift], pieces: list[Shift]) -> list[Shift]:
    """`pieces` (sorted, disjoint) on top of `timeline` (sorted, disjoint): they win where they overlap."""
    kept: list[Shift] = []
    cursor = 0
    for old in timeline:
        begin = old.start
        while cursor < len(pieces) and pieces[cursor].end <= begin:
            cursor += 1
        probe = cursor
        while probe < len(pieces) and pieces[probe].start < old.end:
            if pieces[probe].start > begin:
                kept.append(Shift(old.person, begin, pieces[probe].start, old.source))
            begin = max(begin, pieces[probe].end)
            probe += 1
        if begin < old.end:
            kept.append(Shift(old.person, begin, old.end, old.source))
    return sorted(kept + list(pieces), key=lambda shift: shift.start)


def _merged(timeline: list[Shift]) -> list[Shift]:
    """Adjacent pieces of one person joined (their sources listed once each, in order)."""
    merged: list[Shift] = []
    for shift in timeline:
        last = merged[-1] if merged else None
        if last is not None and last.person == shift.person and last.end == shift.start:
            sources = last.source.split(" + ")
            source = last.source if shift.source in sources else f"{last.source} + {shift.source}"
            merged[-1] = Shift(last.person, last.start, shift.end, source)
        else:
            merged.append(shift)
    return merged
