"""The one-click links of pages, `GET /l/{token}` and `POST /l/{token}`: outside `/api/`, no bearer
token (the signature is the credential, `vigil.notifier.links`); answers are small HTML pages for a
phone's browser.

An `open` link takes someone logged in to the web console to the incident's console page (303); anyone
else sees the incident read-only. Every link page links to the console's incident page too.

GET never acts, so a mail scanner or a link preview that fetches the URL changes nothing: it shows the
incident and, for an acknowledge or resolve link, a button that POSTs; a mark-noisy link shows two, noisy
and not actionable (the verdict in the POST's query). The POST acts once (the link's
nonce goes into `link_uses`). Refusals say why in a sentence: forged 403, expired 410, used already or
impossible now 409, an `open` link posted 400, the incident gone 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, SettingsDep, StoreDep
from vigil.notifier.api.link_pages import (UTC, action_page, console_incident_path, done_page, incident_page,
                                           refusal_page)
from vigil.notifier.api.openapi import LINK_RESPONSES
from vigil.notifier.console_session import session_user
from vigil.notifier.core.incidents import NOISE_VERDICTS  # what a `noisy` link's POST may say (`?verdict=`)
from vigil.notifier.engine import actions
from vigil.notifier.links import LINK_PATH, Link, LinkRefused, link_key, verify
from vigil.notifier.store.link_uses import LinkUses
from vigil.common.times import rfc3339
from vigil.oncall.plan import person_zone
from vigil.oncall.schedule_model import zone_named

router = APIRouter()
LINK_ACTOR = "one-click link"  # who acted through a link that names nobody (made before links named people)
_DO = {"ack": actions.acknowledge, "resolve": actions.resolve}


@router.get(LINK_PATH + "{token}", response_class=HTMLResponse, responses=LINK_RESPONSES)
async def show_link(request: Request, token: str, store: StoreDep, settings: SettingsDep, clock: ClockDep):
    now = clock()
    link = _verified(settings.token, token, now)
    if isinstance(link, HTMLResponse):
        return link
    incident = await run_in_threadpool(store.notifications.incident, link.incident_id)
    if incident is None:
        return refusal_page(404, f"Incident #{link.incident_id} does not exist (any more) on this notifier.")
    zone = _zone_of(request, link)
    if link.action == "open":
        if await session_user(request) is not None:
            return RedirectResponse(console_incident_path(link.incident_id), status_code=303)
        timeline = await run_in_threadpool(store.timeline.of, link.incident_id)
        return incident_page(incident, timeline, zone)
    used_at = await run_in_threadpool(LinkUses(store.engine).used_at, link.nonce)
    if used_at is not None:
        return refusal_page(409, _used_sentence(used_at), incident, zone)
    return action_page(incident, link.action, zone)


def _zone_of(request: Request, link: Link):
    """The time zone of the person the link's page went to (the on-call file's), else the file's."""
    oncall = request.app.state.oncall
    try:
        return person_zone(oncall, link.person) if link.person in oncall.people else zone_named(oncall.timezone)
    except ValueError:
        return UTC


@router.post(LINK_PATH + "{token}", response_class=HTMLResponse, responses=LINK_RESPONSES)
async def use_link(request: Request, token: str, store: StoreDep, settings: SettingsDep, clock: ClockDep):
    now = clock()
    link = _verified(settings.token, token, now)
    if isinstance(link, HTMLResponse):
        return link
    if link.action == "open":
        return refusal_page(400, "This link only shows the incident; it cannot change it.")
    verdict = request.query_params.get("verdict", "noisy") if link.action == "noisy" else None
    if verdict is not None and verdict not in NOISE_VERDICTS:
        return refusal_page(400, f"A page is marked {' or '.join(NOISE_VERDICTS)}, not {verdict[:40]!r}.")
    return await run_in_threadpool(_act_once, store, link, now, verdict, _zone_of(request, link))


def _verified(webhook_token: str, token: str, now: float) -> Link | HTMLResponse:
    """The link in `token`, or the page refusing it (forged, expired)."""
    try:
        return verify(link_key(webhook_token), token, now)
    except LinkRefused as refused:
        return refusal_page(refused.status, str(refused))


def _act_once(store, link: Link, now: float, verdict: str | None = None, zone=UTC) -> HTMLResponse:
    uses = LinkUses(store.engine)
    if not uses.claim(link.nonce, link.incident_id, link.action, now):
        return refusal_page(409, _used_sentence(uses.used_at(link.nonce)), store.notifications.incident(link.incident_id))
    actor = link.person or LINK_ACTOR  # the person the page carrying the link was sent to
    try:
        if link.action == "noisy":
            incident = actions.mark(store, link.incident_id, actor, verdict or "noisy", now)
        else:
            incident = _DO[link.action](store, link.incident_id, actor, now)
    except actions.IncidentNotFound:
        uses.release(link.nonce)
        return refusal_page(404, f"Incident #{link.incident_id} does not exist (any more) on this notifier.")
    except actions.TransitionRefused as refused:
        uses.release(link.nonce)  # nothing happened: the link may still serve later (after a re-page)
        return refusal_page(409, f"Nothing was done: {refused.reason}.", store.notifications.incident(link.incident_id))
    except BaseException:
        uses.release(link.nonce)
        raise
    return done_page(incident, link.action, verdict, zone)


def _used_sentence(used_at: float | None) -> str:
    return f"This link has already been used (at {rfc3339(used_at)}); each link acts only once."
