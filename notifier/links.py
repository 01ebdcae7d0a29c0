"""Signed, expiring one-click links in pages: acknowledge, resolve or open an incident from a phone.

A link carries its own proof, so whoever holds the page can act without logging in:

    token = base64url(JSON {"i": incident, "a": "ack"|"resolve"|"open", "e": expires, "n": nonce})
            + "." + base64url(HMAC-SHA256(key, first part))
    key   = HMAC-SHA256(webhook token, "vigil one-click links v1")

The key is derived from the webhook token, so rotating the token revokes every link; the token itself
never appears in a link. `verify` says whether a token is genuine and unexpired; that it is used only
once is the store's `link_uses` (the nonce), checked when the link's POST acts. Pure: no database, no
clock (the time is passed in).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

LINK_PATH = "/l/"  # outside /api/: no bearer token, the signature is the credential
ACTIONS = ("ack", "resolve", "open")
DEFAULT_LINK_TTL_S = 24 * 3600.0
MAX_TOKEN_CHARS = 512  # ours are about 130; anything much longer was not made here
_KEY_LABEL = b"vigil one-click links v1"
_NONCE_BYTES = 12
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


class LinkRefused(Exception):
    """A link that will not act: `status` is the HTTP answer (403 forged, 410 expired), str() says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Link:
    """What a genuine token says."""

    incident_id: int
    action: str  # ack | resolve | open
    expires_at: float  # UNIX seconds
    nonce: str


def link_key(webhook_token: str) -> bytes:
    """The signing key of the links, derived from the webhook token."""
    return hmac.new(webhook_token.encode(), _KEY_LABEL, hashlib.sha256).digest()


def sign(key: bytes, incident_id: int, action: str, expires_at: float, nonce: str | None = None) -> str:
    """A token for `action` on `incident_id`, valid until `expires_at`."""
    if action not in ACTIONS:
        raise ValueError(f"unknown link action {action!r} (one of {', '.join(ACTIONS)})")
    claims = {"i": incident_id, "a": action, "e": int(expires_at), "n": nonce or _new_nonce()}
    payload = _encode(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{payload}.{_encode(_mac(key, payload))}"


def verify(key: bytes, token: str, now: float) -> Link:
    """The link in `token`; raises `LinkRefused` (403 forged or tampered, 410 expired)."""
    payload, dot, signature = token.partition(".")
    if not dot or len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise LinkRefused(403, "This link is not valid: it was not made by this notifier.")
    given = _decode(signature)
    if given is None or not hmac.compare_digest(given, _mac(key, payload)):
        raise LinkRefused(403, "This link is not valid: its signature does not match (it was altered, or "
                               "made with another notifier's key).")
    link = _claims(_decode(payload))
    if link is None:  # signed by us, yet unreadable: only a change of format could do that
        raise LinkRefused(403, "This link is not valid: its content cannot be read.")
    if now >= link.expires_at:
        raise LinkRefused(410, "This link has expired; open the incident in vigil (`vigil incidents show "
                               f"{link.incident_id}`) or use a newer page.")
    return link


def page_links(settings, incident_id: int, now: float, ttl_s: float = DEFAULT_LINK_TTL_S) -> list[str]:
    """The acknowledge, resolve and open URLs for a page of `incident_id`, under the notifier's public
    URL (`settings.own_url`), signed with the key of `settings.token`, valid for `ttl_s`."""
    key = link_key(settings.token)
    return [f"{settings.own_url}{LINK_PATH}{sign(key, incident_id, action, now + ttl_s)}" for action in ACTIONS]


def _new_nonce() -> str:
    return secrets.token_urlsafe(_NONCE_BYTES)


def _mac(key: bytes, payload: str) -> bytes:
    return hmac.new(key, payload.encode(), hashlib.sha256).digest()


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(text: str) -> bytes | None:
    if not _BASE64URL.fullmatch(text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def _claims(raw: bytes | None) -> Link | None:
    try:
        claims = json.loads(raw) if raw is not None else None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(claims, dict):
        return None
    incident, action, expires, nonce = (claims.get(k) for k in ("i", "a", "e", "n"))
    if (type(incident) is not int or incident < 1 or action not in ACTIONS or type(expires) is not int
            or not isinstance(nonce, str) or not 0 < len(nonce) <= 64):
        return None
    return Link(incident, action, float(expires), nonce)
