"""Request bodies as they arrive: Alertmanager's notifications (the webhook's and a heartbeat's) and the
checks every JSON body of the notifier gets (media type, size, JSON that can be stored, the model's
validation). The bodies people send (acknowledge, notes, maintenance windows) and pages arriving in the
inbox are `vigil.notifier.api.bodies`, built on the helpers at the end of this module.

A body that will never be accepted raises `Rejected` (a 4xx with a reason, never a 5xx: Alertmanager
would retry a 5xx forever); `reason` is the label counted in `vigil_notifier_webhook_rejected_total`.
"""

from __future__ import annotations

import re

from fastapi import Request
from pydantic import BaseModel, ValidationError

from vigil.common.json_body import BodyRejected, decode_json_body, plain_json_text
from vigil.common.times import ZERO_TIME, parse_time
from vigil.notifier.core.models import WebhookPayload, naive_time
from vigil.notifier.core.rejected import Rejected


async def webhook_payload(request: Request) -> WebhookPayload:
    """The Alertmanager notification in `request` (version 4), validated."""
    _json_content_type(request)
    return webhook_of(await _limited_body(request, request.app.state.settings.max_body_bytes))


def webhook_of(raw: bytes) -> WebhookPayload:
    """The notification in the JSON body `raw`, validated: what `model_of(WebhookPayload, _decoded(raw))`
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
    return _as_received(model_of(WebhookPayload, _decoded(raw)))


# RFC 3339 as Alertmanager writes it: a four-digit year, seconds, any fraction, Z or an offset (not a bare
# number of seconds, which the model's datetime would otherwise take as Unix time)
RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)?")
# the times vigil accepts from a sender: from the Unix epoch to the last moment Prometheus and Alertmanager
# can hold (int64 nanoseconds), so every reader can do arithmetic on them; an end may also be the zero time
EARLIEST, LATEST = 0.0, 9223372036.854775


def _time_problem(field: str, value: str) -> str | None:
    if field == "endsAt" and value == ZERO_TIME:
        return None
    if not RFC3339.fullmatch(value):
        return "not an RFC 3339 time like 2026-11-25T09:00:00Z"
    if naive_time(value):
        return "time has no UTC offset (RFC 3339 ends with Z or ±hh:mm)"
    seconds = parse_time(value)  # None: Alertmanager's zero time, which only an end may be
    if seconds is None or not EARLIEST <= seconds <= LATEST:
        return "time is outside 1970-01-01 to 2262-04-11 (what Prometheus and Alertmanager can hold)"
    return None


def _as_received(payload: WebhookPayload) -> WebhookPayload:
    """`payload`, refused (422) for what Alertmanager never sends and the model lets pass: a time that is
    not RFC 3339 (a bare number), has no UTC offset (firing_key would read it as the host's local time,
    parse_time as UTC) or lies outside the range every reader can compute with, or an empty label name.
    Checked here, on arrival, not in the model, which also re-reads payloads stored before."""
    problems = []
    for index, alert in enumerate(payload.alerts):
        problems += [f"alerts.{index}.{field}: {problem}" for field in ("startsAt", "endsAt")
                     if (problem := _time_problem(field, getattr(alert, field)))]
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


def model_of(model: type[BaseModel], body):
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise Rejected(422, "invalid_payload", _describe(exc)) from None


async def json_body_of(request: Request):
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
