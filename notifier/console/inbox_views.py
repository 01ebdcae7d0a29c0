"""The demo inbox in the console: `GET /console/inbox[?to=PERSON]`, the pages the notifier's own inbox
channel received (`store/inbox.py`, what `GET /api/v1/inbox` lists), newest first, refreshed live
(`GET /console/inbox/rows?…`, the same pages as a fragment, fetched by `static/live.js`). Each page shows who
it went to, on which channel, when, its title and text (its links clickable: the one-click links open,
acknowledge or resolve the incident), and links to the incident's console page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool

from vigil.notifier.console.auth import ConsoleUser
from vigil.notifier.console.render import render
from vigil.oncall.ical import person_name

router = APIRouter(prefix="/console", include_in_schema=False)
SHOWN = 200
REFRESH_S = 5  # the live refresh of the page, seconds
_URL = re.compile(r"https?://[^\s<>\"']+[^\s<>\"'.,;:!?)\]]")


@dataclass(frozen=True)
class InboxPage:
    id: int
    time: str
    recipient: str  # the person's key
    name: str  # their display name
    channel: str
    title: str
    body: Markup  # escaped, its URLs as links
    incident_id: int
    status: str  # firing | resolved
    tier: int | None  # 0-based; None: not a page of an escalation tier


def inbox_pages(listed: list[dict], config, recipient: str | None = None) -> list[InboxPage]:
    """The inbox's pages (oldest first, as the store lists them) newest first, only `recipient`'s if given."""
    return [InboxPage(p["id"], p["time"], p["recipient"], person_name(config, p["recipient"]), p["channel"],
                      p["title"], linked(p["body"]), p["incident_id"], p["status"], p["tier"])
            for p in reversed(listed) if recipient is None or p["recipient"] == recipient]


def linked(text: str) -> Markup:
    """`text` escaped, with each http(s) URL in it a link."""
    parts, cursor = [], 0
    for found in _URL.finditer(text):
        url = found.group(0)
        parts += [escape(text[cursor:found.start()]), Markup('<a href="{0}" rel="noreferrer">{0}</a>').format(url)]
        cursor = found.end()
    parts.append(escape(text[cursor:]))
    return Markup("").join(parts)


@router.get("/inbox")
async def inbox_page(request: Request, _user: ConsoleUser, to: Annotated[str | None, Query(max_length=200)] = None):
    status, problems, pages, recipients = await _pages(request, to or None)
    return render(request, "inbox.html", status=status, pages=pages, recipients=recipients, chosen=to or "",
                  problems=problems, shown=SHOWN, refresh_s=REFRESH_S, query=request.url.query)


@router.get("/inbox/rows")
async def inbox_rows(request: Request, _user: ConsoleUser, to: Annotated[str | None, Query(max_length=200)] = None):
    """The pages alone, an HTML fragment: the page's live refresh (`static/live.js`) swaps it in."""
    status, _problems, pages, _recipients = await _pages(request, to or None)
    return render(request, "inbox_rows.html", status=status, pages=pages)


async def _pages(request: Request, chosen: str | None) -> tuple[int, list[str], list[InboxPage], list[str]]:
    state = request.app.state
    listed = await run_in_threadpool(state.store.inbox.list_pages, SHOWN)
    recipients = sorted({page["recipient"] for page in listed})
    if chosen is not None and chosen not in recipients and chosen not in state.oncall.people:
        return 404, [f"unknown recipient {chosen!r}: no person of that name in the on-call file"], [], recipients
    return 200, [], inbox_pages(listed, state.oncall, chosen), recipients
