"""iCalendar export of shifts (a schedule's, a person's) and import of overrides from an `.ics` file.

Export: one VEVENT per final shift (`schedules.shifts`), in UTC, with a UID that stays the same for
the same shift so calendar apps update rather than duplicate. Import: every event (recurring ones
expanded) becomes an override for the person it names: an ATTENDEE `mailto:` equal to a person's
`email`, else a SUMMARY equal to a person's key or name. Events that match nobody are all reported
at once, each named by its UID and summary.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime, timezone
from pathlib import Path

import icalendar
import recurring_ical_events

from vigil.oncall.schedule_model import Override
from vigil.oncall.schedules import Shift, schedule_of, shifts

_PRODID = "-//vigil//on-call schedules//EN"
_IMPORT_SINCE = datetime(1970, 1, 1, tzinfo=timezone.utc)
_IMPORT_UNTIL = datetime(2100, 1, 1, tzinfo=timezone.utc)


class OverridesIcsError(ValueError):
    """An overrides calendar that cannot be read, or whose events name nobody; `problems` lists each,
    and `located` the same as (key path in the on-call file, message) when the file named the calendar."""

    def __init__(self, problems: list[str], located: list[tuple[tuple, str]] = ()):
        self.problems = problems
        self.located = list(located)
        super().__init__("\n".join(problems))


def person_name(config, person: str) -> str:
    """The display name of `person` (their `name`, else their key)."""
    known = (getattr(config, "people", None) or {}).get(person)
    return getattr(known, "name", None) or person


def schedule_calendar(config, schedule: str, start: float, end: float, stamp: float | None = None) -> bytes:
    """The final shifts of `schedule` between `start` and `end` as an iCalendar file.

    `stamp` (UNIX seconds) is each event's DTSTAMP, the time the calendar was made; default `start`.
    """
    schedule_of(config, schedule)  # UnknownSchedule before anything is built
    calendar = _calendar(f"On call: {schedule}")
    for shift in shifts(config, schedule, start, end):
        calendar.add_component(_event(config, schedule, shift, start if stamp is None else stamp))
    return calendar.to_ical()


def person_calendar(config, person: str, start: float, end: float, stamp: float | None = None) -> bytes:
    """`person`'s own shifts across every schedule between `start` and `end` as an iCalendar file."""
    calendar = _calendar(f"On call: {person_name(config, person)}")
    found = [
        (shift.start, name, shift)
        for name in sorted(getattr(config, "schedules", None) or {})
        for shift in shifts(config, name, start, end)
        if shift.person == person
    ]
    for _, name, shift in sorted(found, key=lambda item: item[:2]):
        calendar.add_component(_event(config, name, shift, start if stamp is None else stamp))
    return calendar.to_ical()


def _calendar(title: str) -> icalendar.Calendar:
    calendar = icalendar.Calendar()
    calendar.add("prodid", _PRODID)
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("x-wr-calname", title)
    return calendar


def _event(config, schedule: str, shift: Shift, stamp: float) -> icalendar.Event:
    event = icalendar.Event()
    identity = f"{schedule}\0{shift.person}\0{shift.start:.3f}\0{shift.end:.3f}"
    event.add("uid", hashlib.sha256(identity.encode()).hexdigest()[:32] + "@vigil")
    event.add("dtstamp", _utc(stamp))
    event.add("dtstart", _utc(shift.start))
    event.add("dtend", _utc(shift.end))
    event.add("summary", f"On call: {person_name(config, shift.person)} ({schedule})")
    event.add("categories", [schedule])
    event.add("description", f"schedule {schedule}, {shift.source}")
    email = getattr((getattr(config, "people", None) or {}).get(shift.person), "email", None)
    if email:
        event.add("attendee", f"mailto:{email}", parameters={"CN": person_name(config, shift.person)})
    return event


def _utc(at: float) -> datetime:
    return datetime.fromtimestamp(at, timezone.utc)


# --- import ----------------------------------------------------------------------------------------


