"""Parsing of request bodies, in one place: the Alertmanager webhook, pages arriving in the inbox, and
what people send to work incidents (acknowledge, resolve, escalate, notes) and maintenance windows.

A body that will never be accepted raises `Rejected` (a 4xx with a reason, never a 5xx: Alertmanager
would retry a 5xx forever); `reason` is the label counted in `vigil_notifier_webhook_rejected_total`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Request
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from vigil.common.click_types import MAX_ROW_ID
from vigil.common.durations import parse_duration
from vigil.common.json_body import BodyRejected, decode_json_body, plain_json_text
from vigil.notifier.delivery.channels import PAGE_HEADER
from vigil.notifier.models import WebhookPayload, naive_time
from vigil.notifier.rejected import Rejected
from vigil.common.times import LAST, rfc3339


@dataclass(frozen=True)
class PageArrival:
    """A page that apprise delivered to `POST /api/v1/inbox`."""

    delivery_id: int
    title: str
    body: str


async def webhook_payload(request: Request) -> WebhookPayload:
    """The Alertmanager notification in `request` (version 4), validated."""
    _json_content_type(request)
    return webhook_of(await _limited_body(request, request.app.state.settings.max_body_bytes))


def webhook_of(raw: bytes) -> WebhookPayload:
    """The notification in the JSON body `raw`, validated: what `_model(WebhookPayload, _decoded(raw))`
    gives or raises, for less CPU on most bodies. pydantic parses the text itself (a third of the cost
    of `json.loads` and validating the objects it made) when the text needs none of `decode_json_body`'s
    checks and holds nothing nested below the model's own fields (so it cannot be too deep); any other
    body, and any body pydantic refuses, goes the long way, which says what is wrong as it always did."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and plain_json_text(text):
        try:
            payload = WebhookPayload.model_validate_json(text)
        except ValidationError:
            pass
        else:
            if not _nested_extras(payload):
                return _as_received(payload)
    return _as_received(_model(WebhookPayload, _decoded(raw)))


def _as_received(payload: WebhookPayload) -> WebhookPayload:
    """`payload`, refused (422) for what Alertmanager never sends and the model lets pass: a time without a
    UTC offset (firing_key would read it as the host's local time, parse_time as UTC) or an empty label
    name. Checked here, on arrival, not in the model, which also re-reads payloads stored before."""
    problems = []
    for index, alert in enumerate(payload.alerts):
        problems += [f"alerts.{index}.{field}: time has no UTC offset (RFC 3339 ends with Z or ±hh:mm)"
                     for field in ("startsAt", "endsAt") if naive_time(getattr(alert, field))]
        if "" in alert.labels:
            problems.append(f"alerts.{index}.labels: a label name is empty")
    if problems:
        raise Rejected(422, "invalid_payload", "; ".join(problems))
    return payload


def _nested_extras(payload: WebhookPayload) -> bool:
    """Does an unknown field (of the notification or of an alert) hold an object or a list?"""
    for model in (payload, *payload.alerts):
        if model.model_extra and any(isinstance(value, (dict, list)) for value in model.model_extra.values()):
            return True
    return False


async def heartbeat_body(request: Request) -> WebhookPayload | None:
    """A heartbeat's body: an Alertmanager notification (validated like the webhook's), or None when
    the body is empty (a dead-man's switch that only posts)."""
    raw = await _limited_body(request, request.app.state.settings.max_body_bytes)
    if not raw.strip():
        return None
    _json_content_type(request)
    return webhook_of(raw)


async def page_arrival(request: Request) -> PageArrival:
    """An apprise JSON notification, with the outbox delivery id in the `X-Vigil-Page` header."""
    body = await _json_body(request)
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
    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=10_000)]


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
    return _model(ActorBody, await _json_body(request))


async def note_body(request: Request) -> NoteBody:
    return _model(NoteBody, await _json_body(request))


async def maintenance_body(request: Request, now: float) -> NewWindow:
    """The window asked for, its times checked against `now`: it must end after it starts, in the future."""
    return new_window(await _json_body(request), now)


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
    body = _model(MaintenanceBody, data)
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


def _model(model: type[BaseModel], body):
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise Rejected(422, "invalid_payload", _describe(exc)) from None


async def _json_body(request: Request):
    _json_content_type(request)
    return _decoded(await _limited_body(request, request.app.state.settings.max_body_bytes))


def _json_content_type(request: Request) -> None:
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise Rejected(415, "unsupported_media_type", f"expected application/json, got {content_type!r}")


def _decoded(raw: bytes):
    try:
        return decode_json_body(raw)
    except BodyRejected as exc:
        raise Rejected(400, exc.reason, str(exc)) from None


async def _limited_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed `limit` bytes (header or stream)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Rejected(413, "too_large", f"body of {int(declared)} bytes exceeds the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Rejected(413, "too_large", f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _describe(exc: ValidationError) -> str:
    """Pydantic's errors as one line: `field.path: message; …` (at most five)."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
