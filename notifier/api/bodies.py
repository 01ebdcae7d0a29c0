"""The bodies people send to the API (acknowledge, resolve, escalate, notes, maintenance windows) and
the pages apprise delivers to the inbox, parsed with the checks every body gets
(`vigil.notifier.ingest.parse`). A body that will never be accepted raises `Rejected` (a 4xx with a
reason)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Request
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, field_validator

from vigil.common.click_types import MAX_ROW_ID
from vigil.common.durations import parse_duration
from vigil.common.times import LAST, rfc3339
from vigil.notifier.core.incidents import MAX_NOTE_CHARS, VERDICTS
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.delivery.channels import PAGE_HEADER
from vigil.notifier.ingest.parse import json_body_of, model_of


@dataclass(frozen=True)
class PageArrival:
    """A page that apprise delivered to `POST /api/v1/inbox`."""

    delivery_id: int
    title: str
    body: str


async def page_arrival(request: Request) -> PageArrival:
    """An apprise JSON notification, with the outbox delivery id in the `X-Vigil-Page` header."""
    body = await json_body_of(request)
    header = request.headers.get(PAGE_HEADER, "").strip()
    if not (header.isascii() and header.isdigit() and 0 < int(header) <= MAX_ROW_ID):
        raise Rejected(422, "invalid_payload",
                       f"the {PAGE_HEADER} header must be an outbox delivery id (1 to {MAX_ROW_ID})")
    delivery_id = int(header)
    message = body.get("message", body.get("body")) if isinstance(body, dict) else None
    title = body.get("title") if isinstance(body, dict) else None
    if not isinstance(message, str) or not isinstance(title, (str, type(None))):
        raise Rejected(422, "invalid_payload", "expected an apprise JSON object with `title` and `message` (text)")
    return PageArrival(delivery_id, title or "", message)


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
LabelName = Annotated[str, StringConstraints(min_length=1, max_length=200)]
LabelValue = Annotated[str, StringConstraints(max_length=1000)]
MAX_WINDOW_S = 366 * 86400.0  # a maintenance window longer than a year is a mistake


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ActorBody(_Body):
    """`POST /api/v1/incidents/{id}/ack|resolve|escalate`: who does it."""

    by: Name


class NoteBody(_Body):
    """`POST /api/v1/incidents/{id}/notes`."""

    by: Name
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NOTE_CHARS)]


class MarkBody(_Body):
    """`POST /api/v1/incidents/{id}/mark`: a person's verdict on the page — `noisy` (it should not have
    paged), `not_actionable` (nothing to do about it), or `actionable` (withdraws an earlier mark)."""

    by: Name
    verdict: Literal[VERDICTS] = "noisy"
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=1000)] | None = None


class MaintenanceBody(_Body):
    """`POST /api/v1/maintenance`: hold pages of alerts whose labels equal every `match` entry, from
    `starts_at` (default: now) until `ends_at`, or for the duration `for` (`2h`, `90m`, seconds)."""

    match: dict[LabelName, LabelValue] = Field(min_length=1, max_length=50)
    starts_at: AwareDatetime | None = None
    ends_at: AwareDatetime | None = None
    for_: str | float | None = Field(default=None, alias="for")
    reason: Annotated[str, StringConstraints(max_length=1000)] | None = None
    by: Name

    @field_validator("for_", mode="before")
    @classmethod
    def _duration(cls, value):
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError("must be a duration: text such as 2h or 90m, or a number of seconds")
        seconds = parse_duration(value)  # ValueError names the accepted forms
        if not 0 < seconds <= MAX_WINDOW_S:
            raise ValueError("must be above zero and at most a year")
        return seconds


@dataclass(frozen=True)
class NewWindow:
    matchers: dict[str, str]
    starts_at: float
    ends_at: float
    reason: str | None
    by: str


async def actor_body(request: Request) -> ActorBody:
    return model_of(ActorBody, await json_body_of(request))


async def mark_body(request: Request) -> MarkBody:
    return model_of(MarkBody, await json_body_of(request))


async def note_body(request: Request) -> NoteBody:
    return model_of(NoteBody, await json_body_of(request))


async def maintenance_body(request: Request, now: float) -> NewWindow:
    """The window asked for, its times checked against `now`: it must end after it starts, in the future."""
    return new_window(await json_body_of(request), now)


def window_body(match: dict[str, str], by: str | None, reason: str | None, starts: float | None,
                ends: float | None, duration) -> dict:
    """The maintenance JSON body (what `new_window` reads): times are epoch seconds, None when not given;
    `duration` is used when `ends` is None. Shared by the CLI and the console's form."""
    body = {"match": match, "by": by, "reason": reason}
    if starts is not None:
        body["starts_at"] = rfc3339(starts)
    if ends is not None:
        body["ends_at"] = rfc3339(ends)
    else:
        body["for"] = duration
    return body


def new_window(data: object, now: float) -> NewWindow:
    """A decoded maintenance body (the API's JSON, or the console's form made into the same shape)
    validated and its times checked against `now`; Rejected (422) saying what is wrong."""
    body = model_of(MaintenanceBody, data)
    if (body.ends_at is None) == (body.for_ is None):
        raise Rejected(422, "invalid_payload", "give exactly one of `ends_at` (a time) and `for` (a duration)")
    try:
        starts = body.starts_at.timestamp() if body.starts_at is not None else now
        ends = body.ends_at.timestamp() if body.ends_at is not None else starts + body.for_
    except (OverflowError, ValueError, OSError):
        raise Rejected(422, "invalid_payload", "a time is outside the years 1 to 9999 once converted to UTC") from None
    if ends <= now:
        raise Rejected(422, "invalid_payload", "the window would be over already: `ends_at` is in the past")
    if ends <= starts:
        raise Rejected(422, "invalid_payload", "`ends_at` must be after `starts_at`")
    if ends - starts > MAX_WINDOW_S:
        raise Rejected(422, "invalid_payload", "a maintenance window lasts at most a year")
    if ends > LAST.timestamp():  # RFC 3339 has four digits for the year
        raise Rejected(422, "invalid_payload", "a maintenance window ends by the end of year 9999 (UTC)")
    return NewWindow(dict(body.match), starts, ends, body.reason, body.by)
