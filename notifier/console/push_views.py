"""Pages on this device: the console as an installable web app, and Web Push turned on from it.

- `GET /console/manifest.webmanifest` and `GET /console/sw.js` (no login: browsers fetch them without
  the session): the web app's manifest and its service worker (`static/sw.js`), which shows each pushed
  page and, on a tap, opens its incident (Acknowledge first).
- `GET /console/push`: the logged-in person's subscribed browsers, a button that subscribes this one
  (`static/push.js`: notification permission, `pushManager.subscribe` with this notifier's VAPID key),
  a test page and a remove button per browser.
- `POST /console/push/subscribe` (JSON `PushSubscription.toJSON()` plus `device`, the `X-CSRF-Token`
  header): stores the subscription for the person; 422 naming what is wrong otherwise.
- `POST /console/push/test`, `POST /console/push/remove` (forms).

The pages reach a browser when one of the person's contacts is `push: true` (docs/oncall.md, Web Push).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from vigil.common.json_body import BodyRejected, check_plain_json
from vigil.notifier.console.auth import CheckedForm, ConsoleUser, ScriptUser, TOKEN_USER
from vigil.notifier.console.render import render
from vigil.notifier.settings import is_loopback

router = APIRouter(prefix="/console", include_in_schema=False)
STATIC = Path(__file__).parent / "static"
MAX_SUBSCRIPTION_BYTES = 8192
MANIFEST = {
    "name": "vigil on-call console", "short_name": "vigil", "id": "/console/", "start_url": "/console/incidents",
    "scope": "/console/", "display": "standalone", "background_color": "#ffffff", "theme_color": "#b3261e",
    "description": "Incidents, pages and schedules of the GPU fleet's on-call",
    "icons": [{"src": f"/console/static/icon-{size}.png", "sizes": f"{size}x{size}", "type": "image/png",
               "purpose": "any"} for size in (192, 512)],
}


@router.get("/manifest.webmanifest")
async def manifest() -> Response:
    return Response(json.dumps(MANIFEST), media_type="application/manifest+json")


@router.get("/sw.js")
async def service_worker() -> Response:
    """Served from /console/ so that its scope is the whole console; never cached stale."""
    return Response((STATIC / "sw.js").read_text(), media_type="text/javascript",
                    headers={"Cache-Control": "no-cache"})


@router.get("/push")
async def push_page(request: Request, user: ConsoleUser, done: str | None = None):
    state = request.app.state
    devices = [] if user == TOKEN_USER else await run_in_threadpool(state.store.push_subscriptions.of_person, user)
    contacts = _push_contacts(state.oncall, user)
    key = state.vapid.application_server_key if state.vapid is not None else None
    return render(request, "push.html", devices=devices, contacts=contacts, key=key, person=user != TOKEN_USER,
                  done=done)


@router.post("/push/subscribe")
async def subscribe(request: Request, user: ScriptUser) -> JSONResponse:
    if user == TOKEN_USER:
        return _refused("log in as a person of the on-call file: the token's login has no pages to push", 403)
    if request.app.state.vapid is None:
        return _refused("Web Push is off on this notifier (start it with --vapid-key)", 409)
    body = await request.body()
    if len(body) > MAX_SUBSCRIPTION_BYTES:
        return _refused(f"a subscription is at most {MAX_SUBSCRIPTION_BYTES} bytes", 413)
    try:
        endpoint, p256dh, auth, device = parse_subscription(body)
    except ValueError as exc:
        return _refused(str(exc), 422)
    state = request.app.state
    added = await run_in_threadpool(state.store.push_subscriptions.add, user, endpoint, p256dh, auth, device,
                                    state.clock())
    return JSONResponse({"id": added.id, "person": user, "device": added.device}, status_code=201)


@router.post("/push/test")
async def send_test(request: Request, user: ConsoleUser, _form: CheckedForm):
    state = request.app.state
    payload = json.dumps({"title": "vigil: test page", "body": f"Pages for {user} reach this device.",
                          "status": "test", "tag": "vigil-test", "url": "/console/push"})
    result = await run_in_threadpool(state.push.deliver, user, payload, False)
    return RedirectResponse(f"/console/push?done={'sent' if result.ok else 'failed'}", status_code=303)


@router.post("/push/remove")
async def remove(request: Request, user: ConsoleUser, form: CheckedForm):
    await run_in_threadpool(request.app.state.store.push_subscriptions.remove, str(form.get("endpoint", "")), user)
    return RedirectResponse("/console/push?done=removed", status_code=303)


def parse_subscription(body: bytes) -> tuple[str, str, str, str]:
    """(endpoint, p256dh, auth, device) of a browser's subscription JSON; ValueError saying what is wrong."""
    try:
        doc = json.loads(body)
        check_plain_json(doc)
    except (ValueError, BodyRejected) as exc:
        raise ValueError(f"the body is not the subscription's JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), dict):
        raise ValueError("expected {endpoint, keys: {p256dh, auth}} (PushSubscription.toJSON())")
    endpoint, keys = doc.get("endpoint"), doc["keys"]
    if not isinstance(endpoint, str) or len(endpoint) > 2000:
        raise ValueError("endpoint: a URL of at most 2000 characters")
    parts = urlsplit(endpoint)
    if not parts.hostname or not (parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname))):
        raise ValueError("endpoint: an https:// URL of a push service (http:// only on loopback)")
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    point, secret = _b64url(p256dh, "keys.p256dh"), _b64url(auth, "keys.auth")
    if len(point) != 65 or point[0] != 4:
        raise ValueError("keys.p256dh: an uncompressed P-256 public key (65 bytes, base64url)")
    if len(secret) != 16:
        raise ValueError("keys.auth: the 16-byte authentication secret (base64url)")
    device = doc.get("device")
    device = device[:300] if isinstance(device, str) and device.strip() else "a browser"
    return endpoint, p256dh, auth, device


def _b64url(value, name: str) -> bytes:
    if not isinstance(value, str) or len(value) > 200:
        raise ValueError(f"{name}: a base64url string")
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"{name}: not base64url") from None


def _push_contacts(oncall, user: str) -> list[str]:
    """The names of `user`'s push contacts in the on-call file."""
    person = oncall.people.get(user)
    return [name for name, contact in person.contacts.items() if contact.kind == "push" and contact.push] if person else []


def _refused(reason: str, status: int) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)