def overrides_from_ics(source: str | Path | bytes, people: dict) -> list[Override]:
    """Overrides from the events of an iCalendar file (a path, or its bytes); `people` is the file's
    `people:` (key → Person with `.name`, `.email`). OverridesIcsError lists every problem."""
    name = "<ics>" if isinstance(source, bytes) else str(source)
    try:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        calendar = icalendar.Calendar.from_ical(data)
        events = list(recurring_ical_events.of(calendar).between(_IMPORT_SINCE, _IMPORT_UNTIL))
    except OSError as exc:
        raise OverridesIcsError([f"{name}: cannot read the overrides calendar: {exc.strerror or exc}"]) from None
    except (ValueError, TypeError, KeyError, recurring_ical_events.InvalidCalendar) as exc:
        raise OverridesIcsError([f"{name}: not a valid iCalendar file: {exc}"]) from None
    overrides, problems = [], []
    for event in sorted(events, key=_moment_key):
        person, problem = _person_of(event, people)
        if problem:
            problems.append(f"{name}: event {_label(event)}: {problem}")
            continue
        start, end = _moment(event.get("DTSTART")), _moment(event.get("DTEND")) if event.get("DTEND") else None
        if start is None or end is None or _as_utc(end) <= _as_utc(start):
            problems.append(f"{name}: event {_label(event)}: needs a start and a later end")
            continue
        overrides.append(Override(person=person, start=start, end=end))
    if problems:
        raise OverridesIcsError(list(dict.fromkeys(problems)))
    return overrides


def _person_of(event, people: dict) -> tuple[str | None, str | None]:
    attendees = event.get("ATTENDEE")
    attendees = attendees if isinstance(attendees, list) else [attendees] if attendees else []
    mails = {str(value).removeprefix("mailto:").removeprefix("MAILTO:").strip().casefold() for value in attendees}
    by_mail = sorted(key for key, person in people.items()
                     if getattr(person, "email", None) and person.email.casefold() in mails)
    if len(by_mail) > 1:
        return None, f"its attendees are several people ({', '.join(by_mail)}); an override is one person"
    if by_mail:
        return by_mail[0], None
    summary = str(event.get("SUMMARY", "")).strip().casefold()
    by_name = sorted(key for key, person in people.items()
                     if summary and summary in {key.casefold(), (getattr(person, "name", None) or key).casefold()})
    if len(by_name) == 1:
        return by_name[0], None
    return None, ("matches no person: give it an ATTENDEE mailto: a person's email, "
                  "or a SUMMARY that is a person's key or name")


def _label(event) -> str:
    uid, summary = event.get("UID"), event.get("SUMMARY")
    parts = [f"UID {str(uid)!r}" if uid else None, f"summary {str(summary)!r}" if summary else None]
    return " ".join(part for part in parts if part) or "(no UID, no summary)"


def _moment(prop) -> datetime | None:
    """A DTSTART/DTEND as a datetime: all-day dates are local midnight; floating times stay naive."""
    value = getattr(prop, "dt", None)
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    return None


def _as_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _moment_key(event) -> float:
    moment = _moment(event.get("DTSTART"))
    return _as_utc(moment).timestamp() if moment else 0.0


def resolve_overrides_ics(config, base_dir: str | Path):
    """`config` with each schedule's `overrides_ics` file (relative to `base_dir`, the on-call file's
    folder) read and its events added after the schedule's own overrides (so they win where they
    overlap). OverridesIcsError lists every problem of every file."""
    people = getattr(config, "people", None) or {}
    updated, located = {}, []
    for name, schedule in (getattr(config, "schedules", None) or {}).items():
        if schedule.overrides_ics is None:
            continue
        try:
            imported = overrides_from_ics(Path(base_dir) / schedule.overrides_ics, people)
        except OverridesIcsError as exc:
            loc = ("schedules", name, "overrides_ics")
            located += [(loc, f"schedules.{name}.overrides_ics: {problem}") for problem in exc.problems]
            continue
        updated[name] = schedule.model_copy(update={"overrides": schedule.overrides + tuple(imported)})
    if located:
        raise OverridesIcsError([message for _, message in located], located)
    if not updated:
        return config
    return config.model_copy(update={"schedules": {**config.schedules, **updated}})
