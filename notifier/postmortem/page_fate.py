"""What became of each page of an incident, in words a postmortem's reader can trust (pure).

The outbox keeps one state for every page not sent on purpose, `muted`; the timeline says why. A page
a maintenance window held has a `page_held` event naming its delivery. A firing page is muted when its
incident was acknowledged or resolved by the time it was due (the SMS a minute after the call); a
resolved page when the firing page to that contact never reached it (nobody heard of the start there,
so nobody hears of the end). Input: the incident API's `pages` and `timeline` (times as RFC 3339).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

# what each timeline event makes of the incident's state (the rest leave it as it was)
_STATE_AFTER = {"acknowledged": "acknowledged", "resolved": "resolved", "reopened": "triggered",
                "escalated": "triggered", "ack_expired": "triggered"}
SAME_MOMENT_S = 0.0015  # a page and its page_queued event carry the same time (to the API's milliseconds)


def page_results(pages: list[dict], events: list[dict], incident_resolved: bool,
                 parse_time: Callable[[str | None], float | None]) -> list[str]:
    """What became of each page (in the order of `pages`): `sent`, `failed`, `pending`, `superseded`, `digested`,
    `held: maintenance window N`, `not sent: acknowledged` / `resolved` / `firing page never reached it`,
    or `not sent yet: due HH:MM:SS` (still waiting in the outbox after the incident resolved)."""
    held = {e["detail"].get("delivery"): e["detail"] for e in events if e["kind"] == "page_held"}
    due = due_times(pages, events, parse_time)
    results = []
    for index, page in enumerate(pages):
        state = page.get("state") or "pending"
        if state == "pending" and incident_resolved:  # may still go out (the SMS a minute after the call)
            when = due.get(index)
            state = "not sent yet" + ("" if when is None else
                                      f": due {datetime.fromtimestamp(when, tz=timezone.utc):%H:%M:%S}")
        elif state == "muted":
            state = _muted(page, held.get(page.get("id")), due.get(index) or parse_time(page.get("created_at")),
                           events, parse_time)
        results.append(state)
    return results


def unsent_fates(pages: list[dict], events: list[dict], results: list[str], parse_time) -> dict[int, str]:
    """Why each queued page never went out, keyed by the index in `events` of its `page_queued` event
    (`results`: `page_results` of `pages`); pages sent, waiting or folded into a digest are left out."""
    return {event: results[page] for event, page in queued_events(pages, events, parse_time).items()
            if results[page] not in ("sent", "pending", "digested")}


def due_times(pages: list[dict], events: list[dict], parse_time) -> dict[int, float]:
    """When each page was due to go out (index in `pages` -> Unix seconds): its `page_queued` event's time
    plus the event's `due_in_s` (a fallback channel a minute after the call), for the pages one queued."""
    return {page: parse_time(events[e]["at"]) + float(events[e]["detail"].get("due_in_s") or 0)
            for e, page in queued_events(pages, events, parse_time).items()}


def queued_events(pages: list[dict], events: list[dict], parse_time) -> dict[int, int]:
    """The index in `events` of each `page_queued` event -> the index in `pages` of the page it queued:
    the same person, contact, status and tier, queued at the same moment (one page each)."""
    unmatched = list(enumerate(pages))
    found = {}
    for index, event in enumerate(events):
        if event["kind"] != "page_queued":
            continue
        d, at = event["detail"], parse_time(event["at"])
        page = next(((i, p) for i, p in unmatched if (p.get("person"), p.get("contact"), p.get("status"), p.get("tier"))
                     == (d.get("person"), d.get("contact"), d.get("status"), d.get("tier"))
                     and abs((parse_time(p.get("created_at")) or 0) - at) < SAME_MOMENT_S), None)
        if page is not None:
            unmatched.remove(page)
            found[index] = page[0]
    return found


def _muted(page: dict, held: dict | None, due: float | None, events: list[dict], parse_time) -> str:
    if held is not None:
        window = held.get("window")
        return f"held: {held.get('reason') or 'maintenance'} " + (f"window {window}" if isinstance(window, int)
                                                                  else f"({window})")
    if page.get("status") == "resolved":
        return "not sent: firing page never reached it"
    state = "triggered"
    for event in events:  # the incident's state when the page was due ...
        if due is not None and parse_time(event["at"]) > due:
            break
        state = _STATE_AFTER.get(event["kind"], state)
    if state == "triggered":  # ... or the change that came before the worker took it up
        state = next((e["kind"] for e in events if e["kind"] in ("acknowledged", "resolved")
                      and (due is None or parse_time(e["at"]) > due)), "triggered")
    return f"not sent: {state}" if state != "triggered" else "not sent"
