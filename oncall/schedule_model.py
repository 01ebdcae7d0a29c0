"""The `schedules:` section of the on-call file: rotations in layers, restrictions and overrides.

A schedule is a stack of *layers*; each layer is a rotation of people (daily, weekly, monthly, or a
custom shift length) anchored at a *handoff* moment, optionally limited to *restriction* windows
(e.g. weekdays 09:00-18:00). A later layer wins wherever it has a shift; *overrides* sit on top of
every layer. Times without an offset are local to the schedule's zone (its `timezone`, else the
file's, else UTC). Computing the shifts is `schedules.py`; this module is the data and its checks.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from vigil.common.durations import EXAMPLES, parse_duration

Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[str, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def zone_named(name: str) -> ZoneInfo:
    """The IANA zone `name`; ValueError with a readable reason when there is none (a name longer than any
    zone's, which the zone database would look up as a file name too long, included)."""
    try:
        if len(name) > MAX_ZONE_NAME:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        shown = name if len(str(name)) <= 60 else f"{str(name)[:57]}..."
        raise ValueError(f"unknown time zone {shown!r} (expected an IANA name like UTC or Europe/Berlin)") from None


MAX_ZONE_NAME = 64  # the longest IANA name is 32 characters (America/Argentina/ComodRivadavia)


def _clock_time(value: object) -> str:
    # YAML 1.1 reads an unquoted 18:00 as the base-60 integer 1080: say how to write it
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time of day: quote it, like \"{value // 60:02d}:{value % 60:02d}\"")
    if not isinstance(value, str) or not _CLOCK.match(value):
        raise ValueError(f"{value!r} is not a time of day (expected \"HH:MM\", 00:00 to 24:00)")
    return value


def parse_moment(value: object) -> datetime:
    """A date and time from ISO text: naive = local time (in the schedule's zone), else its own offset."""
    if isinstance(value, datetime):
        return value
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    try:
        return datetime.fromisoformat(text) if text else _bad_moment(value)
    except ValueError:
        return _bad_moment(value)


def _bad_moment(value: object) -> datetime:
    raise ValueError(
        f"{value!r} is not a date and time (expected local time like 2026-11-02T09:00, "
        "or with an offset like 2026-11-02T09:00+08:00 or 2026-11-02T01:00Z)"
    )


def _seconds(value: object) -> float:
    if value is None:
        return value
    seconds = parse_duration(value)
    if seconds < 60 or not float(seconds).is_integer():
        raise ValueError(f"{value!r}: a shift is whole seconds, at least a minute ({EXAMPLES})")
    return seconds


ClockTime = Annotated[str, BeforeValidator(_clock_time)]
# a moment: naive = local time in the schedule's zone, else its own offset
Moment = Annotated[datetime, BeforeValidator(parse_moment)]
Seconds = Annotated[float, BeforeValidator(_seconds)]


def minutes_of(clock: str) -> int:
    """Minutes since midnight of an "HH:MM" time (24:00 is 1440)."""
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


class Restriction(_Strict):
    """The windows a layer covers: on each of `days`, from `start` to `end` (local, schedule's zone).

    An `end` at or before `start` runs past midnight into the next day (`start: "18:00", end: "09:00"`);
    `end: "24:00"` is midnight at the end of the day.
    """

    days: tuple[Weekday, ...] = Field(default=WEEKDAYS, min_length=1)
    start: ClockTime = "00:00"
    end: ClockTime = "24:00"

    @model_validator(mode="after")
    def _not_empty(self) -> "Restriction":
        if self.start == self.end or self.start == "24:00":
            raise ValueError(f"start {self.start} and end {self.end} leave an empty window")
        return self


class Override(_Strict):
    """`person` covers the schedule from `start` to `end`, whatever the layers say."""

    person: str
    start: Moment
    end: Moment
    reason: str | None = None  # why (the console asks; the file may say)
    by: str | None = None  # who made it, when made in the console (`vigil.notifier.oncall_overrides`)

    @model_validator(mode="after")
    def _ordered(self) -> "Override":
        if (self.start.tzinfo is None) == (self.end.tzinfo is None) and self.end <= self.start:
            raise ValueError(f"end {self.end.isoformat()} is not after start {self.start.isoformat()}")
        return self


class Layer(_Strict):
    """A rotation: `people` take turns, the shift starting at `handoff` being `people[0]`'s."""

    name: str | None = None
    rotation: Literal["daily", "weekly", "monthly", "custom"]
    shift: Seconds | None = None  # seconds; only (and required) with `rotation: custom`
    handoff: Moment
    people: tuple[str, ...] = Field(min_length=1)
    restrict: Restriction | None = None

    @model_validator(mode="after")
    def _shift_iff_custom(self) -> "Layer":
        if self.rotation == "custom" and self.shift is None:
            raise ValueError("a custom rotation needs `shift` (its length, like 12h)")
        if self.rotation != "custom" and self.shift is not None:
            unit = {"daily": "day", "weekly": "week", "monthly": "month"}[self.rotation]
            raise ValueError(f"`shift` is only for custom rotations (a {self.rotation} shift is one {unit})")
        return self


class Schedule(_Strict):
    """Layers of rotations (later layers win where they have a shift) and overrides on top."""

    timezone: str | None = None
    layers: tuple[Layer, ...] = Field(min_length=1)
    overrides: tuple[Override, ...] = ()
    overrides_ics: str | None = None  # an .ics file of overrides, relative to the on-call file

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str | None) -> str | None:
        if name is not None:
            zone_named(name)
        return name

    def layer_name(self, index: int) -> str:
        """The name shifts of layer `index` carry: its own, else `layer N` (1-based)."""
        return self.layers[index].name or f"layer {index + 1}"
