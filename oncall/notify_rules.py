"""Per-person notification rules: which contacts a page goes to, by priority and by the hour.

A person's `notify:` is a list of rules, the first matching one wins. A rule matches by `priorities`
(absent: all), `severities` (absent: all) and `hours`: `working`, `off` or `any`, judged in the
person's time zone against the working hours of their team (else the file's). Its `steps` name
contacts, each sent `after` a delay, or held until the next start of working hours
(`hold_until: working_hours`; at once when already inside them): a held page waits, it is never
dropped. This module is the data and the clock arithmetic on working hours.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from vigil.common.durations import parse_duration
from vigil.oncall.schedule_model import WEEKDAYS, ClockTime, Restriction, Weekday, minutes_of

Priority = Literal["P1", "P2", "P3", "P4", "P5"]
PRIORITIES: tuple[str, ...] = ("P1", "P2", "P3", "P4", "P5")
Duration = Annotated[float, BeforeValidator(parse_duration)]  # seconds; "5m", "1h30m", 90


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkingHours(Restriction):
    """On each of `days`, from `start` to `end`, local time (by default Monday to Friday, 09:00 to
    18:00). Windows are read like a schedule's restriction: an `end` at or before `start` runs past
    midnight into the next day; `end: "24:00"` is the end of the day."""

    days: tuple[Weekday, ...] = Field(default=("mon", "tue", "wed", "thu", "fri"), min_length=1)
    start: ClockTime = "09:00"
    end: ClockTime = "18:00"

    def windows(self, zone: ZoneInfo, around: float) -> list[tuple[float, float]]:
        """The working-hours windows (UNIX seconds) that start from the day before `around` to a week after."""
        today = datetime.fromtimestamp(around, zone).date()
        found = []
        for offset in range(-1, 9):
            day = today + timedelta(days=offset)
            if WEEKDAYS[day.weekday()] not in self.days:
                continue
            start, end = minutes_of(self.start), minutes_of(self.end)
            end_day = day if end > start else day + timedelta(days=1)
            found.append((_local(day, start, zone), _local(end_day, end, zone)))
        return found


def _local(day: date, minutes: int, zone: ZoneInfo) -> float:
    """UNIX seconds of `minutes` after midnight of `day` in `zone` (24:00 is the next midnight)."""
    day, minutes = (day + timedelta(days=1), 0) if minutes >= 1440 else (day, minutes)
    moment = datetime.combine(day, time(minutes // 60, minutes % 60), tzinfo=zone)
    return moment.timestamp()


def in_working_hours(hours: WorkingHours, zone: ZoneInfo, at: float) -> bool:
    """Whether `at` falls inside `hours` in `zone`."""
    return any(start <= at < end for start, end in hours.windows(zone, at))


def next_working_start(hours: WorkingHours, zone: ZoneInfo, at: float) -> float:
    """`at` itself when inside `hours`, else the next start of working hours after it."""
    windows = hours.windows(zone, at)
    if any(start <= at < end for start, end in windows):
        return at
    return min(start for start, _ in windows if start > at)


def _hours(value: object) -> object:
    # YAML 1.1 reads an unquoted `off` as false: that is the `off` the author wrote
    return "off" if value is False else value


Hours = Annotated[Literal["working", "off", "any"], BeforeValidator(_hours)]


class NotifyStep(_Strict):
    """Send to contact `contact` `after` seconds (or, with `hold_until`, at the next working hours)."""

    contact: str
    after: Duration = 0.0
    hold_until: Literal["working_hours"] | None = None


class NotifyRule(_Strict):
    """Pages of these `priorities` / `severities`, at these `hours`, go out in these `steps`."""

    priorities: tuple[Priority, ...] | None = None
    severities: tuple[str, ...] | None = None
    hours: Hours = "any"
    steps: tuple[NotifyStep, ...] = Field(min_length=1)

    def matches(self, priority: str, severity: str | None, working: bool) -> bool:
        """Whether a page of `priority`/`severity` is for this rule, `working` saying if it is working hours."""
        if self.priorities is not None and priority not in self.priorities:
            return False
        if self.severities is not None and severity not in self.severities:
            return False
        return self.hours == "any" or (self.hours == "working") == working


def step_due(step: NotifyStep, hours: WorkingHours, zone: ZoneInfo, at: float) -> float:
    """When `step` of a page planned at `at` is due: `at + after`, held to working hours if it says so."""
    due = at + step.after
    return next_working_start(hours, zone, due) if step.hold_until == "working_hours" else due
