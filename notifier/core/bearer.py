"""The bearer token every `/api/` request carries (`Authorization: Bearer <token>`): the check, made in
constant time, and the refusal. The API's middleware (`api/auth.py`) and the webhook's own entry
(`ingest/webhook.py`) both ask it."""

from __future__ import annotations

import hmac

from starlette.responses import JSONResponse


def authorized(headers: list[tuple[bytes, bytes]], expected: bytes) -> bool:
    """Whether the ASGI `headers` carry the bearer token `expected`."""
    given = b""
    for name, value in headers:
        if name == b"authorization":  # ASGI servers lower-case header names
            given = value
            break
    scheme, _, credentials = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), expected)


def unauthorized() -> JSONResponse:
    """The 401 for a request without the token (it says nothing about which routes exist)."""
    return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                        headers={"WWW-Authenticate": "Bearer"})
