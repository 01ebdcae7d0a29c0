"""Signed, expiring one-click links in pages: acknowledge, resolve or open an incident from a phone.

A link carries its own proof, so whoever holds the page can act without logging in:

    token = base64url(JSON {"i": incident, "a": "ack"|"resolve"|"open"|"noisy", "e": expires, "n": nonce,
                            "p": person the page went to (optional)})
            + "." + base64url(HMAC-SHA256(key, first part))
    key   = HMAC-SHA256(webhook token, "vigil one-click links v1")

A page sent by SMS or read out on a phone has 160 characters for everything, so its acknowledge link
has a compact form of the same claims, in binary (no dot):

    token = base64url(incident (unsigned LEB128) | action (1 byte) | expires (4 bytes) | nonce (4 bytes)
                      [| person's length (1 byte) | person (UTF-8)]
                      | the first 8 bytes of HMAC-SHA256(key, those bytes))

about 26 characters, and the person's name. A link names the person its page was sent to, so acting
on it is recorded as theirs (links made before carry nobody: "one-click link"). Forging one means guessing a 64-bit MAC; its 32-bit nonce only tells the uses of
one incident's links apart.

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
ACTIONS = ("ack", "resolve", "open", "noisy")  # new actions go last: a compact link keeps each one's index
DEFAULT_LINK_TTL_S = 24 * 3600.0
MAX_TOKEN_CHARS = 512  # ours are about 130; anything much longer was not made here
_KEY_LABEL = b"vigil one-click links v1"
_NONCE_BYTES = 12
_SHORT_NONCE_BYTES = 4
_SHORT_MAC_BYTES = 8
_MAX_SHORT_PERSON = 64
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
    person: str | None = None  # whom the page carrying it was sent to


def link_key(webhook_token: str) -> bytes:
    """The signing key of the links, derived from the webhook token."""
    return hmac.new(webhook_token.encode(), _KEY_LABEL, hashlib.sha256).digest()


def sign(key: bytes, incident_id: int, action: str, expires_at: float, nonce: str | None = None,
         person: str | None = None) -> str:
    """A token for `action` on `incident_id`, valid until `expires_at`, in a page sent to `person`."""
    if action not in ACTIONS:
        raise ValueError(f"unknown link action {action!r} (one of {', '.join(ACTIONS)})")
    claims = {"i": incident_id, "a": action, "e": int(expires_at), "n": nonce or _new_nonce(),
              **({"p": person} if person else {})}
    payload = _encode(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{payload}.{_encode(_mac(key, payload))}"


def sign_short(key: bytes, incident_id: int, action: str, expires_at: float, person: str | None = None) -> str:
    """The compact token (for SMS and phone pages) for `action` on `incident_id`, valid until `expires_at`,
    in a page sent to `person` (a name over 64 bytes is left out: the link stays short)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown link action {action!r} (one of {', '.join(ACTIONS)})")
    name = (person or "").encode()
    claims = (_leb128(incident_id) + bytes([ACTIONS.index(action)]) + int(expires_at).to_bytes(4, "big")
              + secrets.token_bytes(_SHORT_NONCE_BYTES)
              + (bytes([len(name)]) + name if 0 < len(name) <= _MAX_SHORT_PERSON else b""))
    return _encode(claims + _short_mac(key, claims))


def verify(key: bytes, token: str, now: float) -> Link:
    """The link in `token` (either form); raises `LinkRefused` (403 forged or tampered, 410 expired)."""
    if len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise LinkRefused(403, "This link is not valid: it was not made by this notifier.")
    link = _verified(key, token) if "." in token else _verified_short(key, token)
    if now >= link.expires_at:
        raise LinkRefused(410, "This link has expired; open the incident in vigil (`vigil incidents show "
                               f"{link.incident_id}`) or use a newer page.")
    return link


def page_links(settings, incident_id: int, now: float, ttl_s: float = DEFAULT_LINK_TTL_S,
               person: str | None = None) -> list[str]:
    """The acknowledge, resolve, open and mark-noisy URLs for a page of `incident_id` sent to `person`, under
    the notifier's public URL (`settings.own_url`), signed with the key of `settings.token`, valid for
    `ttl_s`; then the compact acknowledge URL that SMS and phone pages carry (`sign_short`)."""
    key = link_key(settings.token)
    return [*(f"{settings.own_url}{LINK_PATH}{sign(key, incident_id, action, now + ttl_s, person=person)}"
              for action in ACTIONS),
            f"{settings.own_url}{LINK_PATH}{sign_short(key, incident_id, 'ack', now + ttl_s, person)}"]


_FORGED = ("This link is not valid: its signature does not match (it was altered, or made with another "
           "notifier's key).")


def _verified(key: bytes, token: str) -> Link:
    payload, _, signature = token.partition(".")
    given = _decode(signature)
    if given is None or not hmac.compare_digest(given, _mac(key, payload)):
        raise LinkRefused(403, _FORGED)
    link = _claims(_decode(payload))
    if link is None:  # signed by us, yet unreadable: only a change of format could do that
        raise LinkRefused(403, "This link is not valid: its content cannot be read.")
    return link


def _verified_short(key: bytes, token: str) -> Link:
    raw = _decode(token)
    if raw is None or len(raw) <= _SHORT_MAC_BYTES:
        raise LinkRefused(403, "This link is not valid: it was not made by this notifier.")
    claims, given = raw[:-_SHORT_MAC_BYTES], raw[-_SHORT_MAC_BYTES:]
    if not hmac.compare_digest(given, _short_mac(key, claims)):
        raise LinkRefused(403, _FORGED)
    incident_id, rest = _read_leb128(claims)
    fixed = 1 + 4 + _SHORT_NONCE_BYTES
    person = _short_person(rest[fixed:])
    if incident_id is None or len(rest) < fixed or person is None or rest[0] >= len(ACTIONS) or incident_id < 1:
        raise LinkRefused(403, "This link is not valid: its content cannot be read.")
    # the nonce as `link_uses` keys it: the incident's id in it, so two incidents' short nonces never meet
    nonce = f"s{incident_id}:{_encode(rest[5:fixed])}"
    return Link(incident_id, ACTIONS[rest[0]], float(int.from_bytes(rest[1:5], "big")), nonce, person or None)


def _short_person(raw: bytes) -> str | None:
    """The person after a compact token's nonce: "" when none is there, None when unreadable."""
    if not raw:
        return ""
    if raw[0] != len(raw) - 1 or not 0 < raw[0] <= _MAX_SHORT_PERSON:
        return None
    try:
        return raw[1:].decode()
    except UnicodeDecodeError:
        return None


def _short_mac(key: bytes, claims: bytes) -> bytes:
    return hmac.new(key, b"short:" + claims, hashlib.sha256).digest()[:_SHORT_MAC_BYTES]


def _leb128(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _read_leb128(raw: bytes) -> tuple[int | None, bytes]:
    """The number at the start of `raw` and the bytes after it (None: no complete number, or over 64 bits)."""
    number = 0
    for index, byte in enumerate(raw[:10]):
        number |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return (number if number < 2 ** 63 else None), raw[index + 1:]
    return None, b""


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
    incident, action, expires, nonce, person = (claims.get(k) for k in ("i", "a", "e", "n", "p"))
    if (type(incident) is not int or incident < 1 or action not in ACTIONS or type(expires) is not int
            or not isinstance(nonce, str) or not 0 < len(nonce) <= 64
            or not (person is None or isinstance(person, str) and 0 < len(person) <= 200)):
        return None
    return Link(incident, action, float(expires), nonce, person)
