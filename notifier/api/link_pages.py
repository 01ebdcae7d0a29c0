"""The small HTML pages the one-click links answer with: built from escaped values, no templates, no
scripts, no outside resources; readable on a phone."""

from __future__ import annotations

from html import escape

from fastapi.responses import HTMLResponse

VERBS = {"ack": ("Acknowledge", "acknowledged"), "resolve": ("Resolve", "resolved"), "noisy": ("Mark", "marked")}
# a `noisy` link's two buttons: the verdict goes in the POST's query (`?verdict=`), no form body to parse
NOISE_BUTTONS = (("noisy", "It should not have paged (noisy)"), ("not_actionable", "There was nothing to do (not actionable)"))
SHOWN_EVENTS = 30
# not cached, not framed (no clickjacking of the button), no referrer carrying the link elsewhere
HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                      "frame-ancestors 'none'"}
_STYLE = "body{font-family:sans-serif;max-width:40em;margin:1em auto;padding:0 1em}button{font-size:1.3em;padding:.5em 1em}"


def action_page(incident: dict, action: str) -> HTMLResponse:
    """The incident, and a button that POSTs the link (GET never acts)."""
    verb = VERBS[action][0]
    if _nothing_to_do(incident, action):
        return _html(200, f"Incident #{incident['id']}", _summary(incident) +
                     _para(f"Nothing to do: the incident is {incident['state']} already."))
    if action == "noisy":
        buttons = "".join(f'<form method="post" action="?verdict={value}"><button type="submit">{escape(text)}'
                          "</button></form>" for value, text in NOISE_BUTTONS)
        return _html(200, f"Was the page of incident #{incident['id']} noisy?", _summary(incident) + buttons)
    button = (f'<form method="post"><button type="submit">{escape(verb)} incident #{incident["id"]}</button>'
              "</form>")
    return _html(200, f"{verb} incident #{incident['id']}?", _summary(incident) + button)


def done_page(incident: dict, action: str, verdict: str | None = None) -> HTMLResponse:
    said = f" {verdict.replace('_', ' ')}" if verdict else ""
    return _html(200, f"Incident #{incident['id']} {VERBS[action][1]}{said}", _summary(incident))


def incident_page(incident: dict, timeline: list[dict]) -> HTMLResponse:
    """The incident, read-only: what an `open` link shows."""
    labels = "".join(f"<li>{escape(key)}={escape(str(value))}</li>" for key, value in sorted(incident["labels"].items()))
    events = "".join(f"<li>{escape(str(e['at']))} {escape(e['kind'])}"
                     f"{' by ' + escape(e['actor']) if e.get('actor') else ''}</li>"
                     for e in timeline[-SHOWN_EVENTS:])
    return _html(200, f"Incident #{incident['id']}", _summary(incident) + f"<h2>Labels</h2><ul>{labels}</ul>"
                 f"<h2>Timeline</h2><ul>{events}</ul>")


def refusal_page(status: int, sentence: str, incident: dict | None = None) -> HTMLResponse:
    return _html(status, "This link cannot be used", _para(sentence) + (_summary(incident) if incident else ""))


def _nothing_to_do(incident: dict, action: str) -> bool:
    if action == "noisy":
        return False  # a page is judged in any state
    return incident["state"] == "resolved" or (action == "ack" and incident["state"] == "acknowledged")


def _summary(incident: dict) -> str:
    facts = [("State", incident.get("state")), ("Priority", incident.get("priority")),
             ("Opened", incident.get("opened_at")), ("Acknowledged by", incident.get("acknowledged_by")),
             ("Resolved by", incident.get("resolved_by"))]
    rows = "".join(f"<li>{escape(name)}: {escape(str(value))}</li>" for name, value in facts if value)
    console = (f'<p><a href="{console_incident_path(incident["id"])}">Open incident #{incident["id"]} in the '
               f'console</a> (log in to work on it there)</p>')
    return f"{_para(incident.get('title') or '')}<ul>{rows}</ul>{console}"


def console_incident_path(incident_id: int) -> str:
    """The incident's page in the web console (`notifier/console/incidents.py`)."""
    return f"/console/incidents/{int(incident_id)}"


def _para(text: str) -> str:
    return f"<p>{escape(text)}</p>"


def _html(status: int, title: str, body: str) -> HTMLResponse:
    page = (f'<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width,initial-scale=1"><title>{escape(title)}</title><style>{_STYLE}</style>'
            f"</head><body><h1>{escape(title)}</h1>{body}</body></html>")
    return HTMLResponse(page, status_code=status, headers=HEADERS)
