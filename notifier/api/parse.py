"""Parsing of request bodies, in one place: the Alertmanager webhook and pages arriving in the inbox.

A body that will never be accepted raises `Rejected` (a 4xx with a reason, never a 5xx: Alertmanager
would retry a 5xx forever); `reason` is the label counted in `vigil_notifier_webhook_rejected_total`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from pydantic import ValidationError

from vigil.common.json_body import BodyRejected, decode_json_body
from vigil.notifier.delivery.inbox_sender import PAGE_HEADER
from vigil.notifier.models import WebhookPayload

MAX_ROW_ID = 2**63 - 1  # the largest id SQLite and PostgreSQL (bigint) can hold


class Rejected(Exception):
    def __init__(self, status: int, reason: str, message: str):
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


@dataclass(frozen=True)
class PageArrival:
    """A page that apprise delivered to `POST /api/v1/inbox`."""

    delivery_id: int
    title: str
    body: str


async def webhook_payload(request: Request) -> WebhookPayload:
    """The Alertmanager notification in `request` (version 4), validated."""
    body = await _json_body(request)
    try:
        return WebhookPayload.model_validate(body)
    except ValidationError as exc:
        raise Rejected(422, "invalid_payload", _describe(exc)) from None


async def page_arrival(request: Request) -> PageArrival:
    """An apprise JSON notification, with the outbox delivery id in the `X-Vigil-Page` header."""
    body = await _json_body(request)
    header = request.headers.get(PAGE_HEADER, "").strip()
    if not (header.isascii() and header.isdigit() and 0 < int(header) <= MAX_ROW_ID):
        raise Rejected(422, "invalid_payload",
                       f"the {PAGE_HEADER} header must be an outbox delivery id (1 to {MAX_ROW_ID})")
    delivery_id = int(header)
    message = body.get("message", body.get("body")) if isinstance(body, dict) else None
    if not isinstance(message, str):
        raise Rejected(422, "invalid_payload", "expected an apprise JSON object with `title` and `message`")
    return PageArrival(delivery_id, str(body.get("title") or ""), message)


async def _json_body(request: Request):
    content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise Rejected(415, "unsupported_media_type", f"expected application/json, got {content_type!r}")
    raw = await _limited_body(request, request.app.state.settings.max_body_bytes)
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
