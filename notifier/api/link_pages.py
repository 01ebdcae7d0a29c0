"""The small HTML pages the one-click links answer with: built from escaped values, no templates, no
scripts, nothing from outside this notifier; the console's look (its stylesheet, badges and timeline),
its words for events, times in the zone of the person the page went to (said), a thumb-sized button."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape
from zoneinfo import ZoneInfo

from fastapi.responses import HTMLResponse

from vigil.common.times import parse_time
from vigil.notifier.incident_text import event_text

VERBS = {"ack": ("Acknowledge", "acknowledged"), "resolve": ("Resolve", "resolved"), "noisy": ("Mark", "marked")}
# a `noisy` link's two buttons: the verdict goes in the POST's query (`?verdict=`), no form body to parse
NOISE_BUTTONS = (("noisy", "It should not have paged (noisy)"), ("not_actionable", "There was nothing to do (not actionable)"))
SHOWN_EVENTS = 30
# not cached, not framed (no clickjacking of the button), no referrer carrying the link elsewhere
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; form-action 'self'; "
                                      "frame-ancestors 'none'"}
STYLESHEET = "/console/static/console.css"  # the console's, served without a login
_STYLE = "main{max-width:40em;overflow-wrap:anywhere}form{margin:8px 0}form button{min-height:48px;font-size:16px;width:100%}"
UTC = ZoneInfo("UTC")


def action_page(incident: dict, action: str, zone: ZoneInfo = UTC) -> HTMLResponse:
    """The incident, and a button that POSTs the link (GET never acts)."""
    verb = VERBS[action][0]
    if _nothing_to_do(incident, action):
        return _html(200, f"Incident #{incident['id']}", _summary(incident, zone) +
                     _para(f"Nothing to do: the incident is {incident['state']} already."))
    if action == "noisy":
        buttons = "".join(f'<form method="post" action="?verdict={value}"><button type="submit">{escape(text)}'
                          "</button></form>" for value, text in NOISE_BUTTONS)
        return _html(200, f"Was the page of incident #{incident['id']} noisy?", _summary(incident, zone) + buttons)
    button = (f'<form method="post"><button class="primary" type="submit">{escape(verb)} incident '
              f'#{incident["id"]}</button></form>')
    return _html(200, f"{verb} incident #{incident['id']}?", button + _summary(incident, zone))


def done_page(incident: dict, action: str, verdict: str | None = None, zone: ZoneInfo = UTC) -> HTMLResponse:
    said = f" {verdict.replace('_', ' ')}" if verdict else ""
    return _html(200, f"Incident #{incident['id']} {VERBS[action][1]}{said}", _summary(incident, zone))


def incident_page(incident: dict, timeline: list[dict], zone: ZoneInfo = UTC) -> HTMLResponse:
    """The incident, read-only: what an `open` link shows, its timeline in the console's words."""
    labels = "".join(f"<li>{escape(key)}={escape(str(value))}</li>" for key, value in sorted(incident["labels"].items()))
    events = "".join(f'<li class="ev-{escape(e["kind"])}"><span class="mono muted">{escape(_time(e["at"], zone))}'
                     f"</span> <strong>{escape(e['kind'].replace('_', ' '))}</strong>"
                     f"{' by ' + escape(e['actor']) if e.get('actor') else ''}{_event_words(e)}</li>"
                     for e in timeline[-SHOWN_EVENTS:])
    return _html(200, f"Incident #{incident['id']}", _summary(incident, zone) + '<h2>Labels</h2><ul class="labels">'
                 f'{labels}</ul><h2>Timeline</h2><ol class="timeline">{events}</ol>')


def refusal_page(status: int, sentence: str, incident: dict | None = None, zone: ZoneInfo = UTC) -> HTMLResponse:
    return _html(status, "This link cannot be used", _para(sentence) + (_summary(incident, zone) if incident else ""))


def _event_words(event: dict) -> str:
    if event["kind"] == "note":
        return f'<div class="note">{escape(str((event.get("detail") or {}).get("text", "")))}</div>'
    text = event_text(event)
    return f' <span class="muted">{escape(text)}</span>' if text else ""


def _time(moment, zone: ZoneInfo) -> str:
    """`2026-11-23 21:50 IST`: the console's form, in the zone of the person the page went to."""
    seconds = moment if isinstance(moment, (int, float)) else parse_time(str(moment)) if moment else None
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, timezone.utc).astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def _nothing_to_do(incident: dict, action: str) -> bool:
    if action == "noisy":
        return False  # a page is judged in any state
    return incident["state"] == "resolved" or (action == "ack" and incident["state"] == "acknowledged")


def _summary(incident: dict, zone: ZoneInfo = UTC) -> str:
    priority, state = incident.get("priority"), incident.get("state") or ""
    badges = (f'<p><span class="badge prio prio-{escape(priority or "none")}">{escape(priority or "–")}</span> '
              f'<span class="badge state-{escape(state)}">{escape(state)}</span></p>')
    facts = [("Opened", _time(incident.get("opened_at"), zone)), ("Acknowledged by", incident.get("acknowledged_by")),
             ("Resolved by", incident.get("resolved_by"))]
    rows = "".join(f"<dt>{escape(name)}</dt><dd>{escape(str(value))}</dd>" for name, value in facts if value)
    console = (f'<p><a href="{console_incident_path(incident["id"])}">Open incident #{incident["id"]} in the '
               f'console</a> (log in to work on it there)</p>')
    return f'{badges}{_para(incident.get("title") or "")}<dl class="facts">{rows}</dl>{console}'


def console_incident_path(incident_id: int) -> str:
    """The incident's page in the web console (`notifier/console/incidents.py`)."""
    return f"/console/incidents/{int(incident_id)}"


def _para(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def _html(status: int, title: str, body: str) -> HTMLResponse:
    page = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width,initial-scale=1"><title>{escape(title)}</title>'
            f'<link rel="stylesheet" href="{STYLESHEET}"><style>{_STYLE}</style></head>'
            f'<body><header class="top"><span class="brand">vigil</span></header><main><h1>{escape(title)}</h1>'
            f"{body}</main></body></html>")
    return HTMLResponse(page, status_code=status, headers=HEADERS)
